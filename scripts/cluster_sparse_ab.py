#!/usr/bin/env python3
"""Sparse InfluxQL queries against two chingest nodes on ClickHouse clusters, interleaved.

A dashboard that refreshes every few seconds finds the node's copy of the cluster's catalog
older than 1 s at most of its queries, so each pays a catalog refresh; back-to-back
benchmarks (TSBS) hide that cost. Both nodes ("old", "new") must serve the same data (TSBS
`cpu` in database `benchmark`, scripts/tsbs_bench.sh leaves it on the shards); each gets a
trickle of writes (database `live`, 10/s) so its delivery fence moves, as on a live system.
Usage: OLD=http://127.0.0.1:18201 NEW=http://127.0.0.1:18202 scripts/cluster_sparse_ab.py
(test_results/latest/cluster_sparse_queries.md).
"""
import os
import time, threading, urllib.request, urllib.parse, statistics, json
nodes = {"old": os.environ.get("OLD", "http://127.0.0.1:18201"), "new": os.environ.get("NEW", "http://127.0.0.1:18202")}
for base in nodes.values():
    urllib.request.urlopen(urllib.request.Request(base + "/query", data=urllib.parse.urlencode({"q": "CREATE DATABASE live"}).encode()))
stop = False
def trickle(base):
    i = 0
    while not stop:
        body = f"t,host=h{i%10} v={i}i".encode()
        urllib.request.urlopen(urllib.request.Request(base + "/write?db=live", data=body))
        i += 1
        time.sleep(0.1)
ts = [threading.Thread(target=trickle, args=(b,), daemon=True) for b in nodes.values()]
for t in ts: t.start()
time.sleep(3)
q = "SELECT max(usage_user) FROM cpu WHERE hostname='host_7' AND time >= '2016-01-01T06:00:00Z' AND time < '2016-01-01T07:00:00Z' GROUP BY time(1m)"
res = {k: [] for k in nodes}
first = None
for i in range(80):
    order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
    for k in order:
        url = nodes[k] + "/query?db=benchmark&" + urllib.parse.urlencode({"q": q})
        t0 = time.perf_counter()
        body = urllib.request.urlopen(url).read()
        res[k].append((time.perf_counter() - t0) * 1000)
        if first is None: first = body
        elif body != first: print("DIFF", k)
    time.sleep(1.3)
stop = True
for k, v in res.items():
    v = sorted(v)
    print(k, "n", len(v), "p50 %.1f" % statistics.median(v), "p95 %.1f" % v[int(len(v)*0.95)-1], "min %.1f" % v[0], "max %.1f" % v[-1])
