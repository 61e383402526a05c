#!/usr/bin/env bash
# Issue #43: a small pushed-down statement on two ClickHouse shards (Debian's clickhouse-server,
# loopback) answered by two chingest builds, interleaved: OLD (the partials combined by an
# embedded-engine statement) and NEW (combined in Rust). 20 hosts × 4 h of TSBS-shaped `cpu` at
# 10 s (10 float fields) written through NEW; both nodes read the same shards. Prints each
# statement's p50 per build, every answer compared. Light: a few hundred small statements.
#
# Usage: OLD=/path/to/old/chingest NEW=target/debug/chingest [N=40] scripts/cluster_combine_ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${OLD:?the old build}
NEW=${NEW:?the new build}
N=${N:-40}
CH=${CHINGEST_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
WORK=$(mktemp -d /tmp/cluster-combine-ab.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=lib/clickhouse_shards.sh
source scripts/lib/clickhouse_shards.sh

shard "$WORK/s0" 18631 18641
shard "$WORK/s1" 18632 18642
wait_http 'http://127.0.0.1:18631/?query=SELECT%201'
wait_http 'http://127.0.0.1:18632/?query=SELECT%201'

node() { # name binary port
  mkdir -p "$WORK/$1"
  cat >"$WORK/$1/config.toml" <<EOF
[storage]
engine = "clickhouse"

[storage.clickhouse]
shards = ["http://127.0.0.1:18631", "http://127.0.0.1:18632"]
node = "$1"
timeout_secs = 30
EOF
  CHINGEST_SERVER__LISTEN=127.0.0.1:$3 CHINGEST_STORAGE__DATA_DIR=$WORK/$1/data \
    CHINGEST_FLUSH__MAX_AGE_MS=100 RUST_LOG=warn \
    "$2" serve --config "$WORK/$1/config.toml" 2>"$WORK/$1/log" &
  pids+=($!)
  for _ in $(seq 900); do curl -sf "http://127.0.0.1:$3/ping" >/dev/null && return 0; sleep 0.1; done
  echo "node $1 did not start: $(tail -5 "$WORK/$1/log")" >&2
  exit 1
}
node new "$NEW" 18651
node old "$OLD" 18652

python3 - "$N" <<'EOF'
import statistics, sys, time, urllib.parse, urllib.request, json
n = int(sys.argv[1])
nodes = {"old": "http://127.0.0.1:18652", "new": "http://127.0.0.1:18651"}
def q(node, stmt, db="benchmark"):
    url = nodes[node] + "/query?" + urllib.parse.urlencode({"db": db, "q": stmt})
    return urllib.request.urlopen(urllib.request.Request(url, method="POST")).read()
q("new", "CREATE DATABASE benchmark", db="")
start = 1451606400  # 2016-01-01T00:00:00Z
fields = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
          "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
lines = []
for h in range(20):
    for i in range(4 * 360):
        t = start + i * 10
        vals = ",".join(f"{f}={(h * 7 + i * 13 + k * 29) % 100}" for k, f in enumerate(fields))
        lines.append(f"cpu,hostname=host_{h},region=r{h % 3},datacenter=d{h % 5} {vals} {t}000000000")
for k in range(0, len(lines), 5000):
    urllib.request.urlopen(nodes["new"] + "/write?db=benchmark", "\n".join(lines[k:k + 5000]).encode())
# Delivered to the shards: the old node, which has no rows of its own, counts them all.
def count(node):
    try:
        r = json.loads(q(node, "SELECT count(usage_user) FROM cpu"))
        return r["results"][0]["series"][0]["values"][0][1]
    except Exception:
        return None
for _ in range(600):
    if count("old") == len(lines) and count("new") == len(lines):
        break
    time.sleep(0.2)
else:
    sys.exit(f"not delivered: old {count('old')}, new {count('new')} of {len(lines)}")
stmts = {
    "single-groupby-1-1-1": "SELECT max(usage_user) FROM cpu WHERE hostname='host_7' AND time >= '2016-01-01T02:00:00Z' AND time < '2016-01-01T03:00:00Z' GROUP BY time(1m)",
    "cpu-max-all-1": "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait), max(usage_irq), max(usage_softirq), max(usage_steal), max(usage_guest), max(usage_guest_nice) FROM cpu WHERE hostname='host_3' AND time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T04:00:00Z' GROUP BY time(1h)",
    "last-by-host": "SELECT last(usage_user), first(usage_idle) FROM cpu WHERE time >= '2016-01-01T01:00:00Z' AND time < '2016-01-01T02:00:00Z' GROUP BY hostname",
}
for name, s in stmts.items():
    res = {k: [] for k in nodes}
    for i in range(n):
        bodies = {}
        for k in (["old", "new"] if i % 2 == 0 else ["new", "old"]):
            t0 = time.perf_counter()
            bodies[k] = q(k, s)
            res[k].append((time.perf_counter() - t0) * 1000)
        if bodies["old"] != bodies["new"]:
            print("DIFF", name, bodies["old"][:200], bodies["new"][:200])
    o, nw = statistics.median(res["old"]), statistics.median(res["new"])
    print(f"{name:22s} n={n} old p50 {o:6.1f} ms  new p50 {nw:6.1f} ms  old/new {o / nw:.2f}")
EOF
for p in old new; do
  curl -s "http://127.0.0.1:$([ $p = new ] && echo 18651 || echo 18652)/metrics" |
    grep -E '^chingest_cluster_(reads_total|pushdown_combined_total)' | sed "s/^/$p: /"
done
