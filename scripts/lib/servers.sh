# Shared by scripts/query_bench.sh and scripts/tsbs_bench.sh (sourced, not run):
# a temp dir, chingest and InfluxDB 1.x started on it on loopback, stopped on exit.
#
# The caller sets: PORT, INFLUX_PORT, INFLUX_RPC_PORT, DB, INFLUXD, SERVER_CMD,
# REQUEST_TIMEOUT_SECS, SQL_CONFIG, SERVER_CONFIG_EXTRA (optional), and say/die;
# CREATE_DB=0 leaves creating the database to the caller (default 1: POST CREATE DATABASE $DB).
# shellcheck shell=bash

TMP=$(mktemp -d "${TMPDIR:-/tmp}/chingest-${BENCH_NAME:-bench}.XXXXXX")
PIDS=()
stop() { # pid: graceful, then insist
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  for p in "${PIDS[@]}"; do stop "$p"; done
  if [ "${KEEP_TMP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

wait_ping() { # url pid log
  for _ in $(seq 1 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/ping" || true)" = 204 ] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.2
  done
  tail -n 30 "$3" >&2
  die "$1 did not answer /ping with 204 within 60 s (or exited)"
}

create_db() { # base url
  [ "${CREATE_DB:-1}" = 1 ] || return 0
  curl -sf -o /dev/null -XPOST "$1/query" --data-urlencode "q=CREATE DATABASE $DB" \
    || die "CREATE DATABASE $DB failed on $1"
}

CH_PID=
start_chingest() { # name [port [command]]
  local port=${2:-$PORT} cmd=${3:-$SERVER_CMD}
  cat > "$TMP/$1.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
request_timeout_secs = $REQUEST_TIMEOUT_SECS

[storage]
data_dir = "$TMP/$1-data"

[sql]
$SQL_CONFIG
${SERVER_CONFIG_EXTRA:-}
TOML
  say "starting: $cmd $TMP/$1.toml (log: $TMP/$1.log)"
  # shellcheck disable=SC2086 # SERVER_CMD is a command line on purpose.
  $cmd "$TMP/$1.toml" >"$TMP/$1.log" 2>&1 &
  CH_PID=$!
  PIDS+=("$CH_PID")
  wait_ping "http://127.0.0.1:$port" "$CH_PID" "$TMP/$1.log"
  create_db "http://127.0.0.1:$port"
}

# InfluxDB 1.x on a temp dir, loopback only: no usage reporting, no _internal
# database, no query log (the same config as the differential test's).
INFLUX_PID=
start_influxd() {
  local d=$TMP/influxdb
  mkdir -p "$d"
  cat > "$d/influxdb.conf" <<TOML
reporting-enabled = false
bind-address = "127.0.0.1:$INFLUX_RPC_PORT"
[meta]
  dir = "$d/meta"
[data]
  dir = "$d/data"
  wal-dir = "$d/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[http]
  bind-address = "127.0.0.1:$INFLUX_PORT"
  log-enabled = false
[logging]
  level = "warn"
  suppress-logo = true
TOML
  say "starting: $INFLUXD -config $d/influxdb.conf ($("$INFLUXD" version 2>/dev/null || echo '?'))"
  "$INFLUXD" -config "$d/influxdb.conf" >"$d/influxd.log" 2>&1 &
  INFLUX_PID=$!
  PIDS+=("$INFLUX_PID")
  wait_ping "http://127.0.0.1:$INFLUX_PORT" "$INFLUX_PID" "$d/influxd.log"
  create_db "http://127.0.0.1:$INFLUX_PORT"
}

# Seconds until chingest's /health (on port $1, default PORT) says every acknowledged point
# reached the engine.
# Has chingest on port $1 read what statement $3 (database $2) reads into its hot store and
# waits until it holds it: under `[hot] hold = "read"` (the default) a statement makes its
# measurement wanted, and reads take the engine path until the refill from the engine ends
# (18 s for TSBS's 8.64M points at 1,000 hosts: the first query types would time the engine).
# Prints the seconds waited; about 1 with the hot store off.
wait_hot() {
  local port=$1 t0=$SECONDS
  curl -sf -o /dev/null -G "http://127.0.0.1:$port/query" --data-urlencode "db=$2" \
    --data-urlencode "q=$3" || die "the hot store's first read failed on port $port"
  sleep 1
  until curl -s "http://127.0.0.1:$port/metrics" | python3 -c 'import sys
m = {}
for line in sys.stdin:
    if line.startswith("chingest_hot_measurements{"):
        key, value = line.rsplit(" ", 1)
        m[key.split(chr(34))[1]] = float(value)
sys.exit(0 if m.get("pending", 0) == 0 and m.get("served", 0) >= m.get("wanted", 0) else 1)'; do
    [ $((SECONDS - t0)) -lt 600 ] || die "chingest's hot store did not fill within 600 s"
    sleep 0.5
  done
  echo $((SECONDS - t0))
}

wait_flushed() {
  local t0=$SECONDS
  until curl -s "http://127.0.0.1:${1:-$PORT}/health" | python3 -c 'import json,sys
w=json.load(sys.stdin)["wal"]
sys.exit(0 if w["unflushed_points"] == 0 and w["flushed_seq"] is not None and w["flushed_seq"] >= w["last_seq"] else 1)'; do
    [ $((SECONDS - t0)) -lt 600 ] || die "chingest did not flush within 600 s"
    sleep 0.5
  done
  echo $((SECONDS - t0))
}

