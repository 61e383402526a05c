#!/usr/bin/env python3
"""derivative(mean), mode and distinct (issue #43) against two chingest nodes reading the same
ClickHouse cluster, interleaved (the order swapped each round), every answer compared, the new
node's path counted. Prints a Markdown table of medians. Usage: OLD=… NEW=… REPS=… HOURS=…
[QUERIES=integral|stddev] cluster_functions_ab.py (scripts/cluster_functions_bench.sh sets them up).
"""
import json, os, statistics, time, urllib.parse, urllib.request
nodes = {"old": os.environ["OLD"], "new": os.environ["NEW"]}
end = 1_600_000_000 + int(os.environ["HOURS"]) * 3600
rng = f"time >= 1600000000s AND time < {end}s"
qs = {
    "derivative(mean) by host, 5m": f"SELECT derivative(mean(usage_user), 1s) FROM cpu WHERE {rng} GROUP BY time(5m), hostname",
    "mode by host, 1h": f"SELECT mode(usage_user) FROM cpu WHERE {rng} GROUP BY time(1h), hostname",
    "distinct by dc, 1h": f"SELECT distinct(usage_user) FROM cpu WHERE {rng} GROUP BY time(1h), datacenter",
}
# QUERIES=integral: integral() where every group is one series (integrated on its shard).
if os.environ.get("QUERIES") == "integral":
    qs = {
        "integral by series, 1h": f"SELECT integral(usage_user) FROM cpu WHERE {rng} GROUP BY time(1h), *",
        "integral by series": f"SELECT integral(usage_user, 1m) FROM cpu WHERE {rng} GROUP BY *",
        "3 integrals by series, 10m": f"SELECT integral(usage_user), integral(usage_system), integral(usage_idle) FROM cpu WHERE {rng} GROUP BY time(10m), *",
    }
# QUERIES=stddev: stddev() of an integer field (from the shards' sums).
if os.environ.get("QUERIES") == "stddev":
    qs = {
        "stddev, 1h": f"SELECT stddev(usage_user) FROM cpu WHERE {rng} GROUP BY time(1h)",
        "stddev by host": f"SELECT stddev(usage_user) FROM cpu WHERE {rng} GROUP BY hostname",
        "stddev, mean by dc, 10m": f"SELECT stddev(usage_user), mean(usage_user) FROM cpu WHERE {rng} GROUP BY time(10m), datacenter",
    }
n = int(os.environ["REPS"])
def metric(base, path):
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    p = f'chingest_cluster_reads_total{{path="{path}"}} '
    return next((float(l[len(p):]) for l in text.splitlines() if l.startswith(p)), 0.0)
def ask(base, q):
    url = base + "/query?db=bench&" + urllib.parse.urlencode({"q": q})
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
    return time.perf_counter() - t0, json.loads(body)
def rounded(v):
    if isinstance(v, float): return float(f"{v:.12g}")
    if isinstance(v, list): return [rounded(x) for x in v]
    if isinstance(v, dict): return {k: rounded(x) for k, x in v.items()}
    return v
print("| statement | old p50 (ms) | new p50 (ms) | old / new | new path | answers |")
print("|---|---:|---:|---:|---|---|")
for name, q in qs.items():
    res = {k: [] for k in nodes}; exact = True; close = True
    before = metric(nodes["new"], "pushdown")
    for i in range(n):
        order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
        bodies = {}
        for k in order:
            secs, bodies[k] = ask(nodes[k], q)
            assert "error" not in bodies[k]["results"][0], (k, q, str(bodies[k])[:500])
            res[k].append(secs * 1000)
        exact &= bodies["old"] == bodies["new"]
        close &= rounded(bodies["old"]) == rounded(bodies["new"])
    pushed = metric(nodes["new"], "pushdown") - before
    rows = sum(len(s["values"]) for s in bodies["new"]["results"][0].get("series", []))
    o, w = statistics.median(res["old"]), statistics.median(res["new"])
    ans = "equal" if exact else ("equal to 12 digits" if close else "DIFFER")
    print(f"| `{q}` | {o:.1f} | {w:.1f} | {o/w:.1f}× | pushdown {int(pushed)}/{n} | {ans} ({rows} rows) |")
