# Shared by scripts/query_bench.sh, tsbs_bench.sh and unflushed_read_bench.sh (sourced, not run;
# the caller sets ROOT, and SAY_AS, the name its messages start with): the settings every query
# benchmark runs chingest with, the release binaries, say/die, and the tools they all need.
# shellcheck shell=bash
INFLUXD=${INFLUXD:-influxd}
REQUEST_TIMEOUT_SECS=${REQUEST_TIMEOUT_SECS:-330}
SQL_CONFIG=${SQL_CONFIG:-"max_concurrent_queries = 8
max_result_rows = 10000000
max_memory_bytes = 4294967296
max_execution_secs = 300"}

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET/release
SERVER_CMD=${SERVER_CMD:-"$BIN/chingest serve --config"}
LOAD=${LOAD:-$BIN/chingest-load}

say() { echo "$SAY_AS: $*" >&2; }
die() { say "$*"; exit 1; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
command -v curl >/dev/null || die "curl is needed (apt-get install curl)"
command -v python3 >/dev/null || die "python3 is needed to read /health"
