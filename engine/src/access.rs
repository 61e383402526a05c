//! The engine's own access control, written into the data directory before the
//! engine boots.
//!
//! clickhouse-local reads a `config.xml` from the working directory when one is
//! there, and honours users, roles and grants only from a configuration file.
//! [`crate::Engine::open`] therefore writes two files of its own into the
//! engine's data directory and boots the engine with
//! `--config-file=<data_dir>/chingest-engine.xml` (which replaces any file in
//! the working directory):
//!
//! - `chingest-engine.xml`: only `users_config`, naming the file below;
//! - `chingest-users.xml`: the one user every connection is (`default`: the
//!   embedded engine authenticates every connection as `default`), the role
//!   `chingest_admin` (`GRANT ALL`), its default role, and one role per
//!   [`ReadScope`] (`GRANT SELECT ON <db>.*` for each readable database).
//!
//! Roles exist only if they are in the file at boot (the engine has no writable
//! access storage here), so the roles are keyed by *permission sets*, which the
//! server knows at start (its configured users), not by databases: a database
//! created later is covered by the grants that name it. A connection running a
//! user's SQL sets the role of that user's scope before the statement
//! (`SET ROLE`, session state); the statement itself may not (`SET ROLE` is a
//! CONTROL statement, refused by classification).
//!
//! The files are written (`write_engine_config`) before the first connect,
//! and the boot is checked (`verify_boot`) on it: a configuration that did
//! not apply would leave the engine on its defaults, with no access control.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chdb_rust::connection::Connection;
use chdb_rust::format::OutputFormat;

use crate::quote::quote_ident;

/// Name of the role with every privilege: the flusher's connections, admin SQL
/// and the engine's own bookkeeping run with it.
pub const ADMIN_ROLE: &str = "chingest_admin";

/// The file passed as `--config-file` (in the engine's data directory).
pub const CONFIG_FILE: &str = "chingest-engine.xml";

/// The users file the config names (in the engine's data directory).
pub const USERS_FILE: &str = "chingest-users.xml";

/// What a non-admin may read through SQL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadScope {
    /// Every database (auth off, or a user whose read list is `*`).
    All,
    /// These databases only (possibly none).
    Databases(BTreeSet<String>),
}

impl ReadScope {
    /// A scope from an InfluxDB-style permission list, where `*` means all.
    pub fn from_list<S: AsRef<str>>(list: &[S]) -> ReadScope {
        if list.iter().any(|d| d.as_ref() == "*") {
            ReadScope::All
        } else {
            ReadScope::Databases(list.iter().map(|d| d.as_ref().to_string()).collect())
        }
    }

    /// The grants of this scope, as engine statements.
    fn grants(&self) -> Vec<String> {
        let mut out = match self {
            ReadScope::All => vec!["GRANT SELECT ON *.*".to_string()],
            ReadScope::Databases(dbs) => dbs
                .iter()
                .map(|db| format!("GRANT SELECT ON {}.*", quote_ident(db)))
                .collect(),
        };
        // Table functions (`numbers()`, `view()`) need this grant. It does not
        // let a readonly=1 session create anything, and reading an external
        // source needs that source's own grant (FILE, URL, S3, REMOTE, …),
        // which no reader role has.
        out.push("GRANT CREATE TEMPORARY TABLE ON *.*".to_string());
        out
    }
}

/// The access-control setup the engine boots with: one role per scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineAccess {
    roles: BTreeMap<ReadScope, String>,
}

impl EngineAccess {
    /// Roles for these scopes (duplicates collapse). [`ReadScope::All`] and the
    /// empty scope are always present.
    pub fn new(scopes: impl IntoIterator<Item = ReadScope>) -> EngineAccess {
        let mut all: BTreeSet<ReadScope> = scopes.into_iter().collect();
        all.insert(ReadScope::All);
        all.insert(ReadScope::Databases(BTreeSet::new()));
        let roles = all
            .into_iter()
            .enumerate()
            .map(|(i, s)| (s, format!("chingest_read_{i}")))
            .collect();
        EngineAccess { roles }
    }

    /// The role of `scope`, if the engine booted with one.
    pub fn role(&self, scope: &ReadScope) -> Option<&str> {
        self.roles.get(scope).map(String::as_str)
    }

    /// Every role name, the admin role first.
    pub fn role_names(&self) -> Vec<&str> {
        std::iter::once(ADMIN_ROLE)
            .chain(self.roles.values().map(String::as_str))
            .collect()
    }

    /// `chingest-engine.xml`: the users file, nothing else.
    pub(crate) fn config_xml(&self, users_path: &str) -> String {
        format!(
            "<?xml version=\"1.0\"?>\n<!-- Written by chingest at every start; edits are overwritten. -->\n\
             <clickhouse>\n    <users_config>{}</users_config>\n</clickhouse>\n",
            xml_escape(users_path)
        )
    }

    /// `chingest-users.xml`: the `default` user holds roles only (a direct
    /// grant would add to every role), the admin role by default.
    pub(crate) fn users_xml(&self) -> String {
        let mut roles = String::new();
        let mut role_grants = String::new();
        let mut add_role = |name: &str, grants: &[String]| {
            roles.push_str(&format!("        <{name}>\n            <grants>\n"));
            for g in grants {
                roles.push_str(&format!(
                    "                <query>{}</query>\n",
                    xml_escape(g)
                ));
            }
            roles.push_str(&format!("            </grants>\n        </{name}>\n"));
            role_grants.push_str(&format!("                <query>GRANT {name}</query>\n"));
        };
        add_role(
            ADMIN_ROLE,
            &["GRANT ALL ON *.* WITH GRANT OPTION".to_string()],
        );
        for (scope, name) in &self.roles {
            add_role(name, &scope.grants());
        }
        format!(
            "<?xml version=\"1.0\"?>\n<!-- Written by chingest at every start; edits are overwritten. -->\n\
             <clickhouse>\n    <profiles><default/></profiles>\n    <quotas><default/></quotas>\n\
             \x20   <roles>\n{roles}    </roles>\n    <users>\n        <default>\n\
             \x20           <password></password>\n            <networks><ip>::/0</ip></networks>\n\
             \x20           <profile>default</profile>\n            <quota>default</quota>\n\
             \x20           <grants>\n{role_grants}            </grants>\n\
             \x20           <default_roles><{ADMIN_ROLE}/></default_roles>\n        </default>\n\
             \x20   </users>\n</clickhouse>\n"
        )
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// Writes chingest's engine configuration into the data directory (each file
/// replaced atomically) and returns the path of the one to boot with.
pub(crate) fn write_engine_config(
    data_dir: &Path,
    access: &EngineAccess,
) -> std::result::Result<PathBuf, String> {
    let users = data_dir.join(USERS_FILE);
    let config = data_dir.join(CONFIG_FILE);
    let write = |path: &Path, text: &str| {
        let tmp = path.with_extension("xml.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write(&users, &access.users_xml())?;
    write(&config, &access.config_xml(&users.display().to_string()))?;
    Ok(config)
}

/// Checks the engine booted with chingest's configuration: every role exists
/// and the admin role is active in the session (a config that failed to apply
/// would leave the engine on its defaults, with no access control at all).
/// Every granted role is active until a session sets its own; reader
/// sessions always do (`SET ROLE`).
pub(crate) fn verify_boot(
    conn: &Connection,
    access: &EngineAccess,
) -> std::result::Result<(), String> {
    let out = conn
        .query(
            "SELECT name FROM system.roles ORDER BY name FORMAT TabSeparatedRaw",
            OutputFormat::TabSeparatedRaw,
        )
        .map_err(|e| format!("the engine's access control is not configured: {e}"))?;
    let text = out.data_utf8_lossy();
    let present: Vec<&str> = text.lines().collect();
    for role in access.role_names() {
        if !present.contains(&role) {
            return Err(format!(
                "the engine booted without chingest's role {role} (its roles: {present:?}); \
                 is another configuration overriding {CONFIG_FILE}?"
            ));
        }
    }
    let current = conn
        .query(
            "SELECT arrayStringConcat(currentRoles(), ',')",
            OutputFormat::TabSeparatedRaw,
        )
        .map_err(|e| format!("cannot read the session's roles: {e}"))?;
    let current = current.data_utf8_lossy();
    if !current.trim().split(',').any(|r| r == ADMIN_ROLE) {
        return Err(format!(
            "the engine session's roles are {:?}, without {ADMIN_ROLE}",
            current.trim()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_collapse_and_always_include_all_and_none() {
        let a = ReadScope::from_list(&["a", "b"]);
        let a2 = ReadScope::from_list(&["b", "a", "a"]);
        let access = EngineAccess::new([a.clone(), a2, ReadScope::from_list(&["x", "*"])]);
        assert_eq!(access.roles.len(), 3, "{access:?}");
        assert!(access.role(&a).is_some());
        assert!(access.role(&ReadScope::All).is_some());
        assert!(access.role(&ReadScope::from_list::<&str>(&[])).is_some());
        assert!(access.role(&ReadScope::from_list(&["c"])).is_none());
        assert_eq!(access.role_names()[0], ADMIN_ROLE);
    }

    #[test]
    fn users_file_quotes_names_and_grants_roles_only() {
        let access = EngineAccess::new([ReadScope::from_list(&["we<i>rd`db"])]);
        let xml = access.users_xml();
        assert!(
            xml.contains("GRANT SELECT ON `we&lt;i&gt;rd\\`db`.*"),
            "{xml}"
        );
        assert!(xml.contains("<default_roles><chingest_admin/></default_roles>"));
        // The user's own grants are role grants only.
        let user = &xml[xml.find("<users>").unwrap()..];
        for line in user.lines().filter(|l| l.contains("<query>")) {
            assert!(line.contains("<query>GRANT chingest_"), "{line}");
        }
        assert!(access
            .config_xml("/d/a&b.xml")
            .contains("<users_config>/d/a&amp;b.xml</users_config>"));
    }
}
