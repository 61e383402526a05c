#!/usr/bin/env bash
# Issue #43: derivative(mean), mode and distinct on two 18.16 shards, a previous release build
# (OLD_BIN: rows pulled to the node) against this one (NEW_BIN: pushed down), both nodes reading the same
# shards, interleaved (scripts/cluster_functions_ab.py). Never part of CI.
# QUERIES=integral times integral() by series instead, QUERIES=stddev stddev() of integers.
# PORTS=189 moves every port (nodes <PORTS>01/02, shards <PORTS>31/32, TCP <PORTS>41/42) off
# the default 187xx, where another run holds them.
# Usage: OLD_BIN=… NEW_BIN=target/release/chingest [HOSTS=100] [HOURS=12] [REPS=10] \
#        [QUERIES=integral|stddev] [PORTS=187] scripts/cluster_functions_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OLD_BIN=${OLD_BIN:?the previous build}; NEW_BIN=${NEW_BIN:-target/release/chingest}
HOSTS=${HOSTS:-100}; HOURS=${HOURS:-12}; REPS=${REPS:-10}; P=${PORTS:-187}
WORK=$(mktemp -d /tmp/cluster-functions.XXXXXX)
CH=${CHINGEST_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
# shellcheck source=lib/clickhouse_shards.sh
source scripts/lib/clickhouse_shards.sh
node() { # name bin port
  local d=$WORK/$1; mkdir -p "$d"
  cat >"$d/chingest.toml" <<EOF
[storage]
engine = "clickhouse"

[storage.clickhouse]
shards = ["http://127.0.0.1:${P}31", "http://127.0.0.1:${P}32"]
node = "$1"
timeout_secs = 120
EOF
  env CHINGEST_SERVER__LISTEN=127.0.0.1:$3 CHINGEST_STORAGE__DATA_DIR=$d/data RUST_LOG=warn \
    "$2" serve --config "$d/chingest.toml" >"$d/log" 2>&1 &
  pids+=($!)
}
shard "$WORK/s0" "${P}31" "${P}41"
shard "$WORK/s1" "${P}32" "${P}42"
wait_http "http://127.0.0.1:${P}31/?query=SELECT%201"
wait_http "http://127.0.0.1:${P}32/?query=SELECT%201"
node new "$NEW_BIN" "${P}02"
wait_http "http://127.0.0.1:${P}02/ping"
curl -sf -XPOST "http://127.0.0.1:${P}02/query" --data-urlencode 'q=CREATE DATABASE bench' >/dev/null
# TSBS cpu-only's shape: hosts with TSBS's tags, ten integer usage fields, a point every 10 s.
python3 - "$HOSTS" "$HOURS" "$P" <<'EOF'
import sys, urllib.request, random
hosts, hours, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]; batch = []
rnd = random.Random(43)
fields = ["usage_user","usage_system","usage_idle","usage_nice","usage_iowait","usage_irq","usage_softirq","usage_steal","usage_guest","usage_guest_nice"]
state = [[rnd.randrange(100) for _ in fields] for _ in range(hosts)]
def send():
    r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}02/write?db=bench", data="".join(batch).encode(), method="POST"))
    assert r.status == 204; batch.clear()
t0 = 1_600_000_000
for step in range(hours * 360):
    for h in range(hosts):
        s = state[h]
        for k in range(len(s)):
            s[k] = min(100, max(0, s[k] + rnd.randrange(-5, 6)))
        vals = ",".join(f"{f}={v}i" for f, v in zip(fields, s))
        batch.append(f"cpu,hostname=host_{h},region=r{h%3},datacenter=dc{h%7},rack={h%11},os=Ubuntu16.10,arch=x86,team=T{h%4},service={h%19},service_version={h%2},service_environment=prod {vals} {t0 + step*10}000000000\n")
    if len(batch) >= 20_000: send()
if batch: send()
EOF
for _ in $(seq 3000); do
  [ "$(curl -sf "http://127.0.0.1:${P}02/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["wal"]["unflushed_points"])')" = 0 ] && break
  sleep 0.2
done
node old "$OLD_BIN" "${P}01"
wait_http "http://127.0.0.1:${P}01/ping"
stored=$(for p in "${P}31" "${P}32"; do curl -sf "http://127.0.0.1:$p/" --data-binary 'SELECT count() FROM __shard_bench.cpu'; done | paste -sd+ | bc)
echo "points on the shards: $stored"
OLD="http://127.0.0.1:${P}01" NEW="http://127.0.0.1:${P}02" REPS=$REPS HOURS=$HOURS QUERIES=${QUERIES:-} python3 scripts/cluster_functions_ab.py
