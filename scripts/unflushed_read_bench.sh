#!/usr/bin/env bash
# What reading acknowledged-but-unflushed points costs (issue #23, read-your-writes): the same
# data read from the engine's table, from memory (every point still unflushed: the worst case,
# where a query reads nothing but in-memory rows), and from InfluxDB 1.x right after it was
# written. Never part of CI.
#
#   scripts/unflushed_read_bench.sh                   the defaults below (~5 min on 2 cores)
#   POINTS=200000 PANEL_RUNS=5 ALL_HOSTS_RUNS=2 scripts/unflushed_read_bench.sh   a smoke run
#
# Three servers on a fresh temp dir each, loopback ports: InfluxDB 1.x (Debian's `influxdb`),
# chingest with the default [flush] ("chingest": waited until /health shows every point in the
# engine), and the same chingest build with [flush] max_age_ms = 1 h and max_points_per_batch =
# 100M ("chingest-unflushed": nothing is inserted by age or size during the run). Each gets one
# seed point first (host-00000, 1 h before the data, every field), and chingest-unflushed one
# query that makes its flusher insert the seed (the table and its columns must exist for a read
# to combine them with unflushed rows); then the same POINTS points of `cpu` (`chingest-load
# fill`: HOSTS series, FIELDS fields over SPAN_SECS) go to each in turn; then `chingest-load
# query` times the query benchmark's shapes (panel, all hosts, lastpoint) with the servers
# interleaved and every answer compared. /health of chingest-unflushed is recorded before and
# after the queries (the points must still be unflushed for the numbers to mean anything).
#
# Variables (defaults): DB (bench) PORT (18096) UNFLUSHED_PORT (18097) INFLUX_PORT (18196)
#   INFLUX_RPC_PORT (18197) POINTS (1728000) HOSTS (200) FIELDS (8) SPAN_SECS (86400)
#   START_NS (2026-01-01) BATCH (48000) CONCURRENCY (4) WARMUP (2) PANEL_RUNS (20)
#   ALL_HOSTS_RUNS (5) RESULTS (test_results/latest) INFLUXD (influxd) SKIP_BUILD (0) KEEP_TMP (0)
# Results: $RESULTS/unflushed_read.{json,md}.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

DB=${DB:-bench}
PORT=${PORT:-18096}
UNFLUSHED_PORT=${UNFLUSHED_PORT:-18097}
INFLUX_PORT=${INFLUX_PORT:-18196}
INFLUX_RPC_PORT=${INFLUX_RPC_PORT:-18197}
POINTS=${POINTS:-1728000}
HOSTS=${HOSTS:-200}
FIELDS=${FIELDS:-8}
SPAN_SECS=${SPAN_SECS:-86400}
START_NS=${START_NS:-1767225600000000000}
BATCH=${BATCH:-48000}
CONCURRENCY=${CONCURRENCY:-4}
WARMUP=${WARMUP:-2}
PANEL_RUNS=${PANEL_RUNS:-20}
ALL_HOSTS_RUNS=${ALL_HOSTS_RUNS:-5}
RESULTS=${RESULTS:-test_results/latest}
SAY_AS=unflushed_read_bench
# shellcheck source=scripts/lib/bench_env.sh
. "$ROOT/scripts/lib/bench_env.sh"
command -v "$INFLUXD" >/dev/null || die "$INFLUXD not found: install InfluxDB 1.x (apt-get install influxdb)"

BENCH_NAME=unflushed-read
# shellcheck source=scripts/lib/servers.sh
. "$ROOT/scripts/lib/servers.sh"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "building release binaries (chingest, chingest-load)"
  cargo build --release -p chingest -p load
fi

unflushed() { # port: /health's unflushed points
  curl -s "http://127.0.0.1:$1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["wal"]["unflushed_points"])'
}
seed() { # port
  local t=$((START_NS - 3600000000000))
  curl -sf -o /dev/null -XPOST "http://127.0.0.1:$1/write?db=$DB" --data-binary \
    "cpu,host=host-00000,region=us-east-1 usage_user=0,usage_system=0,procs=0i,throttled=false,governor=\"ok\",usage_idle=0,ctx_switches=0i,usage_iowait=0 $t" \
    || die "seed write to port $1 failed"
}
fill() { # server-name port out
  say "fill $1: $POINTS points over $SPAN_SECS s"
  "$LOAD" fill --server "$1" --url "http://127.0.0.1:$2/write?db=$DB" --points "$POINTS" \
    --hosts "$HOSTS" --fields "$FIELDS" --start-ns "$START_NS" --span-secs "$SPAN_SECS" \
    --batch "$BATCH" --concurrency "$CONCURRENCY" --out "$3"
}

start_influxd
start_chingest flushed "$PORT"
SERVER_CONFIG_EXTRA="[flush]
max_age_ms = 3600000
max_points_per_batch = 100000000" start_chingest unflushed "$UNFLUSHED_PORT"
for p in "$INFLUX_PORT" "$PORT" "$UNFLUSHED_PORT"; do seed "$p"; done
# The read finds no table yet and has the flusher insert the seed at once.
curl -sf -o /dev/null "http://127.0.0.1:$UNFLUSHED_PORT/query" --data-urlencode "db=$DB" \
  --data-urlencode "q=SELECT count(usage_user) FROM cpu" || die "seed query failed"
fill influxdb "$INFLUX_PORT" "$TMP/fill-influxdb.json"
fill chingest-unflushed "$UNFLUSHED_PORT" "$TMP/fill-unflushed.json"
fill chingest "$PORT" "$TMP/fill-chingest.json"
lag=$(wait_flushed "$PORT")
before=$(unflushed "$UNFLUSHED_PORT")
say "chingest flushed ${lag} s after its last write; chingest-unflushed holds $before unflushed points"
"$LOAD" query --phase "$(python3 -c "print(f'{$POINTS/1e6:g}M')") just written" --db "$DB" \
  --warmup "$WARMUP" --panel-runs "$PANEL_RUNS" --all-hosts-runs "$ALL_HOSTS_RUNS" \
  --panel-clients 1 --all-hosts-clients 1 --results "$RESULTS" --name unflushed_read \
  --server "influxdb=http://127.0.0.1:$INFLUX_PORT" --server "chingest=http://127.0.0.1:$PORT" \
  --server "chingest-unflushed=http://127.0.0.1:$UNFLUSHED_PORT" \
  --ingest "$TMP/fill-influxdb.json" --ingest "$TMP/fill-chingest.json" --ingest "$TMP/fill-unflushed.json" \
  --note "InfluxDB $("$INFLUXD" version 2>/dev/null | sed 's/^InfluxDB //'), default settings; queried right after its writes (no settle time for any server)." \
  --note "chingest: default [flush]; /health showed every point in the engine ${lag} s after its last write." \
  --note "chingest-unflushed: the same build, [flush] max_age_ms = 3600000 and max_points_per_batch = 100000000: $before of the $((POINTS + 1)) points were unflushed when the queries started and $(unflushed "$UNFLUSHED_PORT") when they ended, so its answers were read from memory (an Arrow batch per statement, the query's time range of the unflushed rows) beside the table's one seed point, merged." \
  --note "[sql]: $(echo "$SQL_CONFIG" | tr '\n' ';' | sed 's/;$//; s/;/, /g'); everything else default." \
  >/dev/null || say "a query failed: recorded in $RESULTS/unflushed_read.md"
say "results: $RESULTS/unflushed_read.md"
