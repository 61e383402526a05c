//! The statements `/query` is running, for `SHOW QUERIES` and `KILL QUERY` (InfluxDB 1.x's
//! query manager): each gets the next id when it starts and leaves the list when it ends.
//! Killing one cancels its request's engine statements (`SqlCancel`) and makes it answer
//! `query interrupted`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use influxql::ast::Statement;
use parking_lot::Mutex;
use storage::SqlCancel;

/// One running statement.
#[derive(Debug)]
struct Running {
    /// Its statements, printed only when listed (printing a TSBS statement
    /// for every request cost more than listing it ever does).
    query: Arc<[Statement]>,
    database: String,
    /// Who runs it (`None`: anonymous, auth off).
    user: Option<String>,
    started: Instant,
    cancel: SqlCancel,
    killed: bool,
}

/// What `SHOW QUERIES` lists of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its id.
    pub id: u64,
    /// The statement, as InfluxQL prints it.
    pub query: String,
    /// The request's `db` (empty without one).
    pub database: String,
    /// How long it has run, truncated as InfluxDB shows it.
    pub duration: String,
    /// `running` or `killed`.
    pub status: &'static str,
}

/// The running statements; share it behind an `Arc`.
#[derive(Debug, Default)]
pub struct RunningQueries {
    state: Mutex<(u64, BTreeMap<u64, Running>)>,
}

/// A statement's place in the list; leaves it when dropped.
#[derive(Debug)]
pub struct Registered {
    id: u64,
    queries: Arc<RunningQueries>,
}

impl Registered {
    /// Whether `KILL QUERY` named it.
    pub fn killed(&self) -> bool {
        self.queries
            .state
            .lock()
            .1
            .get(&self.id)
            .is_some_and(|r| r.killed)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.queries.state.lock().1.remove(&self.id);
    }
}

impl RunningQueries {
    /// Lists `query` (a request's statements) as running until the returned
    /// guard is dropped.
    pub fn register(
        self: &Arc<Self>,
        query: Arc<[Statement]>,
        database: &str,
        user: Option<&str>,
        cancel: SqlCancel,
    ) -> Registered {
        let mut st = self.state.lock();
        st.0 += 1;
        let id = st.0;
        st.1.insert(
            id,
            Running {
                query,
                database: database.to_string(),
                user: user.map(str::to_string),
                started: Instant::now(),
                cancel,
                killed: false,
            },
        );
        Registered {
            id,
            queries: self.clone(),
        }
    }

    /// The running statements `visible` lets the caller see (by their user), in id order.
    pub fn list(&self, visible: impl Fn(Option<&str>) -> bool) -> Vec<Listed> {
        let now = Instant::now();
        self.state
            .lock()
            .1
            .iter()
            .filter(|(_, r)| visible(r.user.as_deref()))
            .map(|(&id, r)| Listed {
                id,
                query: r
                    .query
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(";\n"),
                database: r.database.clone(),
                duration: influxql::format_duration(truncate(now - r.started).as_nanos() as i64),
                status: if r.killed { "killed" } else { "running" },
            })
            .collect()
    }

    /// Kills statement `id`; false if no such statement is running.
    pub fn kill(&self, id: u64) -> bool {
        let mut st = self.state.lock();
        match st.1.get_mut(&id) {
            Some(r) => {
                r.killed = true;
                r.cancel.cancel();
                true
            }
            None => false,
        }
    }
}

/// `d` truncated to its largest unit among s, ms and µs, as InfluxDB shows durations.
fn truncate(d: Duration) -> Duration {
    let unit = if d >= Duration::from_secs(1) {
        Duration::from_secs(1)
    } else if d >= Duration::from_millis(1) {
        Duration::from_millis(1)
    } else if d >= Duration::from_micros(1) {
        Duration::from_micros(1)
    } else {
        return d;
    };
    let n = d.as_nanos() / unit.as_nanos();
    Duration::from_nanos((n * unit.as_nanos()) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_influxdb_shows_them() {
        for (d, want) in [
            (Duration::from_nanos(10_400), "10µs"),
            (Duration::from_micros(250_900), "250ms"),
            (Duration::from_millis(3_999), "3s"),
            (Duration::from_secs(65), "1m5s"),
            (Duration::from_secs(7201), "2h0m1s"),
            (Duration::from_nanos(500), "500ns"),
        ] {
            assert_eq!(
                influxql::format_duration(truncate(d).as_nanos() as i64),
                want,
                "{d:?}"
            );
        }
    }

    #[test]
    fn a_statement_is_listed_until_its_guard_drops_and_kill_cancels_it() {
        let q = Arc::new(RunningQueries::default());
        let cancel = SqlCancel::new();
        let parsed = |text: &str| -> Arc<[Statement]> {
            influxql::parse_query(text, &Default::default())
                .unwrap()
                .into()
        };
        let a = q.register(
            parsed("SELECT f FROM m"),
            "d",
            Some("alice"),
            cancel.clone(),
        );
        let b = q.register(
            parsed("SHOW QUERIES; SHOW DATABASES"),
            "",
            None,
            SqlCancel::new(),
        );
        let all = q.list(|_| true);
        assert_eq!(all[1].query, "SHOW QUERIES;\nSHOW DATABASES");
        assert_eq!(all.iter().map(|l| l.id).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(q.list(|u| u == Some("alice")).len(), 1);
        assert!(q.kill(1));
        assert!(cancel.is_cancelled() && a.killed());
        assert_eq!(q.list(|_| true)[0].status, "killed");
        drop(a);
        assert!(!q.kill(1), "gone once it ended");
        drop(b);
        assert!(q.list(|_| true).is_empty());
    }
}
