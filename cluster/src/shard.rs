//! Which shard holds a series: a stable function of `series_id`, versioned so that a
//! cluster can grow without rewriting where the existing series live (a new version
//! applies to series first written under it; only version 1 exists).
//!
//! Version 1 is Lamping and Veach's jump consistent hash over the shard count, the
//! function ClickHouse itself exposes as `jumpConsistentHash(key, buckets)` (the same
//! answers in the embedded engine and in ClickHouse 18.16: tested), so the engine can
//! split a batch by shard in SQL while Rust knows which shards a batch reaches. Growing
//! from N to N+1 shards moves only 1/(N+1) of the series.

/// The shard map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardMap {
    /// The map's version (1).
    pub version: u32,
    /// Shards in the cluster.
    pub shards: u32,
}

impl ShardMap {
    /// Version 1 over `shards` shards (at least one).
    pub fn new(shards: u32) -> ShardMap {
        ShardMap {
            version: 1,
            shards: shards.max(1),
        }
    }

    /// The shard of a series.
    pub fn shard_of(&self, series_id: u64) -> u32 {
        jump_consistent_hash(series_id, self.shards)
    }

    /// The engine's expression for the shard of the row's `series_id`.
    pub fn shard_sql(&self) -> String {
        format!("jumpConsistentHash(`series_id`, {})", self.shards)
    }
}

/// Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014).
pub fn jump_consistent_hash(mut key: u64, buckets: u32) -> u32 {
    let (mut b, mut j): (i64, i64) = (-1, 0);
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shard_holds_everything_and_growth_moves_few_series() {
        let one = ShardMap::new(1);
        assert!((0..1000u64).all(|k| one.shard_of(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)) == 0));
        let (four, five) = (ShardMap::new(4), ShardMap::new(5));
        let keys: Vec<u64> = (0..10_000u64)
            .map(|k| k.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let moved = keys
            .iter()
            .filter(|k| four.shard_of(**k) != five.shard_of(**k))
            .count();
        // 1/5 of the series move, to the new shard only.
        assert!((1_700..2_300).contains(&moved), "{moved}");
        assert!(keys
            .iter()
            .filter(|k| four.shard_of(**k) != five.shard_of(**k))
            .all(|k| five.shard_of(*k) == 4));
        let mut per = [0usize; 4];
        for k in &keys {
            per[four.shard_of(*k) as usize] += 1;
        }
        assert!(per.iter().all(|n| (2_200..2_800).contains(n)), "{per:?}");
    }
}
