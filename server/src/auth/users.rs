//! The users created through InfluxQL (`CREATE USER`, `GRANT`, …), kept durably in
//! `<data_dir>/users.json`.
//!
//! The file is small and changes rarely, so every change rewrites it whole
//! ([`crate::durable::replace`]: atomic, durable, mode 0600).
//!
//! Readers take a snapshot (an `Arc`) and never wait for a writer; writers are serialised.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use influxql::ast::Privilege;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use super::secret::PasswordHash;

/// File format version.
const VERSION: u32 = 1;

/// One user as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredUser {
    /// Name.
    pub name: String,
    /// bcrypt hash of the password.
    pub hash: String,
    /// `WITH ALL PRIVILEGES` / `GRANT ALL PRIVILEGES TO`.
    pub admin: bool,
    /// Per database: `READ`, `WRITE`, `ALL PRIVILEGES` or `NO PRIVILEGES` (a revoke keeps
    /// the entry, as InfluxDB 1.x does).
    #[serde(default)]
    pub privileges: BTreeMap<String, String>,
}

impl StoredUser {
    /// The privilege on `db` (`NO PRIVILEGES` without an entry).
    pub fn privilege(&self, db: &str) -> Privilege {
        self.privileges
            .get(db)
            .and_then(|p| Privilege::parse(p))
            .unwrap_or(Privilege::None)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct UsersFile {
    version: u32,
    users: Vec<StoredUser>,
}

/// Why the users file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum UsersFileError {
    /// Reading, writing, syncing or renaming failed.
    #[error("users file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not what chingest writes.
    #[error("users file {path} is not valid: {why}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
}

/// The InfluxQL users, in creation order.
#[derive(Debug)]
pub struct Directory {
    /// `None`: in memory only (handler tests).
    path: Option<PathBuf>,
    current: RwLock<Arc<Vec<StoredUser>>>,
    writer: Mutex<()>,
}

impl Directory {
    /// An empty directory that is not saved anywhere.
    pub fn in_memory() -> Directory {
        Directory {
            path: None,
            current: RwLock::default(),
            writer: Mutex::new(()),
        }
    }

    /// Loads `path` (no file: no users yet).
    pub fn open(path: &Path) -> Result<Directory, UsersFileError> {
        let shown = path.display().to_string();
        let users = match std::fs::read(path) {
            Ok(bytes) => {
                let invalid = |why: String| UsersFileError::Invalid {
                    path: shown.clone(),
                    why,
                };
                let file: UsersFile =
                    serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
                if file.version != VERSION {
                    return Err(invalid(format!("unknown version {}", file.version)));
                }
                for u in &file.users {
                    if u.name.is_empty() || PasswordHash::parse(&u.hash).is_none() {
                        return Err(invalid(format!("user {:?} has no valid hash", u.name)));
                    }
                }
                file.users
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(UsersFileError::Io {
                    path: shown,
                    source,
                })
            }
        };
        Ok(Directory {
            path: Some(path.to_path_buf()),
            current: RwLock::new(Arc::new(users)),
            writer: Mutex::new(()),
        })
    }

    /// The users now.
    pub fn snapshot(&self) -> Arc<Vec<StoredUser>> {
        self.current.read().clone()
    }

    /// Applies `change` to a copy of the users, saves it durably, then makes it current.
    /// Changes are serialised; `change` sees the latest users. Nothing changes when
    /// `change` or the save fails.
    pub fn change<E: From<UsersFileError>>(
        &self,
        change: impl FnOnce(&mut Vec<StoredUser>) -> Result<(), E>,
    ) -> Result<(), E> {
        let _one_writer = self.writer.lock();
        let mut users = (*self.snapshot()).clone();
        change(&mut users)?;
        if let Some(path) = &self.path {
            save(path, &users)?;
        }
        *self.current.write() = Arc::new(users);
        Ok(())
    }
}

fn save(path: &Path, users: &[StoredUser]) -> Result<(), UsersFileError> {
    let body = serde_json::to_vec_pretty(&UsersFile {
        version: VERSION,
        users: users.to_vec(),
    })
    .expect("users serialise");
    crate::durable::replace(path, &body).map_err(|source| UsersFileError::Io {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> StoredUser {
        StoredUser {
            name: name.into(),
            hash: PasswordHash::bcrypt("pw").as_stored(),
            admin: false,
            privileges: BTreeMap::new(),
        }
    }

    #[test]
    fn changes_are_durable_and_a_failed_change_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.json");
        let d = Directory::open(&path).unwrap();
        assert!(d.snapshot().is_empty());
        d.change(|u| {
            u.push(user("a"));
            Ok::<_, UsersFileError>(())
        })
        .unwrap();
        let r: Result<(), UsersFileError> = d.change(|u| {
            u.push(user("b"));
            Err(UsersFileError::Invalid {
                path: String::new(),
                why: "refused".into(),
            })
        });
        assert!(r.is_err());
        assert_eq!(d.snapshot().len(), 1);
        let again = Directory::open(&path).unwrap();
        assert_eq!(*again.snapshot(), vec![user_named(&d, "a")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "only the owner reads the hashes");
        }
        assert!(!path.with_extension("json.tmp").exists());
    }

    fn user_named(d: &Directory, name: &str) -> StoredUser {
        d.snapshot()
            .iter()
            .find(|u| u.name == name)
            .unwrap()
            .clone()
    }

    #[test]
    fn a_damaged_file_is_refused_not_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.json");
        std::fs::write(
            &path,
            b"{\"version\":1,\"users\":[{\"name\":\"x\",\"hash\":\"nope\",\"admin\":true}]}",
        )
        .unwrap();
        let e = Directory::open(&path).unwrap_err().to_string();
        assert!(e.contains("has no valid hash"), "{e}");
        std::fs::write(&path, b"{\"vers").unwrap();
        assert!(Directory::open(&path).is_err());
    }
}
