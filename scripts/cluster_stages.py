#!/usr/bin/env python3
"""Medians of each `Server-Timing` stage (docs/influxql.md) of one InfluxQL statement on
several chingest servers, sent to each in turn (a same-run, interleaved A/B), one keep-alive
connection per server; every answer must be byte-equal to the first server's.

Usage: QUERIES=30 scripts/cluster_stages.py 'SELECT …' DB NAME=http://host:port ...
Prints a Markdown table: per server, the p50 of the client's wall time (request to last
body byte, HTTP included) and of each stage the server sent, and its read path header.
"""
import http.client, os, statistics, sys, time, urllib.parse

q, db, servers = sys.argv[1], sys.argv[2], [s.split("=", 1) for s in sys.argv[3:]]
QUERIES = int(os.environ.get("QUERIES", "30"))
conns = {n: http.client.HTTPConnection(urllib.parse.urlparse(u).netloc) for n, u in servers}
path = "/query?" + urllib.parse.urlencode({"db": db, "q": q})
walls = {n: [] for n, _ in servers}
stages = {n: {} for n, _ in servers}
read_path = {}
for i in range(QUERIES + 2):  # 2 warm-up rounds
    first = None
    for n, _ in servers:
        c = conns[n]
        t = time.perf_counter()
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        wall = (time.perf_counter() - t) * 1000
        if r.status != 200:
            sys.exit(f"{n}: {r.status} {body[:300]!r}")
        if first is None:
            first = body
        elif body != first:
            sys.exit(f"{n}: answer differs from {servers[0][0]}'s")
        if i < 2:
            continue
        walls[n].append(wall)
        read_path[n] = r.getheader("X-Chingest-Read-Path") or "-"
        for part in (r.getheader("Server-Timing") or "").split(","):
            name, _, dur = part.strip().partition(";dur=")
            if dur:
                stages[n].setdefault(name, []).append(float(dur))
names = []
for n, _ in servers:
    names += [s for s in stages[n] if s not in names]
med = lambda xs: f"{statistics.median(xs):.2f}" if xs else "—"
print(f"{QUERIES} rounds, every answer byte-equal; p50 ms")
print()
print("| server | read path | wall | " + " | ".join(names) + " |")
print("|---|---|---:|" + "---:|" * len(names))
for n, _ in servers:
    cells = [med(stages[n].get(s, [])) for s in names]
    print(f"| {n} | {read_path[n]} | {med(walls[n])} | " + " | ".join(cells) + " |")
