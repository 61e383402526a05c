#!/usr/bin/env bash
# Same-run A/B of the overload benchmark (`ONLY=overload scripts/bench.sh`): two chingest builds
# (OLD_BIN, NEW_BIN) interleaved old, new, old, new, each a fresh server at the same base rate,
# with /metrics scraped every 2 s (the last scrape is kept: server-side histograms over the
# whole run). Run from the repository root with nothing else on the machine:
#   OLD_BIN=/path/to/old/chingest scripts/ab_overload.sh   (results in $OUT/<old|new>-<round>/)
# Build the old one from a stash or a worktree. Not part of CI.
set -euo pipefail
OUT=${OUT:-/tmp/ab_overload}
ROUNDS=${ROUNDS:-2}
BASE=${OVERLOAD_BASE_RATE:-12}
PORT=${PORT:-18086}
run() { # name bin round
  local d="$OUT/$1-$3"; rm -rf "$d"; mkdir -p "$d"
  ( while sleep 2; do
      curl -s --max-time 1 "http://127.0.0.1:$PORT/metrics" > "$d/metrics.tmp" &&
        [ -s "$d/metrics.tmp" ] && mv "$d/metrics.tmp" "$d/metrics"
    done ) &
  local scraper=$!
  SERVER_CMD="$2 serve --config" ONLY=overload SKIP_BUILD=1 OVERLOAD_BASE_RATE=$BASE PORT=$PORT \
    RESULTS="$d" REPORT="$d/benchmarks.md" scripts/bench.sh > "$d/log" 2>&1
  kill $scraper; rm -f "$d/metrics.tmp"
  echo "$(date +%T) $1 round $3 done; load $(cut -d' ' -f1-3 /proc/loadavg)"
  sleep 20
}
for round in $(seq 1 "$ROUNDS"); do
  run old "${OLD_BIN:?set OLD_BIN to the old chingest binary}" "$round"
  run new "${NEW_BIN:-$PWD/target/release/chingest}" "$round"
done
echo done
