#!/usr/bin/env bash
# Dashboard benchmark (issue #44): a wall of Grafana panels (deploy/grafana's host dashboard,
# its InfluxQL panels repeated to PANELS, each pass another host and the next of VIEWS)
# refreshed every REFRESH_SECS on chingest (hot store on) and on InfluxDB 1.x while each
# ingests, one server at a time, ROUNDS rounds of PHASE_SECS each, the order alternating;
# then every panel's answer compared between them. Never part of CI.
#
#   scripts/dashboard_bench.sh            20 panels, 100 hosts, 5 minutes each (2 × 150 s),
#                                         about 12 minutes in all (6 h of data written first)
#   PHASE_SECS=30 ROUNDS=1 scripts/dashboard_bench.sh     a smoke run (about 3 minutes)
#
# VIEWS (1h,6h,1h:all): tab after tab (8 panels each), the range and `$host`: one host, or
# `:all` = All (every host, as Grafana expands it). Grafana's $__interval for 1,920 px.
# Data: HOSTS hosts report as Telegraf does (cpu, mem, disk, net, system, every 10 s), an hour
# of it before the first phase, into database `telegraf`. Beside the panels, WRITE_RATE
# requests/s of 5,000-point line-protocol payloads (`chingest-load gen`, 1,000 hosts) go to the
# server's database `load` (open model, 64 in flight): by default 80/s = 400,000 points/s, half
# of the sustainable rate measured on the 2-core machine (test_results/history/ab_stop42_split.md);
# set it from a same-day `scripts/ab_ramp.sh` on another machine. WRITE_RATE=0: no writes.
#
# Everything is a variable with a default:
#   HOSTS (100)  PANELS (20)  CONCURRENCY (6)  REFRESH_SECS (10)  PHASE_SECS (150)  ROUNDS (2)
#   VIEWS (1h,6h,1h:all)  WRITE_RATE (80)  PORT (18096)  INFLUX_PORT (18196)  INFLUX_RPC_PORT (18197)
#   HOT (1): chingest's [hot] enabled (0: off, the engine answers everything)
#   SQL_CONFIG, REQUEST_TIMEOUT_SECS, SERVER_CONFIG_EXTRA, SERVER_CMD, LOAD, INFLUXD: as in
#     scripts/query_bench.sh
#   PREV_SERVER_CMD (unset): another chingest build (or the same one), loaded as "chingest-prev"
#     on PREV_PORT (18098): a same-run before/after of a read-path change; PREV_CONFIG_EXTRA
#     (default: SERVER_CONFIG_EXTRA) is its extra TOML, e.g. the same build with [hot] off
#   RESULTS (test_results/latest)  NAME (dashboard_bench)  KEEP_TMP=1  SKIP_BUILD=1
#
# Results: $RESULTS/$NAME.{json,md}.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

DB=telegraf
PORT=${PORT:-18096}
INFLUX_PORT=${INFLUX_PORT:-18196}
INFLUX_RPC_PORT=${INFLUX_RPC_PORT:-18197}
PREV_PORT=${PREV_PORT:-18098}
HOSTS=${HOSTS:-100}
PANELS=${PANELS:-20}
CONCURRENCY=${CONCURRENCY:-6}
REFRESH_SECS=${REFRESH_SECS:-10}
PHASE_SECS=${PHASE_SECS:-150}
ROUNDS=${ROUNDS:-2}
WRITE_RATE=${WRITE_RATE:-80}
VIEWS=${VIEWS:-1h,6h,1h:all}
# Said either way: the default changed (on since stop 49), and a build before it had it off.
if [[ "${SERVER_CONFIG_EXTRA:-}" != *"[hot]"* ]]; then
  if [ "${HOT:-1}" = 1 ]; then hot_enabled=true; else hot_enabled=false; fi
  SERVER_CONFIG_EXTRA="[hot]
enabled = $hot_enabled
${SERVER_CONFIG_EXTRA:-}"
fi
RESULTS=${RESULTS:-test_results/latest}
NAME=${NAME:-dashboard_bench}
SAY_AS=dashboard_bench
# shellcheck source=scripts/lib/bench_env.sh
. "$ROOT/scripts/lib/bench_env.sh"
command -v "$INFLUXD" >/dev/null || die "$INFLUXD not found: install InfluxDB 1.x (apt-get install influxdb)"

BENCH_NAME=dashboard-bench
CREATE_DB=0 # chingest-load dashboard creates `telegraf`; `load` is created below
# shellcheck source=scripts/lib/servers.sh
. "$ROOT/scripts/lib/servers.sh"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "building release binaries (chingest, chingest-load)"
  cargo build --release -p chingest -p load
fi

DB=load CREATE_DB=1
start_influxd
start_chingest dashboard
servers=(--server "chingest=http://127.0.0.1:$PORT" --server "influxdb=http://127.0.0.1:$INFLUX_PORT")
if [ -n "${PREV_SERVER_CMD:-}" ]; then
  SERVER_CONFIG_EXTRA=${PREV_CONFIG_EXTRA-${SERVER_CONFIG_EXTRA:-}} \
    start_chingest dashboard-prev "$PREV_PORT" "$PREV_SERVER_CMD"
  servers+=(--server "chingest-prev=http://127.0.0.1:$PREV_PORT")
fi
writes=()
if [ "$WRITE_RATE" != 0 ]; then
  "$LOAD" gen --out "$TMP/payloads" --files 16 --points 5000 --hosts 1000 >/dev/null
  writes=(--write-rate "$WRITE_RATE" --payloads "$TMP/payloads")
fi
say "load average before: $(loadavg)"
"$LOAD" dashboard "${servers[@]}" --hosts "$HOSTS" --panels "$PANELS" --concurrency "$CONCURRENCY" \
  --refresh-secs "$REFRESH_SECS" --phase-secs "$PHASE_SECS" --rounds "$ROUNDS" --views "$VIEWS" "${writes[@]}" \
  --note "chingest: \`$SERVER_CMD\`, [sql] as in scripts/lib/bench_env.sh${SERVER_CONFIG_EXTRA:+, and $(echo "$SERVER_CONFIG_EXTRA" | tr '\n' ' ')}${PREV_SERVER_CMD:+; chingest-prev: \`$PREV_SERVER_CMD\`${PREV_CONFIG_EXTRA:+, and $(echo "$PREV_CONFIG_EXTRA" | tr '\n' ' ')}}; InfluxDB $("$INFLUXD" version 2>/dev/null || echo '?'), default settings" \
  --results "$RESULTS" --name "$NAME"
echo "
Load average at the end: $(loadavg)." >> "$RESULTS/$NAME.md"
