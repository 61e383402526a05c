#!/usr/bin/env bash
# Same-run A/B of the end-to-end ramp: two chingest builds (OLD_BIN, NEW_BIN) interleaved round
# by round, same load tool, same payloads, same machine minutes, each on a fresh data dir with
# the default config. Run from the repository root with nothing else on the machine:
#   OLD_BIN=/path/to/old/chingest scripts/ab_ramp.sh     (results in $OUT/<old|new>-<round>/ramp.json)
# Build the old one in a git worktree with its own target dir. Not part of CI.
# SOAK_RATE=<req/s> adds bench.sh's soak after each ramp (10 s pause, then SOAK_SECS, default 180,
# at that one rate: $OUT/<name>-<round>/soak.json), so two builds soak the same rate after the same
# ramp; ROUNDS (default 2) sets how many old/new pairs run (old first in odd rounds, new first in
# even ones). OLD_STORAGE / NEW_STORAGE: TOML lines added to that side's [storage] section (e.g.
# `engine = "clickhouse"` and a `[storage.clickhouse]` table: the same build against two
# backends); BEFORE_OLD / BEFORE_NEW: a command run before each of that side's runs (e.g. drop
# the shards' `bench` database); AFTER_WARM: a command run after each warm-up, the server up on
# $PORT (e.g. a last-point read of each measurement, so that the ramp's flushes also keep the
# last points: test_results/history/ab_last_point_strings.md).
set -euo pipefail
LOAD=${LOAD:-target/release/chingest-load}
OUT=${OUT:-/tmp/ab}
RATES=${RATES:-8,12,16,20,24}
STEP=${STEP:-15}
ROUNDS=${ROUNDS:-2}
SOAK_RATE=${SOAK_RATE:-}
SOAK_SECS=${SOAK_SECS:-180}
PORT=18099
rm -rf "$OUT"; mkdir -p "$OUT"
$LOAD gen --out "$OUT/payloads" --format lp --files 16 --points 50000 --hosts 1000 --fields 6 >/dev/null
run() { # name bin round
  local d="$OUT/$1-$3"; mkdir -p "$d"
  local storage=OLD_STORAGE before=BEFORE_OLD
  [ "$1" = new ] && storage=NEW_STORAGE before=BEFORE_NEW
  [ -z "${!before:-}" ] || bash -c "${!before}"
  printf '[server]\nlisten = "127.0.0.1:%s"\n\n[storage]\ndata_dir = "%s/data"\n%s\n' $PORT "$d" "${!storage:-}" > "$d/c.toml"
  "$2" serve --config "$d/c.toml" > "$d/log" 2>&1 &
  local pid=$!
  for i in $(seq 1 300); do [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/ping || true)" = 204 ] && break; sleep 0.2; done
  curl -s -o /dev/null -XPOST "http://127.0.0.1:$PORT/query" --data-urlencode "q=CREATE DATABASE bench"
  local common=(--url "http://127.0.0.1:$PORT/write?db=bench" --payloads "$OUT/payloads" --budget-ms 250 --server-pid $pid)
  $LOAD ramp "${common[@]}" --rates 8 --step-secs 5 --max-in-flight 64 --results "$d/warm" >/dev/null
  [ -z "${AFTER_WARM:-}" ] || PORT=$PORT bash -c "$AFTER_WARM"
  echo "$(date +%T) $1 round $3: load $(cut -d' ' -f1-3 /proc/loadavg)"
  $LOAD ramp "${common[@]}" --rates "$RATES" --step-secs "$STEP" --max-in-flight 64 \
    --metrics-url "http://127.0.0.1:$PORT/metrics" --results "$d" --name ramp > /dev/null
  if [ -n "$SOAK_RATE" ]; then
    sleep 10 # as bench.sh: let the ramp's backlog drain first
    $LOAD ramp "${common[@]}" --rates "$SOAK_RATE" --step-secs "$SOAK_SECS" --max-in-flight 64 \
      --metrics-url "http://127.0.0.1:$PORT/metrics" --results "$d" --name soak > /dev/null
  fi
  kill -TERM $pid; wait $pid 2>/dev/null || true
  sleep 5
}
# The build that runs first in a round does better at the first loaded step whichever it is
# (test_results/history/ab_data_management.md): the order alternates, so use an even ROUNDS.
OLD=${OLD_BIN:?set OLD_BIN to the old chingest binary}
NEW=${NEW_BIN:-target/release/chingest}
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then
    run old "$OLD" $round; run new "$NEW" $round
  else
    run new "$NEW" $round; run old "$OLD" $round
  fi
done
echo done
