//! User management: `CREATE USER`, `DROP USER`, `SET PASSWORD`, `GRANT`, `REVOKE`,
//! `SHOW USERS`, `SHOW GRANTS`, with InfluxDB 1.x's grammar and error texts (checked against
//! influxd 1.6.7).

use super::Parser;
use crate::ast::{Password, Privilege, Statement, UserStatement};
use crate::error::ParseError;
use crate::token::{Keyword as K, Kind};

impl Parser<'_> {
    /// `CREATE USER <name> WITH PASSWORD '<password>' [WITH ALL PRIVILEGES]` (after `USER`).
    pub(super) fn create_user(&mut self) -> Result<Statement, ParseError> {
        let name = self.ident()?;
        self.expect_kw(K::WITH)?;
        self.expect_kw(K::PASSWORD)?;
        let password = self.password()?;
        // Only admin can be given at creation: `WITH` must be followed by `ALL PRIVILEGES`.
        let admin = self.accept_kw(K::WITH);
        if admin {
            self.expect_kw(K::ALL)?;
            self.expect_kw(K::PRIVILEGES)?;
        }
        Ok(user(UserStatement::Create {
            name,
            password,
            admin,
        }))
    }

    /// `DROP USER <name>` (after `USER`).
    pub(super) fn drop_user(&mut self) -> Result<Statement, ParseError> {
        Ok(user(UserStatement::Drop {
            name: self.ident()?,
        }))
    }

    /// `SET PASSWORD FOR <name> = '<password>'` (after `SET`).
    pub(super) fn set_password(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::PASSWORD)?;
        self.expect_kw(K::FOR)?;
        let name = self.ident()?;
        self.expect(Kind::Eq, &["="])?;
        let password = self.password()?;
        Ok(user(UserStatement::SetPassword { name, password }))
    }

    /// `GRANT <privilege> ON <db> TO <user>` or `GRANT ALL [PRIVILEGES] TO <user>` (after
    /// `GRANT`).
    pub(super) fn grant(&mut self) -> Result<Statement, ParseError> {
        let privilege = self.privilege()?;
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::ON) => {
                let on = self.ident()?;
                self.expect_kw(K::TO)?;
                let user_name = self.ident()?;
                Ok(user(UserStatement::Grant {
                    privilege,
                    on,
                    user: user_name,
                }))
            }
            Kind::Kw(K::TO) if privilege == Privilege::All => Ok(user(UserStatement::GrantAdmin {
                user: self.ident()?,
            })),
            _ => Err(ParseError::unexpected(&t, on_or(privilege, "TO"))),
        }
    }

    /// `REVOKE <privilege> ON <db> FROM <user>` or `REVOKE ALL [PRIVILEGES] FROM <user>`
    /// (after `REVOKE`).
    pub(super) fn revoke(&mut self) -> Result<Statement, ParseError> {
        let privilege = self.privilege()?;
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::ON) => {
                let on = self.ident()?;
                self.expect_kw(K::FROM)?;
                let user_name = self.ident()?;
                Ok(user(UserStatement::Revoke {
                    privilege,
                    on,
                    user: user_name,
                }))
            }
            Kind::Kw(K::FROM) if privilege == Privilege::All => {
                Ok(user(UserStatement::RevokeAdmin {
                    user: self.ident()?,
                }))
            }
            _ => Err(ParseError::unexpected(&t, on_or(privilege, "FROM"))),
        }
    }

    /// `SHOW GRANTS FOR <user>` (after `GRANTS`).
    pub(super) fn show_grants(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::FOR)?;
        Ok(user(UserStatement::ShowGrants {
            user: self.ident()?,
        }))
    }

    /// `READ`, `WRITE` or `ALL [PRIVILEGES]`.
    fn privilege(&mut self) -> Result<Privilege, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::READ) => Ok(Privilege::Read),
            Kind::Kw(K::WRITE) => Ok(Privilege::Write),
            Kind::Kw(K::ALL) => {
                self.accept_kw(K::PRIVILEGES);
                Ok(Privilege::All)
            }
            _ => Err(ParseError::unexpected(
                &t,
                &["READ", "WRITE", "ALL [PRIVILEGES]"],
            )),
        }
    }

    fn password(&mut self) -> Result<Password, ParseError> {
        Ok(Password(self.expect(Kind::Str, &["string"])?.lit))
    }
}

fn user(u: UserStatement) -> Statement {
    Statement::User(u)
}

/// What may follow a privilege: `ON`, and for `ALL` also `TO`/`FROM` (admin).
fn on_or(privilege: Privilege, admin_keyword: &'static str) -> &'static [&'static str] {
    match (privilege, admin_keyword) {
        (Privilege::All, "TO") => &["ON", "TO"],
        (Privilege::All, _) => &["ON", "FROM"],
        _ => &["ON"],
    }
}
