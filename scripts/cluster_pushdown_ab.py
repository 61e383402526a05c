#!/usr/bin/env python3
"""Three aggregates (issue #43) against two chingest nodes reading the same ClickHouse cluster,
interleaved (the order swapped each round), every answer compared; with OLD_DEFAULT, the old
build at the default [sql] max_result_rows is asked each once (it refuses over 1M points).
Prints a Markdown table of medians. Usage: OLD=… NEW=… [OLD_DEFAULT=…] cluster_pushdown_ab.py [N]
(scripts/cluster_pushdown_bench.sh sets them up).
"""
import json
import os
import statistics
import sys
import time
import urllib.parse
import urllib.request

nodes = {"old": os.environ["OLD"], "new": os.environ["NEW"]}
qs = {
    "count": "SELECT count(v), count(n) FROM m",
    "by dc": "SELECT sum(v), min(v), max(v), first(v) FROM m GROUP BY dc",
    "last by host": "SELECT last(v) FROM m GROUP BY host",
}
n = int(sys.argv[1]) if len(sys.argv) > 1 else 7


def ask(base, q):
    url = base + "/query?db=bench&" + urllib.parse.urlencode({"q": q})
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
    return (time.perf_counter() - t0), json.loads(body)


def rounded(v):
    """Floats to 9 significant digits: summation order differs between the paths."""
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if isinstance(v, list):
        return [rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    return v


print("| statement | old p50 (s) | new p50 (s) | old / new | new first (s) | old at max_result_rows 1M | answers |")
print("|---|---|---|---|---|---|---|")
for name, q in qs.items():
    res = {k: [] for k in nodes}
    same = True
    for i in range(n):
        order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
        bodies = {}
        for k in order:
            secs, bodies[k] = ask(nodes[k], q)
            assert "error" not in bodies[k]["results"][0], (k, q, bodies[k])
            res[k].append(secs)
        if rounded(bodies["old"]) != rounded(bodies["new"]):
            same = False
            if os.environ.get("SHOW_DIFF"):
                print(json.dumps(bodies["old"])[:3000], file=sys.stderr)
                print(json.dumps(bodies["new"])[:3000], file=sys.stderr)
    refused = ""
    if os.environ.get("OLD_DEFAULT"):
        _, b = ask(os.environ["OLD_DEFAULT"], q)
        refused = b["results"][0].get("error", "answered")[:60]
    o, w = statistics.median(res["old"]), statistics.median(res["new"])
    print(f"| `{q}` | {o:.2f} | {w:.2f} | {o / w:.1f}× | {res['new'][0]:.2f} | {refused} | {'equal' if same else 'DIFFER'} |")
