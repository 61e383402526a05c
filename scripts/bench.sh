#!/usr/bin/env bash
# Every-layer benchmark: engine ceiling (chdb_raw) → flush → end-to-end ramp
# (open model) → soak at the sustainable rate + closed-model contrast →
# overload (1×, 2×, 1× the sustainable rate on a fresh server), then
# regenerates the report page.
#
#   scripts/bench.sh                       full run with the defaults below
#   RATES=2,4,8 STEP_SECS=5 scripts/bench.sh   a quick smoke run
#   SKIP_ENGINE=1 scripts/bench.sh         reuse test_results/latest/chdb_raw.json and flush.json
#   SKIP_CLIENT_CEILING=1                  skip the load generator's own ceiling (ramp against a null sink)
#   SOAK_SECS=0                            skip the soak (the ramp's sustainable rate held for SOAK_SECS, default 180;
#                                          if it does not hold, lower ramp rates, SOAK_TRIES in all, default 2)
#   SKIP_PERF=1                            no perf profile of the server during the soak
#   SKIP_OVERLOAD=1                        no overload phase
#   ONLY=overload scripts/bench.sh         only the overload phase (and the page): reuses the sustainable
#                                          rate found in $RESULTS, replaces only $RESULTS/overload.{json,md}
#
# Overload (issue #15: refusals fast, memory under the budget, throughput back): on a fresh server,
# OVERLOAD_BASE_RATE req/s (default: the highest soak rate that held in $RESULTS, else the ramp's
# sustainable step) for OVERLOAD_WARM_SECS (30), OVERLOAD_FACTOR (2) × it for OVERLOAD_SECS (60),
# then the base rate again for OVERLOAD_RECOVER_SECS (60); the server's RSS every OVERLOAD_RSS_MS (250).
# Its requests carry OVERLOAD_POINTS points (default POINTS: the ramp's own 7.8 MB requests, the
# hardest case on shared cores; OVERLOAD_POINTS=5000 is Telegraf-sized, docs/reliability.md has
# both). The base rate keeps its points/s: OVERLOAD_BASE_RATE and the sustainable rate are in
# requests of POINTS points, scaled by POINTS / OVERLOAD_POINTS.
#
# Everything is a variable with a default, so the script is easy to adapt:
#   PORT (18086)  DB (bench)  WRITE_URL (v1 /write on PORT)  TOKEN (none)
#   RATES requests/s per step (each request carries POINTS points)
#   STEP_SECS (15)  MAX_IN_FLIGHT (64)  BUDGET_MS (250)  VUS (1,4,16,64)  CLOSED_STEP_SECS (10)
#   FORMAT (lp | msgpack-row | msgpack-columnar)  GZIP (0)  POINTS (50000)  FILES (16)  HOSTS (1000)  FIELDS (6)
#   RESULTS (test_results/latest)  REPORT (docs/benchmarks.md)  SINK_PORT (18087)  CLIENT_RATES (1×,2×,4× the top rate)
#   SERVER_CONFIG_EXTRA: extra TOML appended to the generated server config
#   SERVER_CMD: how to start the server; gets the config path appended
#               (default: "<target>/release/chingest serve --config")
#   KEEP_TMP=1 keeps the temporary data dir and server log; SKIP_BUILD=1 uses the binaries as they are.
#
# All traffic goes to 127.0.0.1. Results land in $RESULTS (relative to the repo root).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PORT=${PORT:-18086}
DB=${DB:-bench}
WRITE_URL=${WRITE_URL:-"http://127.0.0.1:$PORT/write?db=$DB"}
TOKEN=${TOKEN:-}
# 50,000 points per request: 4 req/s = 200k points/s ... 48 req/s = 2.4M points/s.
RATES=${RATES:-4,8,12,16,20,24,28,32,40,48}
STEP_SECS=${STEP_SECS:-15}
MAX_IN_FLIGHT=${MAX_IN_FLIGHT:-64}
BUDGET_MS=${BUDGET_MS:-250}
VUS=${VUS:-1,4,16,64}
CLOSED_STEP_SECS=${CLOSED_STEP_SECS:-10}
SOAK_SECS=${SOAK_SECS:-180}
SOAK_TRIES=${SOAK_TRIES:-2}
FORMAT=${FORMAT:-lp}
GZIP=${GZIP:-0}
POINTS=${POINTS:-50000}
FILES=${FILES:-16}
HOSTS=${HOSTS:-1000}
FIELDS=${FIELDS:-6}
RESULTS=${RESULTS:-test_results/latest}
REPORT=${REPORT:-docs/benchmarks.md}
SKIP_ENGINE=${SKIP_ENGINE:-0}
SKIP_CLIENT_CEILING=${SKIP_CLIENT_CEILING:-0}
SINK_PORT=${SINK_PORT:-18087}
ONLY=${ONLY:-}
SKIP_OVERLOAD=${SKIP_OVERLOAD:-0}
OVERLOAD_BASE_RATE=${OVERLOAD_BASE_RATE:-}
OVERLOAD_FACTOR=${OVERLOAD_FACTOR:-2}
OVERLOAD_POINTS=${OVERLOAD_POINTS:-$POINTS}
OVERLOAD_WARM_SECS=${OVERLOAD_WARM_SECS:-30}
OVERLOAD_SECS=${OVERLOAD_SECS:-60}
OVERLOAD_RECOVER_SECS=${OVERLOAD_RECOVER_SECS:-60}
OVERLOAD_RSS_MS=${OVERLOAD_RSS_MS:-250}
case "$ONLY" in
  "" | overload) ;;
  *) echo "bench: ONLY=$ONLY: only 'overload' is supported" >&2; exit 1 ;;
esac
# The client ceiling runs at 1×, 2× and 4× the ramp's highest rate.
CLIENT_RATES=${CLIENT_RATES:-$(echo "$RATES" | tr ',' '\n' | tail -n 1 | awk '{print $1 "," 2*$1 "," 4*$1}')}

# cargo honours CARGO_TARGET_DIR, then .cargo/config.toml (target/ by default).
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET/release
SERVER_CMD=${SERVER_CMD:-"$BIN/chingest serve --config"}

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }
command -v curl >/dev/null || die "curl is needed to probe the server (apt-get install curl)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/chingest-bench.XXXXXX")
SERVER_PID=
SINK_PID=
cleanup() {
  [ -n "$SINK_PID" ] && kill -TERM "$SINK_PID" 2>/dev/null || true
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    # Graceful shutdown flushes what is buffered; give it time, then insist.
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  if [ "${KEEP_TMP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "building release binaries (chingest, chingest-load)"
  cargo build --release -p chingest -p load
fi

mkdir -p "$RESULTS"
RESULTS_ABS=$(cd "$RESULTS" && pwd)
if [ "$SKIP_ENGINE" != 1 ] && [ -z "$ONLY" ]; then
  # Engine benches run before the server starts, so nothing else competes for the cores.
  say "engine ceiling: cargo bench -p engine --bench chdb_raw"
  CHDB_RAW_OUT="$RESULTS_ABS" cargo bench -p engine --bench chdb_raw || say "chdb_raw failed: the report will say 'not measured'"
  if [ -f flush/benches/flush.rs ]; then
    say "flush: cargo bench -p flush --bench flush"
    FLUSH_BENCH_OUT="$RESULTS_ABS" cargo bench -p flush --bench flush || say "flush bench failed: the report will say 'not measured'"
  else
    say "no flush bench yet (flush/benches/flush.rs): skipped"
  fi
  say "engine merges: cargo bench -p engine --bench merge_cost"
  MERGE_COST_OUT="$RESULTS_ABS" cargo bench -p engine --bench merge_cost || say "merge_cost failed: the report will say 'not measured'"
  say "front door: cargo run --release -p ingest --example stage_cpu"
  STAGE_CPU_OUT="$RESULTS_ABS" cargo run -q --release -p ingest --example stage_cpu \
    || say "stage_cpu failed: the report will say 'not measured'"
  say "wal: cargo bench -p wal --bench wal_commit"
  WAL_BENCH_SECS=${WAL_BENCH_SECS:-3} WAL_BENCH_OUT="$RESULTS_ABS" cargo bench -p wal --bench wal_commit \
    || say "wal_commit failed: the report will say 'not measured'"
fi

LOAD=$BIN/chingest-load
gz=()
[ "$GZIP" = 1 ] && gz=(--gzip)
"$LOAD" gen --out "$TMP/payloads" --format "$FORMAT" "${gz[@]}" --files "$FILES" \
  --points "$POINTS" --hosts "$HOSTS" --fields "$FIELDS"

wait_ping() { # url pid what
  for i in $(seq 1 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$1/ping" || true)
    [ "$code" = 204 ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    [ "$i" = 300 ] && return 1
    sleep 0.2
  done
}

client_ceiling() {
  # The client's own ceiling on this box: the same ramp (top rates, short steps)
  # against a null server. If end-to-end gets close to it, the client is the limit.
  "$LOAD" sink --listen "127.0.0.1:$SINK_PORT" >"$TMP/sink.log" 2>&1 &
  SINK_PID=$!
  if wait_ping "http://127.0.0.1:$SINK_PORT" "$SINK_PID"; then
    say "client ceiling: ramp against the null sink"
    "$LOAD" ramp --url "http://127.0.0.1:$SINK_PORT/write?db=$DB" --payloads "$TMP/payloads" \
      --rates "$CLIENT_RATES" --step-secs 5 --max-in-flight "$MAX_IN_FLIGHT" \
      --budget-ms "$BUDGET_MS" --server-pid "$SINK_PID" --results "$RESULTS" --name client_ceiling >/dev/null
  else
    say "sink did not start: client ceiling not measured"
  fi
  kill -TERM "$SINK_PID" 2>/dev/null || true
  wait "$SINK_PID" 2>/dev/null || true
  SINK_PID=
}

# Starts a server on a fresh data dir $TMP/<name>-data (config $TMP/<name>.toml,
# log $TMP/<name>.log), creates $DB, sets SERVER_PID.
start_server() { # name
  # Something else answering on the port would be measured instead (the new
  # server then fails to bind while /ping still answers 204).
  if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/ping"; then
    die "port $PORT is already in use: stop what listens there or set PORT"
  fi
  cat > "$TMP/$1.toml" <<TOML
[server]
listen = "127.0.0.1:$PORT"

[storage]
data_dir = "$TMP/$1-data"
${SERVER_CONFIG_EXTRA:-}
TOML
  say "starting: $SERVER_CMD $TMP/$1.toml (log: $TMP/$1.log)"
  # shellcheck disable=SC2086 # SERVER_CMD is a command line on purpose.
  $SERVER_CMD "$TMP/$1.toml" >"$TMP/$1.log" 2>&1 &
  SERVER_PID=$!
  wait_ping "http://127.0.0.1:$PORT" "$SERVER_PID" && sleep 1 && kill -0 "$SERVER_PID" 2>/dev/null || {
    tail -n 30 "$TMP/$1.log" >&2
    die "server did not answer /ping with 204 within 60 s (or exited)"
  }
  say "server up (pid $SERVER_PID)"
  curl -s -o /dev/null "${auth[@]}" -XPOST "http://127.0.0.1:$PORT/query" \
    --data-urlencode "q=CREATE DATABASE $DB" || say "CREATE DATABASE $DB failed (continuing)"
}

# Graceful stop (the server flushes what it buffered), then insist.
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}

auth=()
[ -n "$TOKEN" ] && auth=(-H "Authorization: Token $TOKEN")
tok=()
[ -n "$TOKEN" ] && tok=(--token "$TOKEN")

# Engine ceiling up to the closed model, on one server.
main_phases() {
  if [ "$SKIP_CLIENT_CEILING" != 1 ]; then client_ceiling; fi
  start_server chingest
  common=(--url "$WRITE_URL" "${tok[@]}" --payloads "$TMP/payloads" --budget-ms "$BUDGET_MS"
          --server-pid "$SERVER_PID")

  say "warm-up (series creation, connection pool): first rate for 5 s, not recorded"
  "$LOAD" ramp "${common[@]}" --rates "${RATES%%,*}" --step-secs 5 \
    --max-in-flight "$MAX_IN_FLIGHT" --results "$TMP/warmup" >/dev/null

  say "open-model ramp: rates $RATES req/s × $POINTS points, $STEP_SECS s each"
  "$LOAD" ramp "${common[@]}" --rates "$RATES" --step-secs "$STEP_SECS" \
    --max-in-flight "$MAX_IN_FLIGHT" --metrics-url "http://127.0.0.1:$PORT/metrics" \
    --results "$RESULTS" --name ramp

  # Soak: the ramp's sustainable rate held for SOAK_SECS. Short ramp steps can
  # hide work a server defers (the engine's background merges grow with the data),
  # so the capacity claimed is the rate that holds for minutes, not seconds. When
  # it does not hold, the next lower ramp rate is soaked, up to SOAK_TRIES rates.
  rm -f "$RESULTS"/soak*.json "$RESULTS"/soak*.md "$RESULTS"/soak*.svg "$RESULTS/server-cpu-by-thread.txt"
  SOAK_RATES=$(python3 -c 'import json,sys
r=json.load(open(sys.argv[1])); s=(r.get("summary") or {}).get("sustainable")
if s:
    top=r["steps"][s["step"]]["offered_rps"]
    rates=sorted({st["offered_rps"] for st in r["steps"] if st.get("offered_rps") and st["offered_rps"]<=top}, reverse=True)
    print(" ".join(str(x) for x in rates[:int(sys.argv[2])]))' "$RESULTS/ramp.json" "$SOAK_TRIES" 2>/dev/null || true)
  if [ "$SOAK_SECS" -gt 0 ] && [ -n "$SOAK_RATES" ]; then
    n=0
    for rate in $SOAK_RATES; do
      n=$((n + 1))
      # Where the server's CPU goes at that rate, by thread (engine merges, engine
      # INSERT, front door, WAL): sampled by perf when it can attach.
      PERF_PID=
      if [ "${SKIP_PERF:-0}" != 1 ] && command -v perf >/dev/null \
         && perf record -q -o /dev/null -- true >/dev/null 2>&1; then
        perf record -q -F 99 -p "$SERVER_PID" -o "$TMP/perf.data" >/dev/null 2>&1 &
        PERF_PID=$!
      else
        say "perf not available: no CPU-by-thread profile"
      fi
      sleep 10 # let the previous run's backlog drain first
      say "soak $n: $rate req/s for $SOAK_SECS s"
      "$LOAD" ramp "${common[@]}" --rates "$rate" --step-secs "$SOAK_SECS" \
        --max-in-flight "$MAX_IN_FLIGHT" --metrics-url "http://127.0.0.1:$PORT/metrics" \
        --results "$RESULTS" --name "soak_$n"
      if [ -n "$PERF_PID" ]; then
        kill -INT "$PERF_PID" 2>/dev/null || true
        wait "$PERF_PID" 2>/dev/null || true
        perf report -i "$TMP/perf.data" --sort comm --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' \
          >"$RESULTS/server-cpu-by-thread.txt" || say "perf report failed: no CPU-by-thread profile"
      fi
      held=$(python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1]))["summary"].get("sustainable") else 0)' \
        "$RESULTS/soak_$n.json" 2>/dev/null || echo 0)
      [ "$held" = 1 ] && break
    done
  else
    say "no soak (SOAK_SECS=$SOAK_SECS, sustainable rate '${SOAK_RATES}')"
  fi

  say "closed-model contrast: users $VUS, $CLOSED_STEP_SECS s each"
  "$LOAD" closed "${common[@]}" --vus "$VUS" --step-secs "$CLOSED_STEP_SECS" \
    --results "$RESULTS" --name closed

  curl -s "http://127.0.0.1:$PORT/metrics" >"$RESULTS/server-metrics.txt" || true
  stop_server
}

# The sustainable rate (req/s) and where it comes from, from $RESULTS: the
# highest soak rate that held for minutes, else the ramp's sustainable step.
sustainable_rate() {
  python3 - "$RESULTS" <<'PY'
import json, os, sys
d = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
held = []
for i in range(1, 10):
    r = load(f"soak_{i}.json")
    if r is None:
        break
    if (r.get("summary") or {}).get("sustainable") and r.get("steps"):
        st = r["steps"][0]
        held.append((st["offered_rps"], f"soak_{i}.json: held for {st['duration_secs']:.0f} s"))
if held:
    rate, src = max(held)
    print(rate, src)
    sys.exit()
r = load("ramp.json")
s = ((r or {}).get("summary") or {}).get("sustainable")
if s:
    print(r["steps"][s["step"]]["offered_rps"], f"ramp.json: sustainable step {s['step']}")
PY
}

# The memory-bounding settings of the server's effective configuration, as
# --budget-part NAME=BYTES arguments (none when the server is not chingest).
budget_parts() { # config file
  "$BIN/chingest" config --check "$1" >"$TMP/effective.toml" 2>/dev/null || return 0
  python3 - "$TMP/effective.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    c = tomllib.load(f)
l, w = c["limits"], c["wal"]
print(f"--budget-part=limits.max_inflight_bytes={l['max_inflight_bytes']}")
print(f"--budget-part=limits.max_unflushed_bytes={l['max_unflushed_bytes']}")
print(f"--budget-part=wal.write_buffer_bytes × 4 (RocksDB memtables)={4 * w['write_buffer_bytes']}")
PY
}

# Overload (issue #15): 1×, OVERLOAD_FACTOR ×, 1× the sustainable rate on a fresh server.
overload_phase() {
  local base=$OVERLOAD_BASE_RATE source="OVERLOAD_BASE_RATE"
  if [ -z "$base" ]; then
    read -r base source < <(sustainable_rate) || true
  fi
  if [ -z "$base" ]; then
    say "overload skipped: no sustainable rate in $RESULTS (set OVERLOAD_BASE_RATE=<req/s>)"
    return 0
  fi
  local payloads=$TMP/payloads
  if [ "$OVERLOAD_POINTS" != "$POINTS" ]; then
    payloads=$TMP/overload-payloads
    "$LOAD" gen --out "$payloads" --format "$FORMAT" "${gz[@]}" --files "$FILES" \
      --points "$OVERLOAD_POINTS" --hosts "$HOSTS" --fields "$FIELDS" >/dev/null
    source="$source, ×$POINTS/$OVERLOAD_POINTS for $OVERLOAD_POINTS-point requests"
    base=$(python3 -c 'import sys; print(round(float(sys.argv[1]) * int(sys.argv[2]) / int(sys.argv[3]), 3))' \
      "$base" "$POINTS" "$OVERLOAD_POINTS")
  fi
  start_server overload
  local parts=()
  mapfile -t parts < <(budget_parts "$TMP/overload.toml")
  say "overload: $base req/s ($source), ×$OVERLOAD_FACTOR, 1× again; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$LOAD" overload --url "$WRITE_URL" "${tok[@]}" --payloads "$payloads" \
    --server-pid "$SERVER_PID" --metrics-url "http://127.0.0.1:$PORT/metrics" \
    --base-rate "$base" --base-source "$source" --factor "$OVERLOAD_FACTOR" \
    --warm-secs "$OVERLOAD_WARM_SECS" --overload-secs "$OVERLOAD_SECS" \
    --recover-secs "$OVERLOAD_RECOVER_SECS" --max-in-flight "$MAX_IN_FLIGHT" \
    --rss-every-ms "$OVERLOAD_RSS_MS" "${parts[@]}" --results "$RESULTS" --name overload
  stop_server
}

if [ -z "$ONLY" ]; then main_phases; fi
if [ "$ONLY" = overload ] || [ "$SKIP_OVERLOAD" != 1 ]; then
  overload_phase
fi

"$LOAD" report --results "$RESULTS" --out "$REPORT"
say "done: $REPORT"
