//! chingest's metadata database on every shard (`__chingest`): the tables the nodes list
//! what they did in (databases made and dropped, measurement drops, retention, policies,
//! deliveries), made where missing, replicated where the shard's tables are, and read as
//! empty before any node listed anything.

use crate::{schema, Cluster, ClusterError};

/// The database on every shard where chingest lists the databases created on any node.
pub(crate) const META_DATABASE: &str = "__chingest";

/// The `CREATE TABLE IF NOT EXISTS` of the databases listed by name.
pub(crate) fn create_databases_table() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {META_DATABASE}.databases (name String) \
         ENGINE = MergeTree ORDER BY name"
    )
}

/// The `CREATE TABLE IF NOT EXISTS` of every table of chingest's metadata a catalog reads.
pub(crate) fn meta_tables() -> [String; 6] {
    [
        create_databases_table(),
        crate::delete::create_drops_table(),
        crate::databases::create_created_table(),
        crate::databases::create_applied_table(),
        crate::databases::create_policies_table(),
        crate::retention::create_retention_table(),
    ]
}

impl Cluster {
    /// Runs `sql`, a read of a table of chingest's metadata database, on shard `k`; a table
    /// (or database) not made there yet reads as empty.
    pub(crate) fn read_meta(&self, k: usize, sql: &str) -> Result<String, ClusterError> {
        match self.http.statement(k, sql) {
            Err(e) if e.is_missing_table() => Ok(String::new()),
            answer => answer,
        }
    }

    /// [`list_meta`](Self::list_meta) where at least one shard must take the row: how many
    /// did, or the last unreachable shard's error when none answered.
    pub(crate) fn list_meta_somewhere(
        &self,
        create: &str,
        insert: &str,
    ) -> Result<usize, ClusterError> {
        match self.list_meta(create, insert)? {
            (0, Some(down)) => Err(down),
            (took, _) => Ok(took),
        }
    }

    /// Adds a row to a table of chingest's metadata database (made first where missing:
    /// `create` is its `CREATE TABLE IF NOT EXISTS`) on every shard that answers; how many
    /// took it, and the last unreachable shard's error.
    pub(crate) fn list_meta(
        &self,
        create: &str,
        insert: &str,
    ) -> Result<(usize, Option<ClusterError>), ClusterError> {
        let mut took = 0;
        let mut last_down = None;
        for k in 0..self.config.shards.len() {
            match self.list_meta_on(k, create, insert) {
                Ok(()) => took += 1,
                Err(e @ ClusterError::Unreachable { .. }) => last_down = Some(e),
                Err(e) => return Err(e),
            }
        }
        Ok((took, last_down))
    }

    /// [`list_meta`](Self::list_meta) on shard `k`: the row added (on one replica: the
    /// table is replicated where the shard's tables are), the table made first where
    /// missing.
    pub(crate) fn list_meta_on(
        &self,
        k: usize,
        create: &str,
        insert: &str,
    ) -> Result<(), ClusterError> {
        match self.http.statement(k, insert) {
            Err(e) if e.is_missing_table() => {
                self.make_meta_table(k, create)?;
                self.http.statement(k, insert).map(drop)
            }
            done => done.map(drop),
        }
    }

    /// Makes a table of chingest's metadata (`create`: its `CREATE TABLE IF NOT EXISTS`),
    /// and its database, on every replica of shard `k` that answers.
    pub(crate) fn make_meta_table(&self, k: usize, create: &str) -> Result<(), ClusterError> {
        self.http
            .every_replica(k, &format!("CREATE DATABASE IF NOT EXISTS {META_DATABASE}"))?;
        self.http.every_replica(k, &self.meta_create(k, create))?;
        Ok(())
    }

    /// `create`, a `CREATE TABLE IF NOT EXISTS __chingest.<t> (…) ENGINE = <merge> ORDER BY
    /// …` of chingest's metadata, with its engine replicated among shard `k`'s replicas
    /// when the cluster's tables are ([`schema::engine`]).
    pub(crate) fn meta_create(&self, k: usize, create: &str) -> String {
        let Some(root) = &self.config.zookeeper_path else {
            return create.to_string();
        };
        let prefix = format!("CREATE TABLE IF NOT EXISTS {META_DATABASE}.");
        let table = create
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split([' ', '(']).next())
            .expect("chingest's metadata tables are made by name");
        let (head, rest) = create
            .split_once(" ENGINE = ")
            .expect("chingest's metadata tables name their engine");
        let (merge, tail) = rest.split_once(" ORDER BY ").expect("and their order");
        let path = schema::zookeeper_path(root, k, META_DATABASE, table);
        format!(
            "{head} ENGINE = {} ORDER BY {tail}",
            schema::engine(merge, Some(&path))
        )
    }

    /// Makes every table of chingest's metadata on shard `k` that is missing there.
    pub(crate) fn ensure_meta_tables(&self, k: usize) -> Result<(), ClusterError> {
        meta_tables()
            .iter()
            .try_for_each(|create| self.make_meta_table(k, create))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClusterConfig;

    fn cluster(zookeeper_path: Option<&str>) -> Cluster {
        Cluster::connect(ClusterConfig {
            // Nothing listens there: the node starts all the same.
            shards: vec![vec![
                "http://127.0.0.1:9/".into(),
                "http://127.0.0.1:7/".into(),
            ]],
            zookeeper_path: zookeeper_path.map(str::to_string),
            insert_quorum: 0,
            user: None,
            password: None,
            node: "n".into(),
            incarnation: String::new(),
            timeout: std::time::Duration::from_millis(200),
            distributed: None,
            delete_wait: std::time::Duration::from_secs(1),
            readers: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn metadata_tables_are_replicated_where_the_shards_tables_are() {
        let c = cluster(Some("/ch"));
        let mut creates = meta_tables().to_vec();
        creates.push(
            "CREATE TABLE IF NOT EXISTS __chingest.nodes (node String, delivered_through \
             UInt64, at UInt64) ENGINE = ReplacingMergeTree(at) ORDER BY node"
                .into(),
        );
        for create in &creates {
            let sql = c.meta_create(0, create);
            assert!(
                sql.contains("ENGINE = ReplicatedMergeTree('/ch/0/")
                    || sql.contains("ENGINE = ReplicatedReplacingMergeTree('/ch/0/"),
                "{sql}"
            );
            assert!(sql.contains("'{replica}'"), "{sql}");
            assert!(sql.contains(" ORDER BY "), "{sql}");
        }
        // Each its own path.
        let paths: std::collections::HashSet<String> =
            creates.iter().map(|c2| c.meta_create(0, c2)).collect();
        assert_eq!(paths.len(), creates.len());
        assert!(c
            .meta_create(0, &creates[6])
            .ends_with("'{replica}', at) ORDER BY node"));
    }
}
