#!/usr/bin/env bash
# Query benchmark (issue #12): InfluxQL read latency of chingest next to
# InfluxDB 1.x, then chingest alone on a data set 10× larger; regenerates the
# report page. Never part of CI (it writes 10⁷–10⁸ points).
#
#   scripts/query_bench.sh                      both phases with the defaults below
#   ONLY=small scripts/query_bench.sh           only the side-by-side phase (ONLY=big: only chingest's)
#   POINTS=1000000 BIG_POINTS=0 PANEL_RUNS=5 ALL_HOSTS_RUNS=2 scripts/query_bench.sh   a quick smoke run
#
# Phase "small" (named after POINTS, e.g. 10M): chingest and InfluxDB 1.x (influxd, Debian's
# `influxdb` package) each on a fresh temp dir and loopback ports; the same POINTS points of
# `cpu` (HOSTS series, FIELDS fields, evenly over SPAN_SECS) written to each in turn
# (`chingest-load fill`, timed, as context); then chingest's flush lag waited to 0 (/health) and
# SETTLE_SECS more for both (InfluxDB answers right after its 204 but compacts in the background;
# chingest's engine merges parts in the background too); then `chingest-load query`: per query
# the answers are checked equal on both servers, WARMUP untimed runs, then PANEL_RUNS /
# ALL_HOSTS_RUNS timed runs per server with each client count of PANEL_CLIENTS /
# ALL_HOSTS_CLIENTS, the servers interleaved round by round.
# Phase "big" (named after BIG_POINTS, e.g. 100M): chingest alone, fresh, BIG_POINTS points,
# same series and fields over BIG_SPAN_SECS (default 10 days: the same density as the small
# phase, one point per host every 8.64 s, so the queries cover a table 10× larger), same
# queries over the data's last 1 h / 24 h (answers checked against the shape the data set
# implies), BIG_PANEL_RUNS / BIG_ALL_HOSTS_RUNS timed runs. BIG_POINTS=0 skips it.
# A query a server refuses is recorded as failed (the page says why) and the run goes on;
# answers that differ between the servers are recorded the same way.
#
# Everything is a variable with a default:
#   DB (bench)  PORT (18096, chingest)  INFLUX_PORT (18196)  INFLUX_RPC_PORT (18197)
#   POINTS (10000000)  BIG_POINTS (100000000)  HOSTS (1000)  FIELDS (2)
#   SPAN_SECS (86400)  BIG_SPAN_SECS (864000)  START_NS (2026-01-01T00:00:00Z)
#   BATCH (50000 points per write)  CONCURRENCY (4 writes in flight)  SETTLE_SECS (30)
#   WARMUP (2)  PANEL_RUNS (50)  ALL_HOSTS_RUNS (20)  PANEL_CLIENTS (1,4)  ALL_HOSTS_CLIENTS (1)
#   BIG_PANEL_RUNS (PANEL_RUNS)  BIG_ALL_HOSTS_RUNS (10)
#   RESULTS (test_results/latest)  REPORT (docs/benchmarks.md)  INFLUXD (influxd)
#   SQL_CONFIG: chingest's [sql] section for the run. InfluxQL runs in the SQL sandbox, whose
#               defaults (2 statements at once, 1,000,000 result rows, 1 GiB per statement, 20 s)
#               refuse a 4-client panel and the all-hosts answer on 10M points (1.44M rows); the
#               default below raises those, and memory and time for headroom on a busy box
#               (threads per statement stay at the default 1).
#   REQUEST_TIMEOUT_SECS (330): chingest's [server] request_timeout_secs (default 30 s, which the
#               all-hosts query on 10M points exceeds on a busy 2-core box); above max_execution_secs.
#   SERVER_CONFIG_EXTRA: more TOML appended to chingest's config
#   SERVER_CMD: how to start chingest; gets the config path appended
#               (default: "<target>/release/chingest serve --config")
#   LOAD: the chingest-load binary (default: <target>/release/chingest-load)
#   PREV_SERVER_CMD: another chingest build (e.g. the previous release, built in a git worktree:
#               "/path/to/old/chingest serve --config") timed in the small phase beside the two
#               others as "chingest-prev", on PREV_PORT (18098), filled the same way: a same-run
#               before/after of a read-path change; PREV_NAME says what it is in the report
#   KEEP_TMP=1 keeps the temp dirs and logs; SKIP_BUILD=1 uses the binaries as they are.
#
# All traffic goes to 127.0.0.1. Results: $RESULTS/query_bench.{json,md}, one entry per phase
# (a rerun replaces its phase), and the query section of $REPORT.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

DB=${DB:-bench}
PORT=${PORT:-18096}
PREV_PORT=${PREV_PORT:-18098}
INFLUX_PORT=${INFLUX_PORT:-18196}
INFLUX_RPC_PORT=${INFLUX_RPC_PORT:-18197}
POINTS=${POINTS:-10000000}
BIG_POINTS=${BIG_POINTS:-100000000}
HOSTS=${HOSTS:-1000}
FIELDS=${FIELDS:-2}
SPAN_SECS=${SPAN_SECS:-86400}
BIG_SPAN_SECS=${BIG_SPAN_SECS:-864000}
START_NS=${START_NS:-1767225600000000000}
BATCH=${BATCH:-50000}
CONCURRENCY=${CONCURRENCY:-4}
SETTLE_SECS=${SETTLE_SECS:-30}
WARMUP=${WARMUP:-2}
PANEL_RUNS=${PANEL_RUNS:-50}
ALL_HOSTS_RUNS=${ALL_HOSTS_RUNS:-20}
PANEL_CLIENTS=${PANEL_CLIENTS:-1,4}
ALL_HOSTS_CLIENTS=${ALL_HOSTS_CLIENTS:-1}
BIG_PANEL_RUNS=${BIG_PANEL_RUNS:-$PANEL_RUNS}
BIG_ALL_HOSTS_RUNS=${BIG_ALL_HOSTS_RUNS:-10}
RESULTS=${RESULTS:-test_results/latest}
REPORT=${REPORT:-docs/benchmarks.md}
INFLUXD=${INFLUXD:-influxd}
ONLY=${ONLY:-}
case "$ONLY" in
  "" | small | big) ;;
  *) echo "query_bench: ONLY=$ONLY: use small or big" >&2; exit 1 ;;
esac

SAY_AS=query_bench
# shellcheck source=scripts/lib/bench_env.sh
. "$ROOT/scripts/lib/bench_env.sh"

# 10000000 → 10M, 100000000 → 100M, 2500000 → 2.5M.
label() { python3 -c 'import sys; n=int(sys.argv[1]); print(next((f"{n/d:g}{s}" for d, s in ((10**9,"G"),(10**6,"M"),(10**3,"k")) if n >= d), str(n)))' "$1"; }

BENCH_NAME=query-bench
# shellcheck source=scripts/lib/servers.sh
. "$ROOT/scripts/lib/servers.sh"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "building release binaries (chingest, chingest-load)"
  cargo build --release -p chingest -p load
fi
[ "$ONLY" = big ] || command -v "$INFLUXD" >/dev/null \
  || die "$INFLUXD not found: install InfluxDB 1.x (apt-get install influxdb) or run ONLY=big"

fill() { # server-name port points span out
  say "fill $1: $3 points over $4 s, load average $(loadavg)"
  "$LOAD" fill --server "$1" --url "http://127.0.0.1:$2/write?db=$DB" --points "$3" \
    --hosts "$HOSTS" --fields "$FIELDS" --start-ns "$START_NS" --span-secs "$4" \
    --batch "$BATCH" --concurrency "$CONCURRENCY" --out "$5"
}

query() { # phase panel-runs all-hosts-runs, then --server/--ingest/--note arguments
  local phase=$1 panel=$2 all=$3
  shift 3
  say "queries ($phase): load average $(loadavg)"
  "$LOAD" query --phase "$phase" --db "$DB" --warmup "$WARMUP" \
    --panel-runs "$panel" --all-hosts-runs "$all" \
    --panel-clients "$PANEL_CLIENTS" --all-hosts-clients "$ALL_HOSTS_CLIENTS" \
    --results "$RESULTS" "$@" >/dev/null \
    || say "a query failed ($phase): recorded in $RESULTS/query_bench.md"
}

sql_note() {
  echo "chingest's settings for this run: [server] request_timeout_secs = $REQUEST_TIMEOUT_SECS; [sql] (InfluxQL runs in the SQL sandbox) $(echo "$SQL_CONFIG" | tr '\n' ';' | sed 's/;$//; s/;/, /g'); everything else default ([sql] max_threads: 1 engine thread per statement up to e3fef20; from then 0, the cores ingest left idle). With the defaults the all-hosts answer (1.44M rows) is refused by [sql] max_result_rows (1,000,000); with only that raised it answered within the default memory (1 GiB, a GROUP BY spills past half) and time (20 s) limits on a quiet box (docs/influxql.md); the rest is raised for headroom on a busy one."
}

small_phase() {
  local name
  name=$(label "$POINTS")
  local prev=() prev_ingest=() prev_pid=
  start_influxd
  if [ -n "${PREV_SERVER_CMD:-}" ]; then
    start_chingest prev "$PREV_PORT" "$PREV_SERVER_CMD"
    prev_pid=$CH_PID
  fi
  start_chingest small
  fill influxdb "$INFLUX_PORT" "$POINTS" "$SPAN_SECS" "$TMP/fill-influxdb.json"
  if [ -n "$prev_pid" ]; then
    fill chingest-prev "$PREV_PORT" "$POINTS" "$SPAN_SECS" "$TMP/fill-prev.json"
    say "chingest-prev flushed $(wait_flushed "$PREV_PORT") s after its last write"
    prev=(--server "chingest-prev=http://127.0.0.1:$PREV_PORT")
    prev_ingest=(--ingest "$TMP/fill-prev.json"
      --note "chingest-prev: ${PREV_NAME:-$PREV_SERVER_CMD}, the same settings and data, written after InfluxDB and before chingest.")
  fi
  fill chingest "$PORT" "$POINTS" "$SPAN_SECS" "$TMP/fill-chingest.json"
  local lag
  lag=$(wait_flushed)
  say "chingest flushed ${lag} s after its last write; settling $SETTLE_SECS s"
  sleep "$SETTLE_SECS"
  query "$name" "$PANEL_RUNS" "$ALL_HOSTS_RUNS" --server "influxdb=http://127.0.0.1:$INFLUX_PORT" --server "chingest=http://127.0.0.1:$PORT" \
    "${prev[@]}" --ingest "$TMP/fill-influxdb.json" --ingest "$TMP/fill-chingest.json" "${prev_ingest[@]}" \
    --note "InfluxDB $("$INFLUXD" version 2>/dev/null | sed 's/^InfluxDB //'), default settings (temp dir, loopback; reporting, monitor store, query log and continuous queries off); written first, then chingest; both servers ran throughout." \
    --note "Queryable: chingest's /health showed every acknowledged point in the engine ${lag} s after its last write; InfluxDB answers a point right after its 204. Then both settled ${SETTLE_SECS} s more (a fixed time: InfluxDB compacts its TSM files and chingest's engine merges parts in the background; both may still be doing so during the queries)." \
    --note "$(sql_note)"
  stop "$CH_PID"
  [ -z "$prev_pid" ] || stop "$prev_pid"
  stop "$INFLUX_PID"
}

big_phase() {
  local name
  name=$(label "$BIG_POINTS")
  start_chingest big
  fill chingest "$PORT" "$BIG_POINTS" "$BIG_SPAN_SECS" "$TMP/fill-big.json"
  local lag
  lag=$(wait_flushed)
  say "chingest flushed ${lag} s after its last write; settling $SETTLE_SECS s"
  sleep "$SETTLE_SECS"
  query "$name" "$BIG_PANEL_RUNS" "$BIG_ALL_HOSTS_RUNS" --server "chingest=http://127.0.0.1:$PORT" --ingest "$TMP/fill-big.json" \
    --note "chingest alone (InfluxDB not running). Queryable: /health showed every acknowledged point in the engine ${lag} s after the last write, then ${SETTLE_SECS} s more (the engine's background merges may still run during the queries)." \
    --note "$(sql_note)"
  stop "$CH_PID"
}

[ "$ONLY" = big ] || small_phase
if [ "$ONLY" != small ] && [ "$BIG_POINTS" -gt 0 ]; then big_phase; fi

"$LOAD" report --results "$RESULTS" --out "$REPORT"
say "done: $RESULTS/query_bench.md and $REPORT"
