//! [`Cluster::connect`]: the configuration checked against the servers (the
//! `Distributed` tables' cluster name, the replicas' macros and ZooKeeper),
//! every shard's version asked; a shard down is not an error.

use std::collections::HashMap;

use engine::{quote_string, unescape_tsv};
use parking_lot::Mutex;

use crate::config::ClusterConfig;
use crate::error::ClusterError;
use crate::shard::ShardMap;
use crate::{http, schema, Cluster, ServerVersion};

/// Each shard that answered at connect must know `name` in its `remote_servers` with as
/// many shards as chingest has (a `Distributed` table over fewer would miss rows).
fn check_cluster_name(
    http: &http::Client,
    name: &str,
    shards: usize,
    versions: &[Option<ServerVersion>],
) -> Result<(), ClusterError> {
    for (k, _) in versions.iter().enumerate().filter(|(_, v)| v.is_some()) {
        let answer = http.statement(
            k,
            &format!(
                "SELECT uniqExact(shard_num) FROM system.clusters WHERE cluster = {} FORMAT TabSeparated",
                quote_string(name)
            ),
        )?;
        let have: usize = answer.trim().parse().unwrap_or(0);
        if have != shards {
            return Err(ClusterError::Config(format!(
                "[storage.clickhouse] distributed = {name:?}: shard {k} ({}) has {have} shards \
                 under that name in its remote_servers, chingest lists {shards}",
                http.endpoint(k)
            )));
        }
    }
    Ok(())
}

/// chingest's tables on a server that are not replicated (`db.table` rows).
const UNREPLICATED_TABLES: &str = "SELECT concat(database, '.', name) FROM system.tables \
     WHERE (database = '__chingest' OR startsWith(database, '__shard_')) \
     AND engine LIKE '%MergeTree' AND engine NOT LIKE 'Replicated%' LIMIT 1 FORMAT TabSeparated";

/// Replicas need replicated tables: a ZooKeeper path (a plain one: it becomes part of
/// every table's definition), and on every replica that answers a `replica` macro unique
/// within its shard, and no chingest table of its own (made before: the replicas would
/// diverge). ZooKeeper itself not answering is not an error (writes wait in the
/// WAL until it does).
fn check_replicas(http: &http::Client, config: &ClusterConfig) -> Result<(), ClusterError> {
    let quorum = config.insert_quorum as usize;
    if let Some(k) = config.shards.iter().position(|r| quorum > r.len()) {
        return Err(ClusterError::Config(format!(
            "insert_quorum = {quorum}, but shard {k} has {} replica(s)",
            config.shards[k].len()
        )));
    }
    if quorum > 1 && config.zookeeper_path.is_none() {
        return Err(ClusterError::Config(format!(
            "insert_quorum = {quorum} needs replicated tables ([storage.clickhouse] zookeeper_path)"
        )));
    }
    let Some(path) = &config.zookeeper_path else {
        return match config.shards.iter().position(|r| r.len() > 1) {
            Some(k) => Err(ClusterError::Config(format!(
                "shard {k} lists {} endpoints: replicas need replicated tables \
                 ([storage.clickhouse] zookeeper_path)",
                config.shards[k].len()
            ))),
            None => Ok(()),
        };
    };
    schema::check_zookeeper_path(path).map_err(ClusterError::Config)?;
    for k in 0..config.shards.len() {
        let mut names: Vec<(String, String)> = Vec::new();
        for r in 0..http.replicas(k) {
            let endpoint = http.replica_endpoint(k, r);
            let name = match http.statement_on(
                k,
                r,
                "SELECT substitution FROM system.macros WHERE macro = 'replica' \
                 FORMAT TabSeparated",
            ) {
                Ok(name) => unescape_tsv(name.trim_end_matches('\n')),
                Err(e) if e.is_unavailable() => continue,
                Err(e) => return Err(e),
            };
            if name.is_empty() {
                return Err(ClusterError::Config(format!(
                    "{endpoint} has no <macros><replica> in its config: each replica of a \
                     shard names itself there"
                )));
            }
            if let Some((other, _)) = names.iter().find(|(_, n)| *n == name) {
                return Err(ClusterError::Config(format!(
                    "{endpoint} and {other} (shard {k}) both name themselves replica {name:?}"
                )));
            }
            if http.replicas(k) > 1 {
                let unreplicated = http.statement_on(k, r, UNREPLICATED_TABLES)?;
                if let Some(table) = unreplicated.lines().next() {
                    return Err(ClusterError::Config(format!(
                        "{endpoint} holds chingest's table {} as a table of its own, not \
                         replicated (made before zookeeper_path was set): a shard's replicas \
                         would each keep rows the others lack. Replicas need a cluster whose \
                         tables were made with zookeeper_path",
                        unescape_tsv(table)
                    )));
                }
            }
            if let Err(e) = http.statement_on(
                k,
                r,
                "SELECT count() FROM system.zookeeper WHERE path = '/' FORMAT TabSeparated",
            ) {
                // 225 (NO_ZOOKEEPER); a server without `<zookeeper>` has no
                // `system.zookeeper` either (18.16 and later: 60, UNKNOWN_TABLE).
                if matches!(
                    e.code(),
                    Some(crate::code::NO_ZOOKEEPER | crate::code::UNKNOWN_TABLE)
                ) {
                    return Err(ClusterError::Config(format!(
                        "{endpoint} has no <zookeeper> in its config: replicated tables need one"
                    )));
                }
                tracing::warn!(%endpoint, error = %e,
                    "a replica cannot reach its ZooKeeper: its shard's writes wait in the WAL \
                     until one can");
            }
            names.push((endpoint, name));
        }
    }
    Ok(())
}

impl Cluster {
    /// Checks the configuration and asks every shard its version. A shard that does not
    /// answer is not an error (its rows wait in the WAL until it does: a node must start,
    /// and take writes, while a shard is down); its version is `None`.
    pub fn connect(config: ClusterConfig) -> Result<Cluster, ClusterError> {
        if config.shards.is_empty() {
            return Err(ClusterError::Config("no shard".into()));
        }
        if config.node.is_empty() {
            return Err(ClusterError::Config("the node needs a name".into()));
        }
        let http = http::Client::new(&config)?;
        // Every replica's version, which decides the statements it is sent (`version.rs`);
        // a shard's is its first answering replica's.
        let mut versions = Vec::with_capacity(config.shards.len());
        for k in 0..config.shards.len() {
            let mut shard = None;
            let mut down = None;
            for r in 0..http.replicas(k) {
                match http.server_version(k, r) {
                    Ok(v) => {
                        if v < ServerVersion::OLDEST_TESTED {
                            tracing::warn!(endpoint = %http.replica_endpoint(k, r), version = %v,
                                "a shard server older than 18.16, the oldest tested");
                        }
                        shard.get_or_insert(v);
                    }
                    Err(e) if e.is_unavailable() => down = Some(e),
                    Err(e) => return Err(e),
                }
            }
            if let (None, Some(e)) = (shard, down) {
                tracing::warn!(error = %e, "a shard does not answer: its rows wait in the WAL");
            }
            versions.push(shard);
        }
        if let Some(name) = &config.distributed {
            check_cluster_name(&http, name, config.shards.len(), &versions)?;
        }
        check_replicas(&http, &config)?;
        Ok(Cluster {
            map: ShardMap::new(config.shards.len() as u32),
            distributed_known: Mutex::new(vec![HashMap::new(); config.shards.len()]),
            next_sql_shard: std::sync::atomic::AtomicUsize::new(0),
            retention: Mutex::new(HashMap::new()),
            identity: Mutex::new(HashMap::new()),
            last_points: crate::last_points::LastPoints::default(),
            tag_maps: crate::series_of_tags::TagMaps::default(),
            known: Mutex::new(vec![HashMap::new(); config.shards.len()]),
            waiting: Mutex::new(vec![HashMap::new(); config.shards.len()]),
            versions,
            http,
            config,
        })
    }
}
