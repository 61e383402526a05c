//! User management through InfluxQL, as InfluxDB 1.x does it (texts checked against
//! influxd 1.6.7): `CREATE USER`, `DROP USER`, `SET PASSWORD`, `GRANT`, `REVOKE`,
//! `SHOW USERS`, `SHOW GRANTS`. Blocking (bcrypt, an fsync): call off the async threads.
//! The caller has authorized the statement (admin).
//!
//! Deviations: a config file user cannot be changed here ([`UserError::FromConfig`]); a
//! change that would leave users but no admin is refused ([`UserError::LastAdmin`]; 1.x
//! accepts it and then answers every request "no user provided" until restarted with auth
//! off); `SHOW GRANTS` lists databases sorted (1.x: in Go's random map order).

use influxql::ast::Privilege;

use super::users::StoredUser;
use super::{Authenticator, PasswordHash, User, UserError};

impl Authenticator {
    /// `CREATE USER`. `first_admin`: the caller was let in to create the first admin; it
    /// fails if a user exists by now (two racing first admins: one wins).
    pub fn create_user(
        &self,
        name: &str,
        password: &str,
        admin: bool,
        first_admin: bool,
    ) -> Result<(), UserError> {
        if name.is_empty() {
            return Err(UserError::NameRequired);
        }
        check_password(password)?;
        if self.configured.iter().any(|u| u.name == name) {
            return Err(UserError::Exists);
        }
        // Hashed before taking the writer's lock (bcrypt is the slow part).
        let hash = PasswordHash::bcrypt(password);
        self.change(|users| {
            if first_admin && !users.is_empty() {
                return Err(UserError::NotFirst);
            }
            if let Some(u) = users.iter().find(|u| u.name == name) {
                // The same user again is no error, as in InfluxDB 1.x.
                let same = u.admin == admin
                    && PasswordHash::parse(&u.hash).is_some_and(|h| h.verify_slow(password));
                return if same { Ok(()) } else { Err(UserError::Exists) };
            }
            users.push(StoredUser {
                name: name.to_string(),
                hash: hash.as_stored(),
                admin,
                privileges: Default::default(),
            });
            Ok(())
        })
    }

    /// The InfluxQL users as stored (bcrypt hashes, admin, privileges): what a backup keeps
    /// (`GET /api/v1/users`). Config-file users are not among them.
    pub fn export_users(&self) -> Vec<StoredUser> {
        (*self.directory.snapshot()).clone()
    }

    /// Adds the users of a backup (`POST /api/v1/users`): a name that exists already (here
    /// or in the config file) keeps what it has. All or nothing: a user whose hash is not a
    /// password hash chingest reads, or whose privilege is not InfluxDB's, fails the whole
    /// import. Returns (added, kept).
    pub fn import_users(&self, users: Vec<StoredUser>) -> Result<(usize, usize), UserError> {
        for u in &users {
            if u.name.is_empty() {
                return Err(UserError::NameRequired);
            }
            if PasswordHash::parse(&u.hash).is_none() {
                return Err(UserError::Invalid(format!(
                    "user {:?}: not a password hash chingest reads",
                    u.name
                )));
            }
            if let Some((db, p)) = u
                .privileges
                .iter()
                .find(|(_, p)| Privilege::parse(p).is_none())
            {
                return Err(UserError::Invalid(format!(
                    "user {:?}: {p:?} on {db:?} is not a privilege",
                    u.name
                )));
            }
        }
        let mut counts = (0, 0);
        self.change(|all| {
            for u in users {
                let exists = all.iter().any(|have| have.name == u.name)
                    || self.configured.iter().any(|c| c.name == u.name);
                if exists {
                    counts.1 += 1;
                } else {
                    counts.0 += 1;
                    all.push(u);
                }
            }
            Ok(())
        })?;
        Ok(counts)
    }

    /// `DROP USER`.
    pub fn drop_user(&self, name: &str) -> Result<(), UserError> {
        self.change_user(name, |users, i| {
            users.remove(i);
            Ok(())
        })?;
        self.verified.forget(name);
        Ok(())
    }

    /// `SET PASSWORD FOR`.
    pub fn set_password(&self, name: &str, password: &str) -> Result<(), UserError> {
        check_password(password)?;
        let hash = PasswordHash::bcrypt(password).as_stored();
        self.change_user(name, |users, i| {
            users[i].hash = hash;
            Ok(())
        })?;
        self.verified.forget(name);
        Ok(())
    }

    /// `GRANT <privilege> ON <db> TO <user>`: the user's privilege on `db` becomes
    /// `privilege` (it replaces, as in InfluxDB 1.x). `exists`: whether a database exists.
    pub fn grant(
        &self,
        user: &str,
        db: &str,
        privilege: Privilege,
        exists: impl Fn(&str) -> bool,
    ) -> Result<(), UserError> {
        self.set_privilege(user, db, exists, |_| privilege)
    }

    /// `REVOKE <privilege> ON <db> FROM <user>`: what is left of the user's privilege on
    /// `db` (the entry stays, `NO PRIVILEGES` at least, as in InfluxDB 1.x).
    pub fn revoke(
        &self,
        user: &str,
        db: &str,
        privilege: Privilege,
        exists: impl Fn(&str) -> bool,
    ) -> Result<(), UserError> {
        self.set_privilege(user, db, exists, |now| now.without(privilege))
    }

    /// The user's privilege on `db` becomes `next(its privilege now)`; the user first, then
    /// the database must exist (InfluxDB's order of errors).
    fn set_privilege(
        &self,
        user: &str,
        db: &str,
        exists: impl Fn(&str) -> bool,
        next: impl FnOnce(Privilege) -> Privilege,
    ) -> Result<(), UserError> {
        self.change_user(user, |users, i| {
            if !exists(db) {
                return Err(UserError::DatabaseNotFound(db.to_string()));
            }
            let p = next(users[i].privilege(db));
            users[i]
                .privileges
                .insert(db.to_string(), p.as_str().to_string());
            Ok(())
        })
    }

    /// `GRANT ALL PRIVILEGES TO` (`true`) / `REVOKE ALL PRIVILEGES FROM` (`false`).
    pub fn set_admin(&self, user: &str, admin: bool) -> Result<(), UserError> {
        self.change_user(user, |users, i| {
            users[i].admin = admin;
            Ok(())
        })
    }

    /// Forgets every privilege on `db` (`DROP DATABASE`: a database created again later
    /// under the name starts with no grants, as in InfluxDB 1.x).
    pub fn forget_database(&self, db: &str) -> Result<(), UserError> {
        if !self
            .directory
            .snapshot()
            .iter()
            .any(|u| u.privileges.contains_key(db))
        {
            return Ok(());
        }
        self.change(|users| {
            for u in users.iter_mut() {
                u.privileges.remove(db);
            }
            Ok(())
        })
    }

    /// `SHOW USERS`: (name, admin), config file users first, then in creation order.
    pub fn show_users(&self) -> Vec<(String, bool)> {
        let stored = self.directory.snapshot();
        self.configured
            .iter()
            .map(|u| (u.name.clone(), u.admin))
            .chain(
                stored
                    .iter()
                    .filter(|u| !self.configured.iter().any(|c| c.name == u.name))
                    .map(|u| (u.name.clone(), u.admin)),
            )
            .collect()
    }

    /// `SHOW GRANTS FOR`: (database, privilege), sorted by database.
    pub fn show_grants(&self, name: &str) -> Result<Vec<(String, Privilege)>, UserError> {
        if let Some(u) = self.configured.iter().find(|u| u.name == name) {
            return Ok(u.grants());
        }
        let stored = self.directory.snapshot();
        let u = stored
            .iter()
            .find(|u| u.name == name)
            .ok_or(UserError::NotFound)?;
        Ok(u.privileges
            .keys()
            .map(|db| (db.clone(), u.privilege(db)))
            .collect())
    }

    /// Changes the stored user `name` (found at the index given to `f`): not a config file
    /// user, and not leaving users without an admin.
    fn change_user(
        &self,
        name: &str,
        f: impl FnOnce(&mut Vec<StoredUser>, usize) -> Result<(), UserError>,
    ) -> Result<(), UserError> {
        if self.configured.iter().any(|u| u.name == name) {
            return Err(UserError::FromConfig(name.to_string()));
        }
        self.change(|users| {
            let i = users
                .iter()
                .position(|u| u.name == name)
                .ok_or(UserError::NotFound)?;
            let admins_before = self.admins(users);
            f(users, i)?;
            let users_left = !self.configured.is_empty() || !users.is_empty();
            if admins_before > 0 && self.admins(users) == 0 && users_left {
                return Err(UserError::LastAdmin(name.to_string()));
            }
            Ok(())
        })
    }

    fn admins(&self, stored: &[StoredUser]) -> usize {
        let configured = self.configured.iter().filter(|u| u.admin).count();
        configured
            + stored
                .iter()
                .filter(|u| u.admin && !self.configured.iter().any(|c| c.name == u.name))
                .count()
    }

    /// One durable change of the stored users, then the lookup map follows.
    fn change(
        &self,
        f: impl FnOnce(&mut Vec<StoredUser>) -> Result<(), UserError>,
    ) -> Result<(), UserError> {
        self.directory.change(f)?;
        self.rebuild();
        Ok(())
    }
}

impl Authenticator {
    /// The read scopes of every non-admin user now (the engine boots with a role for each).
    pub fn read_scopes(&self) -> Vec<storage::ReadScope> {
        let stored = self.stored.read().clone();
        self.configured
            .iter()
            .chain(stored.values())
            .filter(|u| !u.admin)
            .map(|u| storage::ReadScope::from_list(u.read()))
            .collect()
    }
}

impl User {
    /// Whether the user is defined in the config file.
    pub fn from_config_file(&self) -> bool {
        self.from_config
    }
}

/// bcrypt's limit ([`UserError::PasswordTooLong`]).
fn check_password(password: &str) -> Result<(), UserError> {
    if password.len() > 72 {
        Err(UserError::PasswordTooLong)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AuthConfig;

    #[test]
    fn user_management_keeps_an_admin_and_refuses_long_passwords() {
        let a = Authenticator::new(&AuthConfig::default());
        let long = "x".repeat(73);
        assert!(matches!(
            a.create_user("u", &long, false, false),
            Err(UserError::PasswordTooLong)
        ));
        a.create_user("root", &"y".repeat(72), true, false).unwrap();
        a.create_user("bob", "pw", false, false).unwrap();
        assert!(matches!(
            a.set_password("bob", &long),
            Err(UserError::PasswordTooLong)
        ));
        assert!(matches!(a.drop_user("root"), Err(UserError::LastAdmin(_))));
        assert!(matches!(
            a.set_admin("root", false),
            Err(UserError::LastAdmin(_))
        ));
        a.set_admin("bob", true).unwrap();
        a.drop_user("root").unwrap();
        assert_eq!(a.show_users(), vec![("bob".to_string(), true)]);
        // The only user left may go: the server is then waiting for its first admin again.
        a.drop_user("bob").unwrap();
        assert!(a.show_users().is_empty());
        assert!(matches!(a.create_user("second", "pw", true, true), Ok(())));
        assert!(matches!(
            a.create_user("third", "pw", true, true),
            Err(UserError::NotFirst)
        ));
    }
}
