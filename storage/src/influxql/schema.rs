//! `FROM` resolved against the catalog: which database, which measurements
//! (regexes expanded), each with its tag keys and field types.

use influxql::ast::{MeasurementName, NameMatch, Source};
use ingest::MeasurementSchema;

use super::error::InfluxqlError;

/// The one retention policy of every chingest database, as `SHOW RETENTION
/// POLICIES` names it.
pub const RETENTION_POLICY: &str = "autogen";

/// The database and measurements a `SELECT` reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sources {
    /// The database.
    pub(crate) db: String,
    /// Matching measurements, sorted by name, each once.
    pub(crate) measurements: Vec<MeasurementSchema>,
}

/// Resolves `sources` (measurements only: subqueries are planned apart).
/// `schema` answers a database's measurements, `None` if it does not exist.
pub(crate) fn resolve(
    db_param: Option<&str>,
    sources: &[Source],
    schema: &dyn Fn(&str) -> Option<Vec<MeasurementSchema>>,
) -> Result<Sources, InfluxqlError> {
    let mut names: Vec<&MeasurementName> = Vec::new();
    for s in sources {
        match s {
            Source::Measurement(m) => names.push(m),
            Source::Subquery(_) => {
                return Err(InfluxqlError::unsupported(
                    "a subquery together with other sources",
                ))
            }
        }
    }
    let db = database(db_param, &names)?;
    let all = schema(&db).ok_or_else(|| InfluxqlError::DatabaseNotFound { db: db.clone() })?;
    let mut measurements = Vec::new();
    for n in &names {
        let re = match &n.name {
            NameMatch::Regex(r) => Some(compile(&r.0)?),
            NameMatch::Name(_) => None,
        };
        for m in &all {
            let hit = match (&n.name, &re) {
                (NameMatch::Name(name), _) => *name == m.name,
                (_, Some(re)) => re.is_match(&m.name),
                _ => false,
            };
            if hit
                && !measurements
                    .iter()
                    .any(|x: &MeasurementSchema| x.name == m.name)
            {
                measurements.push(m.clone());
            }
        }
    }
    measurements.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Sources { db, measurements })
}

/// The database of the sources: a qualified name's, else `db_param`. All
/// sources must name the same one, with the database's one policy.
fn database(db_param: Option<&str>, names: &[&MeasurementName]) -> Result<String, InfluxqlError> {
    let mut db: Option<String> = None;
    for n in names {
        if let Some(rp) = n.retention_policy.as_deref() {
            if !rp.is_empty() && rp != RETENTION_POLICY {
                return Err(InfluxqlError::RetentionPolicyNotFound { rp: rp.into() });
            }
        }
        let this = n
            .database
            .as_deref()
            .filter(|d| !d.is_empty())
            .or(db_param)
            .ok_or(InfluxqlError::DatabaseRequired)?;
        match &db {
            Some(d) if d != this => {
                return Err(InfluxqlError::unsupported(
                    "reading measurements of several databases in one statement",
                ))
            }
            _ => db = Some(this.to_string()),
        }
    }
    db.or_else(|| db_param.map(str::to_string))
        .ok_or(InfluxqlError::DatabaseRequired)
}

/// The fields and tags of all `measurements` as one schema (a field's type is
/// its first measurement's), each sorted.
pub(crate) fn union(measurements: &[MeasurementSchema]) -> MeasurementSchema {
    let mut all = MeasurementSchema {
        name: String::new(),
        tag_keys: Vec::new(),
        fields: Vec::new(),
    };
    for m in measurements {
        for k in &m.tag_keys {
            if !all.tag_keys.contains(k) {
                all.tag_keys.push(k.clone());
            }
        }
        for (f, t) in &m.fields {
            if !all.fields.iter().any(|(x, _)| x == f) {
                all.fields.push((f.clone(), *t));
            }
        }
    }
    all.tag_keys.sort();
    all.fields.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// Whether `name` is what `pattern` names (regexes match anywhere in it, as
/// InfluxDB's do).
pub fn name_matches(pattern: &NameMatch, name: &str) -> Result<bool, InfluxqlError> {
    Ok(match pattern {
        NameMatch::Name(n) => n == name,
        NameMatch::Regex(r) => compile(&r.0)?.is_match(name),
    })
}

/// A regex of a statement (Go's RE2 syntax; Rust's `regex` reads the same
/// subset: no backreferences or lookaround in either).
pub(crate) fn compile(re: &str) -> Result<regex::Regex, InfluxqlError> {
    regex::Regex::new(re)
        .map_err(|e| InfluxqlError::invalid(format!("invalid regular expression /{re}/: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use influxql::ast::Regex;

    fn m(name: &str) -> MeasurementSchema {
        MeasurementSchema {
            name: name.into(),
            tag_keys: vec![],
            fields: vec![],
        }
    }

    fn source(db: Option<&str>, rp: Option<&str>, name: NameMatch) -> Source {
        Source::Measurement(MeasurementName {
            database: db.map(Into::into),
            retention_policy: rp.map(Into::into),
            name,
        })
    }

    fn catalog(db: &str) -> Option<Vec<MeasurementSchema>> {
        (db == "d").then(|| vec![m("cpu"), m("cpu2"), m("mem")])
    }

    #[test]
    fn names_regexes_qualified_and_missing() {
        let s = resolve(
            Some("d"),
            &[
                source(Some("d"), Some("autogen"), NameMatch::Name("mem".into())),
                source(None, None, NameMatch::Regex(Regex("^cpu".into()))),
            ],
            &catalog,
        )
        .unwrap();
        assert_eq!(s.db, "d");
        let names: Vec<_> = s.measurements.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["cpu", "cpu2", "mem"]);
        let nothing = resolve(
            Some("d"),
            &[source(None, None, NameMatch::Name("nope".into()))],
            &catalog,
        )
        .unwrap();
        assert!(nothing.measurements.is_empty());
        assert!(matches!(
            resolve(
                Some("x"),
                &[source(None, None, NameMatch::Name("a".into()))],
                &catalog
            ),
            Err(InfluxqlError::DatabaseNotFound { db }) if db == "x"
        ));
        assert!(matches!(
            resolve(
                None,
                &[source(None, None, NameMatch::Name("a".into()))],
                &catalog
            ),
            Err(InfluxqlError::DatabaseRequired)
        ));
        assert!(matches!(
            resolve(
                Some("d"),
                &[source(None, Some("weekly"), NameMatch::Name("a".into()))],
                &catalog
            ),
            Err(InfluxqlError::RetentionPolicyNotFound { rp }) if rp == "weekly"
        ));
    }
}
