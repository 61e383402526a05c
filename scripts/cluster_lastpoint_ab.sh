#!/usr/bin/env bash
# Issue #43, `lastpoint` on a cluster: TSBS query types against several chingest builds
# reading the same two ClickHouse 18.16 shards (Debian's clickhouse-server, loopback), every
# query sent to each server in turn (`chingest-load tsbs-query`: a same-run, interleaved A/B),
# beside the embedded engine path (hot store off) of the first build on the same points. One
# node ("new", BIN) writes the points; the others read them through the shards. The pattern of
# cluster_floor_ab.sh, on ports of its own (PORT=<first of 40>, default 19400).
#
# Usage: BIN=<new chingest> BASE=<old chingest> LOAD=<chingest-load> [HOSTS=200] [HOURS=4]
#        [QUERIES=20] [TYPES=lastpoint] [OUT=/tmp/cluster-lastpoint] [PORT=19400]
#        [VARIANT=new-off=CHINGEST_CLUSTER_LAST_POINTS=0]
#        [RUST_LOG=info,cluster::http=debug] scripts/cluster_lastpoint_ab.sh
# Servers: embedded (BIN, engine = "embedded", the reference answers), new (BIN), a variant of
# new (VARIANT=<name>=<VAR=value>: BIN with that environment; default new-off, every read
# asking the shards), base (BASE). Then TSBS's lastpoint statement QUERIES times on each in
# turn with each `Server-Timing` stage (scripts/cluster_stages.py).
# Results: $OUT/tsbs_bench.md, $OUT/stages.md, and the nodes' logs ($OUT/<server>.log).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BIN:?BIN=<new chingest>}" "${BASE:?BASE=<old chingest>}" "${LOAD:?LOAD=<chingest-load>}"
OUT=${OUT:-/tmp/cluster-lastpoint}
P=${PORT:-19400}
CH=${CHINGEST_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
HOSTS=${HOSTS:-200}
HOURS=${HOURS:-4}
VARIANT=${VARIANT:-new-off=CHINGEST_CLUSTER_LAST_POINTS=0}
VARIANT_NAME=${VARIANT%%=*}
WORK=$(mktemp -d /tmp/cluster-lastpoint.XXXXXX)
pids=()
say() { echo "cluster_lastpoint_ab: $*" >&2; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # The nodes' logs (with RUST_LOG=cluster::http=debug: every shard request and its time).
  mkdir -p "$OUT" && cp "$WORK"/*.log "$OUT/" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=lib/clickhouse_shards.sh
source scripts/lib/clickhouse_shards.sh

shard "$WORK/s0" $((P + 11)) $((P + 21))
shard "$WORK/s1" $((P + 12)) $((P + 22))
wait_http "http://127.0.0.1:$((P + 11))/?query=SELECT%201"
wait_http "http://127.0.0.1:$((P + 12))/?query=SELECT%201"

node() { # name port engine command...
  local name=$1 port=$2 engine=$3
  shift 3
  cat >"$WORK/$name.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
request_timeout_secs = 330

[storage]
data_dir = "$WORK/$name-data"

[sql]
max_concurrent_queries = 8
max_result_rows = 10000000
max_memory_bytes = 4294967296
max_execution_secs = 300
TOML
  if [ "$engine" = clickhouse ]; then
    cat >>"$WORK/$name.toml" <<TOML

[storage.clickhouse]
shards = ["http://127.0.0.1:$((P + 11))", "http://127.0.0.1:$((P + 12))"]
node = "$name"
timeout_secs = 120
TOML
  fi
  env CHINGEST_STORAGE__ENGINE="$engine" CHINGEST_HOT__ENABLED=false "$@" serve --config "$WORK/$name.toml" \
    >"$WORK/$name.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$port/ping"
}

flushed() { # port
  until curl -s "http://127.0.0.1:$1/health" | python3 -c 'import json,sys
w=json.load(sys.stdin)["wal"]
sys.exit(0 if w["unflushed_points"] == 0 and w["flushed_seq"] is not None and w["flushed_seq"] >= w["last_seq"] else 1)'; do
    sleep 0.5
  done
}

node embedded $((P + 31)) embedded "$BIN"
node new $((P + 32)) clickhouse "$BIN"
data=(--hosts "$HOSTS" --hours "$HOURS" --db benchmark)
for s in embedded=$((P + 31)) new=$((P + 32)); do
  say "fill ${s%=*}: $HOSTS hosts × $HOURS h, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  "$LOAD" tsbs-fill --server "${s%=*}=http://127.0.0.1:${s#*=}" "${data[@]}" \
    --batch $((HOSTS * 10)) --concurrency 4 --out "$WORK/fill-${s%=*}.json"
  flushed "${s#*=}"
done
node "$VARIANT_NAME" $((P + 33)) clickhouse env "${VARIANT#*=}" "$BIN"
node base $((P + 34)) clickhouse "$BASE"
say "settling 30 s"
sleep 30
mkdir -p "$OUT"
say "queries: load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$LOAD" tsbs-query --phase "$HOSTS hosts" "${data[@]}" --types "${TYPES:-lastpoint}" \
  --server embedded=http://127.0.0.1:$((P + 31)) --server new=http://127.0.0.1:$((P + 32)) \
  --server "$VARIANT_NAME=http://127.0.0.1:$((P + 33))" --server base=http://127.0.0.1:$((P + 34)) \
  --fill "$WORK/fill-embedded.json" --fill "$WORK/fill-new.json" \
  --fill "$WORK/fill-new.json" --fill "$WORK/fill-new.json" \
  --queries "${QUERIES:-20}" --results "$OUT" \
  --note "cluster_lastpoint_ab.sh: new=$BIN, $VARIANT_NAME=${VARIANT#*=} $BIN, base=$BASE; one node (new) wrote the points, the other cluster nodes read them through the same two 18.16 shards; hot store off everywhere." \
  >/dev/null
say "stages: load average $(cut -d' ' -f1-3 /proc/loadavg)"
QUERIES=${QUERIES:-20} scripts/cluster_stages.py \
  'SELECT * from cpu group by "hostname" order by time desc limit 1' benchmark \
  embedded=http://127.0.0.1:$((P + 31)) new=http://127.0.0.1:$((P + 32)) \
  "$VARIANT_NAME=http://127.0.0.1:$((P + 33))" base=http://127.0.0.1:$((P + 34)) >"$OUT/stages.md"
# Who read the catalog (the statements' own reads waited; `ahead` ones did not).
for s in new=$((P + 32)) "$VARIANT_NAME=$((P + 33))" base=$((P + 34)); do
  echo "${s%=*}: $(curl -s "http://127.0.0.1:${s#*=}/metrics" | grep '^chingest_cluster_catalog_refreshes_total' | tr '\n' ' ')" >>"$OUT/stages.md"
done
cat "$OUT/stages.md" >&2
say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
say "done: $OUT/tsbs_bench.md"
