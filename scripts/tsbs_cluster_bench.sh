#!/usr/bin/env bash
# Issue #43: the TSBS-shaped benchmark (scripts/tsbs_bench.sh) with chingest's points on two
# ClickHouse shards (Debian's clickhouse-server on this machine, loopback), the same build with
# the embedded engine beside it as "chingest-prev", and InfluxDB 1.6.7: every query type on all
# three, answers compared value by value. The hot store is off on both chingest servers (the
# cluster never uses it; the embedded one is started with CHINGEST_HOT__ENABLED=false), so
# "embedded" is the engine path. Never part of CI.
#
# Usage: [BIN=target/release/chingest] [HOST_COUNTS=200] [QUERIES=20] [TYPES=…] [OUT=/tmp/tsbs-cluster]
#        [NODE_ENV="VAR=value …" (the cluster node's environment, e.g. CHINGEST_CLUSTER_IDENTITY_INDEX=0)]
#        scripts/tsbs_cluster_bench.sh
# Results: $OUT/tsbs_bench.{json,md} (tsbs_bench.sh's report, "chingest" = the cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/chingest}
OUT=${OUT:-/tmp/tsbs-cluster}
CH=${CHINGEST_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
WORK=$(mktemp -d /tmp/tsbs-cluster-shards.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=lib/clickhouse_shards.sh
source scripts/lib/clickhouse_shards.sh

shard "$WORK/s0" 18411 18421
shard "$WORK/s1" 18412 18422
wait_http 'http://127.0.0.1:18411/?query=SELECT%201'
wait_http 'http://127.0.0.1:18412/?query=SELECT%201'
mkdir -p "$OUT"
SKIP_BUILD=1 HOST_COUNTS=${HOST_COUNTS:-200} QUERIES=${QUERIES:-20} RESULTS=$OUT \
  REPORT=$OUT/benchmarks.md \
  SERVER_CMD="env CHINGEST_STORAGE__ENGINE=clickhouse ${NODE_ENV:-} $BIN serve --config" \
  SERVER_CONFIG_EXTRA=$'\n[storage.clickhouse]\nshards = ["http://127.0.0.1:18411", "http://127.0.0.1:18412"]\nnode = "tsbs"\ntimeout_secs = 120' \
  PREV_SERVER_CMD="env CHINGEST_HOT__ENABLED=false $BIN serve --config" \
  PREV_NAME="the same build with [storage] engine = \"embedded\" (the engine path; hot store off)" \
  scripts/tsbs_bench.sh
