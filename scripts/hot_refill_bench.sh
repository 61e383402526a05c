#!/usr/bin/env bash
# The hot store's refill after a restart (issue #44), measured: TSBS cpu-only data is loaded
# into a server with `[hot] enabled = true`, the server is stopped (SIGTERM: everything flushed),
# then started again ROUNDS times with the store on and with it off, alternately. Per start:
# seconds until the refill ended (`chingest_hot_refill_seconds`, and the wall clock from the
# spawn until `chingest_hot_refill_pending` is 0), points and bytes it refilled, the server's RSS
# once it ended (VmRSS) and its peak (VmHWM); with the store off, RSS 5 s after /ping answers.
# Then one single-groupby statement must be answered from the hot store. "on" holds every
# measurement (`[hot] hold = "all"`: the refill after start); "read" the default `hold = "read"`:
# the first single-groupby statement goes to the engine and starts the refill of `cpu`; seconds
# from that statement until the same one is answered from the store, and the refill's own line.
#
#   HOSTS=200 HOURS=6 ROUNDS=2 BIN=target/release/chingest scripts/hot_refill_bench.sh
set -euo pipefail

HOSTS=${HOSTS:-200}
HOURS=${HOURS:-6}
ROUNDS=${ROUNDS:-2}
BIN=${BIN:-target/release/chingest}
LOAD=${LOAD:-target/debug/chingest-load}
PORT=${PORT:-18344}
WORK=${WORK:-$(mktemp -d /tmp/hot_refill_bench.XXXXXX)}
URL="http://127.0.0.1:$PORT"

echo "host: $(nproc) cores, $(grep MemTotal /proc/meminfo | awk '{print $2/1048576 " GiB"}'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data: $HOSTS hosts x $HOURS h (TSBS cpu-only, 10 fields), binary $BIN, work dir $WORK"

printf '[hot]\nenabled = true\nhold = "all"\n' >"$WORK/on.toml"
printf '[hot]\nenabled = true\nhold = "read"\n' >"$WORK/read.toml"
printf '[hot]\nenabled = false\n' >"$WORK/off.toml"

PID=
start() { # config, log
  CHINGEST_SERVER__LISTEN="127.0.0.1:$PORT" CHINGEST_STORAGE__DATA_DIR="$WORK/data" RUST_LOG=info \
    "$BIN" serve --config "$1" 2>"$2" >/dev/null &
  PID=$!
  until curl -sf -o /dev/null "$URL/ping"; do sleep 0.05; done
}
stop() {
  kill -TERM "$PID"
  wait "$PID" || true
}
metric() { curl -sf "$URL/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
path_of() { # the read path that answered statement $1
  curl -s -o /dev/null -D - -G "$URL/query" --data-urlencode "db=benchmark" --data-urlencode "q=$1" |
    awk -F': ' 'tolower($1) == "x-chingest-read-path" { print $2 }' | tr -d '\r'
}
kb() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$PID/status"; }

if [ -z "${SKIP_FILL:-}" ]; then # SKIP_FILL=1 WORK=<a previous run's>: its data again
  start "$WORK/off.toml" "$WORK/fill.log" # how it was written does not matter to a refill
  "$LOAD" tsbs-fill --server "chingest=$URL" --hosts "$HOSTS" --hours "$HOURS" --out "$WORK/fill.json" >/dev/null
  stop
  echo "loaded $((HOSTS * HOURS * 360)) points"
fi

for round in $(seq 1 "$ROUNDS"); do
  t0=$(date +%s.%N)
  start "$WORK/on.toml" "$WORK/on-$round.log"
  while [ "$(metric chingest_hot_refill_pending)" != "0" ] || [ "$(metric chingest_hot_refill_seconds)" = "0" ]; do
    sleep 0.1
  done
  t1=$(date +%s.%N)
  echo "round $round on:  refill $(metric chingest_hot_refill_seconds) s (spawn to done $(echo "$t1 - $t0" | bc) s)," \
    "$(metric chingest_hot_refill_points_total) points, $(metric chingest_hot_bytes) bytes held," \
    "RSS $(($(kb VmRSS) / 1024)) MB, peak $(($(kb VmHWM) / 1024)) MB, load $(cut -d' ' -f1 /proc/loadavg)"
  q="SELECT max(usage_user) FROM cpu WHERE hostname = 'host_0' AND time >= $((1451606400 + HOURS * 3600 - 3600))s AND time < $((1451606400 + HOURS * 3600))s GROUP BY time(1m)"
  echo "  single-groupby-1-1-1 answered by: $(path_of "$q")"
  grep -h "hot store refilled after start" "$WORK/on-$round.log" | tail -1
  stop
  start "$WORK/read.toml" "$WORK/read-$round.log"
  t0=$(date +%s.%N)
  first=$(path_of "$q")
  while [ "$(path_of "$q")" != "hot" ]; do sleep 0.05; done
  t1=$(date +%s.%N)
  echo "round $round read: first statement answered by $first; answered by hot $(echo "$t1 - $t0" | bc) s later," \
    "$(metric chingest_hot_refill_points_total) points, $(metric chingest_hot_bytes) bytes held," \
    "RSS $(($(kb VmRSS) / 1024)) MB, peak $(($(kb VmHWM) / 1024)) MB, load $(cut -d' ' -f1 /proc/loadavg)"
  grep -h "hot store: measurement refilled" "$WORK/read-$round.log" | tail -1
  stop
  start "$WORK/off.toml" "$WORK/off-$round.log"
  sleep 5
  echo "round $round off: RSS $(($(kb VmRSS) / 1024)) MB, peak $(($(kb VmHWM) / 1024)) MB"
  stop
done
