//! Disk full (issue #15): below `min_free_bytes` data entries are refused with `DiskFull`,
//! nothing is acknowledged, metadata still commits, and writes resume by themselves once space
//! is freed. Runs on a small tmpfs (needs root); skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use wal::WalError;

use crate::util::*;

/// A mounted tmpfs of `mib` MiB, unmounted on drop.
pub(crate) struct Tmpfs {
    pub(crate) path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    pub(crate) fn mount(mib: u64) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "\n*** SKIPPED disk-full test: cannot mount a tmpfs (needs root / CAP_SYS_ADMIN) ***\n"
            );
            return None;
        }
        Some(Tmpfs {
            path: dir.path().to_path_buf(),
            _dir: dir,
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// Fills the file system of `dir` until fewer than `leave` bytes are free.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    use std::io::Write;
    let p = dir.join("filler");
    let mut f = std::fs::File::create(&p).unwrap();
    let chunk = vec![0xA5u8; 1 << 20];
    loop {
        let free = fs_free(dir);
        if free < leave {
            break;
        }
        let n = ((free - leave) as usize + 4096).min(chunk.len());
        if f.write_all(&chunk[..n]).is_err() {
            break;
        }
        f.sync_all().unwrap();
    }
    p
}

fn fs_free(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn below_the_reserve_writes_are_refused_unpoisoned_and_resume_when_space_returns() {
    let Some(fs) = Tmpfs::mount(48) else { return };
    let mut cfg = config(&fs.path.join("wal"));
    cfg.min_free_bytes = 8 << 20;
    let (wal, _, rx) = open(cfg.clone());
    let first = wal.submit(entry(1, 1000)).unwrap().wait().unwrap();
    let filler = fill(&fs.path, 4 << 20);

    // Refused at submit (or by the writer, whichever sees it first); never acknowledged.
    std::thread::sleep(std::time::Duration::from_millis(150));
    let refused = match wal.submit(entry(2, 1000)) {
        Err(e) => e,
        Ok(t) => t.wait().unwrap_err(),
    };
    assert!(matches!(refused, WalError::DiskFull { .. }), "{refused}");
    assert!(
        refused.to_string().contains("wal.min_free_bytes"),
        "{refused}"
    );
    let st = wal.stats();
    assert!(st.disk_low && !st.poisoned, "{st:?}");
    assert!(wal.check_writable().is_err());
    // Metadata (a DROP DATABASE that frees space) still commits.
    assert_eq!(
        wal.put_meta(vec![(b"m".to_vec(), b"1".to_vec())])
            .unwrap()
            .wait()
            .unwrap(),
        first
    );

    std::fs::remove_file(&filler).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert!(!wal.stats().disk_low);
    let again = wal.submit(entry(3, 1000)).unwrap().wait().unwrap();
    assert_eq!(again, first + 1, "the refused entry took no sequence");
    let got: Vec<u64> = rx.try_iter().map(|c| c.attachment).collect();
    assert_eq!(got, vec![1, 3]);
    drop(wal);
    let (_, rec, _) = open(cfg);
    let ids: Vec<u64> = rec
        .entries
        .iter()
        .map(|e| payload_id(&e.payload).unwrap())
        .collect();
    assert_eq!(ids, vec![1, 3]);
}
