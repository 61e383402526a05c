#!/usr/bin/env python3
"""Three InfluxQL reads (one host, eight hosts, every host's mean over 12 h) against two
chingest nodes on ClickHouse clusters, interleaved, back to back; every answer compared.
Both nodes must serve TSBS `cpu` in database `benchmark` (scripts/tsbs_bench.sh leaves it on
the shards). Swap which build runs on which shards between rounds: shard pairs differ
(test_results/latest/tsbs_cluster.md, run 5).
Usage: OLD=http://127.0.0.1:18201 NEW=http://127.0.0.1:18202 scripts/cluster_read_ab.py [N]
"""
import os
import time, urllib.request, urllib.parse, statistics, sys
nodes = {"old": os.environ.get("OLD", "http://127.0.0.1:18201"), "new": os.environ.get("NEW", "http://127.0.0.1:18202")}
qs = {
 "small": "SELECT max(usage_user) FROM cpu WHERE hostname='host_7' AND time >= '2016-01-01T06:00:00Z' AND time < '2016-01-01T07:00:00Z' GROUP BY time(1m)",
 "8hosts": "SELECT max(usage_user) FROM cpu WHERE hostname =~ /^host_(1|2|3|4|5|6|7|8)$/ AND time >= '2016-01-01T06:00:00Z' AND time < '2016-01-01T07:00:00Z' GROUP BY time(1m)",
 "heavy": "SELECT mean(usage_user) FROM cpu WHERE time >= '2016-01-01T06:00:00Z' AND time < '2016-01-01T18:00:00Z' GROUP BY time(1h), hostname",
}
n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
for name, q in qs.items():
    res = {k: [] for k in nodes}
    reps = n if name != "heavy" else max(6, n // 6)
    for i in range(reps):
        order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
        bodies = {}
        for k in order:
            url = nodes[k] + "/query?db=benchmark&" + urllib.parse.urlencode({"q": q})
            t0 = time.perf_counter()
            bodies[k] = urllib.request.urlopen(url).read()
            res[k].append((time.perf_counter() - t0) * 1000)
        if bodies["old"] != bodies["new"]: print("DIFF", name)
    o, nw = statistics.median(res["old"]), statistics.median(res["new"])
    print(f"{name:7s} n={reps:3d} old p50 {o:7.1f}  new p50 {nw:7.1f}  old/new {o/nw:.2f}")
