//! Issue #41 items 1–3: a backup is input from whoever could write where backups are kept,
//! and restore runs as an admin. Forged manifests (statements as continuous queries,
//! statements in durations, paths out of the backup, truncated and bit-flipped files, a
//! version without digests, a forged users file) are refused with nothing changed on the
//! target — databases, policies, users, grants, continuous queries and points compared
//! before and after; a signed backup is refused once anything in it changed; a restore
//! that fails part way takes back what it made.

use std::path::Path;

use serde_json::{json, Value};

use crate::backup::run_chingest as chingest;
use crate::util::*;

/// A statement's answer, which must hold no error.
fn q(s: &Server, text: &str) -> Value {
    let v = crate::backup::q(s, text);
    assert!(v["results"][0].get("error").is_none(), "{text}: {v}");
    v
}

/// Everything a restore could change on the target, as its answers.
fn state(s: &Server) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut ask = |text: String| {
        let v = q(s, &text);
        out.push((text, v));
    };
    ask("SHOW DATABASES".into());
    ask("SHOW USERS".into());
    ask("SHOW CONTINUOUS QUERIES".into());
    ask("SHOW GRANTS FOR keeper".into());
    let dbs = q(s, "SHOW DATABASES")["results"][0]["series"][0]["values"].clone();
    for db in dbs.as_array().into_iter().flatten() {
        let db = influxql::quote_ident(db[0].as_str().unwrap());
        ask(format!("SHOW RETENTION POLICIES ON {db}"));
        ask(format!("SHOW MEASUREMENTS ON {db}"));
        ask(format!("SELECT count(*) FROM {db}..m GROUP BY *"));
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn sha256(bytes: &[u8]) -> String {
    chingest::backup::sign::sha256(bytes)
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn set_manifest(dir: &Path, v: &Value) {
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(v).unwrap(),
    )
    .unwrap();
}

fn gzip_text(text: &str) -> Vec<u8> {
    gzip(text.as_bytes())
}

/// A forgery: a copy of the genuine backup changed by `forge`.
type Forge = Box<dyn Fn(&Path)>;

#[test]
fn a_forged_backup_is_refused_and_changes_nothing() {
    let (dir_a, dir_b, work) = (data_dir(), data_dir(), data_dir());
    let a = Spawn::new(dir_a.path()).start();
    let b = Spawn::new(dir_b.path()).start();
    // The source: a database with a second policy, a continuous query, points and a user.
    q(&a, "CREATE DATABASE src");
    q(
        &a,
        "CREATE RETENTION POLICY weekly ON src DURATION 3650d REPLICATION 1 SHARD DURATION 2d",
    );
    q(
        &a,
        "CREATE CONTINUOUS QUERY hourly ON src BEGIN SELECT mean(v) INTO src.weekly.m_1h FROM src.autogen.m GROUP BY time(1h) END",
    );
    q(&a, "CREATE USER reader WITH PASSWORD 'r3ader-pw'");
    q(&a, "GRANT READ ON src TO reader");
    let body: String = (0..20)
        .map(|i| format!("m,h=h{} v={i} {}\n", i % 3, i + 1))
        .collect();
    assert_eq!(a.post("/write?db=src&precision=s", body).status(), 204);
    // The target: a victim database with points, a continuous query, a user with a grant.
    q(&b, "CREATE DATABASE victim");
    assert_eq!(b.post("/write?db=victim", "m,h=x v=1 1").status(), 204);
    q(
        &b,
        "CREATE CONTINUOUS QUERY guard ON victim BEGIN SELECT max(v) INTO victim.autogen.m_max FROM victim.autogen.m GROUP BY time(1h) END",
    );
    q(&b, "CREATE USER keeper WITH PASSWORD 'k33per-pw'");
    q(&b, "GRANT WRITE ON victim TO keeper");
    b.sql_until("SELECT v FROM victim.m", 1);

    let genuine = work.path().join("genuine");
    let (ok, out) = chingest(&["backup", "--url", &a.base, genuine.to_str().unwrap()]);
    assert!(ok, "{out}");
    let m = manifest(&genuine);
    assert_eq!(m["version"], 2, "{m}");
    let data_file = m["databases"][0]["files"][0]["file"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m["users_sha256"].is_string(), "{m}");
    let outside = work.path().join("outside.lp.gz");
    std::fs::write(&outside, gzip_text("m,h=stolen v=666 1\n")).unwrap();
    let outside_sha = sha256(&std::fs::read(&outside).unwrap());
    let before = state(&b);

    let cq_text = |text: &'static str| -> Forge {
        Box::new(move |d: &Path| {
            let mut m = manifest(d);
            m["databases"][0]["continuous_queries"][0][1] = json!(text);
            set_manifest(d, &m);
        })
    };
    let policy = |field: &'static str, text: &'static str| -> Forge {
        Box::new(move |d: &Path| {
            let mut m = manifest(d);
            for p in m["databases"][0]["policies"].as_array_mut().unwrap() {
                p[field] = json!(text);
            }
            set_manifest(d, &m);
        })
    };
    let path_to = |file: String, sha: String| -> Forge {
        Box::new(move |d: &Path| {
            let mut m = manifest(d);
            m["databases"][0]["files"][0]["file"] = json!(file);
            m["databases"][0]["files"][0]["sha256"] = json!(sha);
            set_manifest(d, &m);
        })
    };
    let genuine_cq = m["databases"][0]["continuous_queries"][0][1]
        .as_str()
        .unwrap()
        .to_string();
    let chained: &'static str =
        Box::leak(format!("{genuine_cq}; DROP DATABASE victim").into_boxed_str());
    let into_victim: &'static str = Box::leak(
        genuine_cq
            .replace("INTO src.", "INTO victim.")
            .into_boxed_str(),
    );
    let data = data_file.clone();
    let data2 = data_file.clone();
    let outside_sha2 = outside_sha.clone();
    let outside2 = outside.clone();
    let forgeries: Vec<(&str, Forge)> = vec![
        (
            "a DROP DATABASE as a continuous query",
            cq_text("DROP DATABASE victim"),
        ),
        (
            "a CREATE USER as a continuous query",
            cq_text("CREATE USER mallory WITH PASSWORD 'x' WITH ALL PRIVILEGES"),
        ),
        ("a statement after a continuous query", cq_text(chained)),
        (
            "a continuous query into another database",
            cq_text(into_victim),
        ),
        (
            "a statement in a shard duration",
            policy("shard_duration", "1h; DROP DATABASE victim"),
        ),
        (
            "a statement in a duration",
            policy("duration", "1h; DROP DATABASE victim"),
        ),
        (
            "a data file out of the backup",
            path_to("../outside.lp.gz".into(), outside_sha.clone()),
        ),
        (
            "an absolute data file path",
            path_to(outside.to_str().unwrap().into(), outside_sha.clone()),
        ),
        (
            "a symbolic link out of the backup",
            Box::new(move |d: &Path| {
                std::fs::remove_file(d.join(&data)).unwrap();
                std::os::unix::fs::symlink(&outside2, d.join(&data)).unwrap();
                let mut m = manifest(d);
                m["databases"][0]["files"][0]["sha256"] = json!(outside_sha2);
                set_manifest(d, &m);
            }),
        ),
        (
            "a truncated data file",
            Box::new(move |d: &Path| {
                let bytes = std::fs::read(d.join(&data2)).unwrap();
                std::fs::write(d.join(&data2), &bytes[..bytes.len() / 2]).unwrap();
            }),
        ),
        (
            "a bit-flipped data file",
            Box::new({
                let data = data_file.clone();
                move |d: &Path| {
                    let mut bytes = std::fs::read(d.join(&data)).unwrap();
                    let i = bytes.len() / 2;
                    bytes[i] ^= 0x10;
                    std::fs::write(d.join(&data), bytes).unwrap();
                }
            }),
        ),
        (
            "a manifest of version 1 (no digests)",
            Box::new(|d: &Path| {
                let mut m = manifest(d);
                m["version"] = json!(1);
                set_manifest(d, &m);
            }),
        ),
    ];
    for (i, (what, forge)) in forgeries.iter().enumerate() {
        let dir = work.path().join(format!("forged{i}"));
        copy_dir(&genuine, &dir);
        forge(&dir);
        let (ok, out) = chingest(&[
            "restore",
            "--url",
            &b.base,
            "--users",
            dir.to_str().unwrap(),
        ]);
        assert!(!ok, "{what}: restored: {out}");
        assert!(
            out.contains("refused") || out.contains("version 1"),
            "{what}: {out}"
        );
        assert_eq!(state(&b), before, "{what} changed the target: {out}");
    }
    // Nothing of the stolen file is anywhere.
    assert!(!format!("{before:?}").contains("stolen"));

    // A forged users file (an admin added, its digest updated): without --admins it is
    // left out; signed backups refuse the forgery outright (below).
    let forged_users = work.path().join("forged_users");
    copy_dir(&genuine, &forged_users);
    let users = json!({"version": 1, "users": [{
        "name": "mallory",
        "hash": "$2a$10$abcdefghijklmnopqrstuu7O2dbGcbgsmRCYeWYDNDhl0iZ3Y6O4.",
        "admin": true,
        "privileges": {}
    }]});
    let users = serde_json::to_vec(&users).unwrap();
    std::fs::write(forged_users.join("users.json"), &users).unwrap();
    let mut fm = manifest(&forged_users);
    fm["users_sha256"] = json!(sha256(&users));
    set_manifest(&forged_users, &fm);
    let (ok, out) = chingest(&[
        "restore",
        "--url",
        &b.base,
        "--users",
        forged_users.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("1 admin user(s) of the backup not restored"),
        "{out}"
    );
    let shown = q(&b, "SHOW USERS").to_string();
    assert!(!shown.contains("mallory"), "{shown}");
    q(&b, "DROP DATABASE src");
    assert_eq!(state(&b), before);

    // Signed: the genuine backup restores with the key; any change after signing, another
    // key, or no signature at all is refused.
    let key = work.path().join("backup.key");
    std::fs::write(&key, b"0123456789abcdef0123456789abcdef").unwrap();
    let other_key = work.path().join("other.key");
    std::fs::write(&other_key, b"fedcba9876543210fedcba9876543210").unwrap();
    let signed = work.path().join("signed");
    let (ok, out) = chingest(&[
        "backup",
        "--url",
        &a.base,
        "--key-file",
        key.to_str().unwrap(),
        signed.to_str().unwrap(),
    ]);
    assert!(ok && out.contains("signed"), "{out}");
    let signed_users = work.path().join("signed_users");
    copy_dir(&signed, &signed_users);
    std::fs::write(signed_users.join("users.json"), &users).unwrap();
    let mut sm = manifest(&signed_users);
    sm["users_sha256"] = json!(sha256(&users));
    set_manifest(&signed_users, &sm);
    let unsigned = work.path().join("unsigned");
    copy_dir(&signed, &unsigned);
    std::fs::remove_file(unsigned.join("manifest.sig")).unwrap();
    for (what, dir, k) in [
        ("a forged users file", &signed_users, &key),
        ("another key", &signed, &other_key),
        ("no signature", &unsigned, &key),
        ("unsigned, with a key", &genuine, &key),
    ] {
        let (ok, out) = chingest(&[
            "restore",
            "--url",
            &b.base,
            "--key-file",
            k.to_str().unwrap(),
            "--users",
            "--admins",
            dir.to_str().unwrap(),
        ]);
        assert!(!ok && out.contains("refused"), "{what}: {out}");
        assert_eq!(state(&b), before, "{what}");
    }
    let (ok, out) = chingest(&[
        "restore",
        "--url",
        &b.base,
        "--key-file",
        key.to_str().unwrap(),
        "--users",
        signed.to_str().unwrap(),
    ]);
    assert!(ok && out.contains("signature checked"), "{out}");
    let same = |text: &str| assert_eq!(q(&b, text), q(&a, text), "{text}");
    same("SELECT * FROM src..m GROUP BY *");
    same("SHOW RETENTION POLICIES ON src");
    same("SHOW GRANTS FOR reader");
    let cqs = q(&b, "SHOW CONTINUOUS QUERIES").to_string();
    assert!(cqs.contains("hourly") && cqs.contains("guard"), "{cqs}");
}

#[test]
fn a_restore_that_fails_part_way_takes_back_what_it_made() {
    let (dir_a, dir_b, work) = (data_dir(), data_dir(), data_dir());
    let a = Spawn::new(dir_a.path()).start();
    let b = Spawn::new(dir_b.path()).start();
    for db in ["fresh", "shared"] {
        q(&a, &format!("CREATE DATABASE {db}"));
        q(
            &a,
            &format!("CREATE RETENTION POLICY weekly ON {db} DURATION 3650d REPLICATION 1 DEFAULT"),
        );
        q(
            &a,
            &format!("CREATE CONTINUOUS QUERY c ON {db} BEGIN SELECT mean(v) INTO {db}.weekly.m_1h FROM {db}.autogen.m GROUP BY time(1h) END"),
        );
        assert_eq!(
            a.post(
                &format!("/write?db={db}&rp=autogen&precision=s"),
                "m,h=a v=1 1\nm,h=b v=2 2"
            )
            .status(),
            204
        );
    }
    // The target has `shared` already, its own way: autogen for 100d, the default.
    q(&b, "CREATE DATABASE shared");
    q(&b, "ALTER RETENTION POLICY autogen ON shared DURATION 100d");
    let dir = work.path().join("backup");
    let (ok, out) = chingest(&["backup", "--url", &a.base, dir.to_str().unwrap()]);
    assert!(ok, "{out}");
    // `shared`'s last data file gets a line the server refuses (a float field written as a
    // string), its digest updated: the backup verifies, its last write fails.
    let mut m = manifest(&dir);
    let dbs = m["databases"].as_array().unwrap().clone();
    let last = dbs.iter().position(|d| d["name"] == "shared").unwrap();
    assert_eq!(last, dbs.len() - 1, "shared is restored last: {m}");
    let files = dbs[last]["files"].as_array().unwrap();
    let file = files[files.len() - 1]["file"].as_str().unwrap().to_string();
    let bad = gzip_text("m,h=a v=1 1\nm,h=c v=\"text\" 3\n");
    std::fs::write(dir.join(&file), &bad).unwrap();
    let n = files.len() - 1;
    m["databases"][last]["files"][n]["sha256"] = json!(sha256(&bad));
    set_manifest(&dir, &m);
    let rps_before = q(&b, "SHOW RETENTION POLICIES ON shared");
    let (ok, out) = chingest(&["restore", "--url", &b.base, dir.to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("restore undone") && out.contains("taken back"),
        "{out}"
    );
    // `fresh` (made by the restore) is gone; `shared` has its own policies back and no
    // continuous query; the points written into it before the failure stay (documented).
    assert_eq!(
        q(&b, "SHOW DATABASES")["results"][0]["series"][0]["values"],
        json!([["shared"]])
    );
    assert_eq!(q(&b, "SHOW RETENTION POLICIES ON shared"), rps_before);
    let cqs = q(&b, "SHOW CONTINUOUS QUERIES").to_string();
    assert!(!cqs.contains("m_1h"), "{cqs}");
}
