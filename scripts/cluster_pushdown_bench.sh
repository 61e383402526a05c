#!/usr/bin/env bash
# Issue #43: three aggregates over POINTS points on two ClickHouse 18.16 shards, a previous
# build (OLD_BIN, rows pulled to the node) against this one (NEW_BIN, aggregates pushed down
# to the shards), both nodes reading the same shards, interleaved in one run
# (scripts/cluster_pushdown_ab.py). The old build runs with [sql] max_result_rows raised to
# 20M (at the default 1M its aggregates over >1M points fail; checked too), the new at the
# default.
#
# OLD_ENV: variables the old nodes run with, OLD_MAX_ROWS their [sql] max_result_rows, OLD_WHAT
# what they are, for the report: to compare this build with its shards' point-identity index
# off, OLD_BIN=$NEW_BIN OLD_ENV=CHINGEST_CLUSTER_IDENTITY_INDEX=0 OLD_MAX_ROWS=1000000.
#
# Usage: OLD_BIN=/tmp/chingest-before NEW_BIN=target/release/chingest \
#        [OLD_ENV=…] [OLD_MAX_ROWS=20000000] [OLD_WHAT=…] \
#        [POINTS=5910000] [REPS=7] [OUT=test_results/latest/cluster_pushdown.md] \
#        scripts/cluster_pushdown_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OLD_BIN=${OLD_BIN:?the previous build}
NEW_BIN=${NEW_BIN:-target/release/chingest}
OLD_ENV=${OLD_ENV:-}
OLD_MAX_ROWS=${OLD_MAX_ROWS:-20000000}
OLD_WHAT=${OLD_WHAT:-every raw row of the range pulled to the node}
POINTS=${POINTS:-5910000}
REPS=${REPS:-7}
OUT=${OUT:-test_results/latest/cluster_pushdown.md}
WORK=$(mktemp -d /tmp/cluster-pushdown.XXXXXX)
CH=${CHINGEST_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=lib/clickhouse_shards.sh
source scripts/lib/clickhouse_shards.sh
node() { # name bin port max_result_rows [VAR=value …]
  local d=$WORK/$1
  mkdir -p "$d"
  cat >"$d/chingest.toml" <<EOF
[storage]
engine = "clickhouse"

[storage.clickhouse]
shards = ["http://127.0.0.1:18311", "http://127.0.0.1:18312"]
node = "$1"
timeout_secs = 120

[sql]
max_result_rows = $4
EOF
  env CHINGEST_SERVER__LISTEN=127.0.0.1:$3 CHINGEST_STORAGE__DATA_DIR=$d/data RUST_LOG=warn \
    "${@:5}" "$2" serve --config "$d/chingest.toml" >"$d/log" 2>&1 &
  pids+=($!)
}

shard "$WORK/s0" 18311 18321
shard "$WORK/s1" 18312 18322
wait_http 'http://127.0.0.1:18311/?query=SELECT%201'
wait_http 'http://127.0.0.1:18312/?query=SELECT%201'
node new "$NEW_BIN" 18301 1000000
wait_http http://127.0.0.1:18301/ping
curl -sf -XPOST http://127.0.0.1:18301/query --data-urlencode 'q=CREATE DATABASE bench' >/dev/null
# 1,000 hosts in 10 dcs, a point every 10 s each: float v, integer n.
python3 - "$POINTS" <<'EOF'
import sys, urllib.request
points = int(sys.argv[1]); hosts = 1000; batch = []
def send():
    body = "".join(batch).encode()
    r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:18301/write?db=bench", data=body, method="POST"))
    assert r.status == 204, r.status
    batch.clear()
for i in range(points):
    h, t = i % hosts, i // hosts
    batch.append(f"m,host=h{h},dc=dc{h % 10} v={(i % 977) * 0.5},n={i % 1013}i {1_600_000_000 + t * 10}000000000\n")
    if len(batch) == 100_000: send()
if batch: send()
EOF
for _ in $(seq 3000); do
  [ "$(curl -sf http://127.0.0.1:18301/health | python3 -c 'import json,sys; print(json.load(sys.stdin)["wal"]["unflushed_points"])')" = 0 ] && break
  sleep 0.2
done
# shellcheck disable=SC2086 # OLD_ENV: words, each VAR=value
node old "$OLD_BIN" 18302 "$OLD_MAX_ROWS" $OLD_ENV
# shellcheck disable=SC2086
node olddefault "$OLD_BIN" 18303 1000000 $OLD_ENV
wait_http http://127.0.0.1:18302/ping
wait_http http://127.0.0.1:18303/ping
stored=$(for p in 18311 18312; do curl -sf "http://127.0.0.1:$p/" --data-binary 'SELECT count() FROM __shard_bench.m'; done | paste -sd+ | bc)
echo "points on the shards: $stored"
OLD=http://127.0.0.1:18302 NEW=http://127.0.0.1:18301 OLD_DEFAULT=http://127.0.0.1:18303 \
  STORED=$stored python3 scripts/cluster_pushdown_ab.py "$REPS" | tee "$WORK/result.txt"
{
  echo "# Aggregates on a two-shard ClickHouse 18.16 cluster: a previous build against this one"
  echo
  echo "Issue #43. \`scripts/cluster_pushdown_bench.sh\` ($(date -u +%Y-%m-%dT%H:%MZ)): $stored points of \`m\`"
  echo "(1,000 hosts in 10 dcs, a point every 10 s, float \`v\`, integer \`n\`) on two ClickHouse 18.16"
  echo "servers on loopback, written through the new node; the old build (\`$(basename "$OLD_BIN")\`${OLD_ENV:+ with \`$OLD_ENV\`}: $OLD_WHAT)"
  echo "and this one (\`$(git rev-parse --short HEAD)\`) read the same shards, interleaved, $REPS rounds, wall time"
  echo "of one \`/query\` over HTTP (everything: the shards' work, the transfer, the node's; \"new first\": the"
  echo "new node's first read of the statement, the first of all loading the shards' indexes). The old node runs"
  echo "with \`[sql] max_result_rows = $OLD_MAX_ROWS\`; \"old at max_result_rows 1M\": its answer at the default."
  echo "Shards, nodes and the client share the host's cores."
  echo
  echo '```'
  echo "date: $(date -u)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'
  free -g | head -2
  uname -r
  echo "load average at the end: $(cat /proc/loadavg)"
  echo '```'
  echo
  cat "$WORK/result.txt"
} >"$OUT"
echo "written: $OUT"
