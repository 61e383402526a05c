#!/usr/bin/env python3
"""Issue #43: where a small cluster statement's time goes. Sends TSBS-shaped queries (random
host and window, seed 7; data from 2016-01-01T00:00:00Z, 200 hosts) to one chingest cluster
node, one at a time, and prints the client's times, the last `Server-Timing`, and each 18.16
shard's own view from `system.query_log` (statements per query by kind, their duration, rows
and bytes read). The shards need `log_queries=1` in their users' profile and a `<query_log>`
section in their config; the statements of other nodes on the same shards are counted too.

Usage: scripts/cluster_shard_profile.py <node port> <db> <type> <queries> [shard ports, comma-
separated; 19311,19312] — db `b24` holds 24 h, any other 4 h; types `single-groupby-1-1-1`,
`cpu-max-all-1`."""
import json, random, statistics, sys, time, urllib.parse, urllib.request
port, db, qtype, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
shards = sys.argv[5].split(',') if len(sys.argv) > 5 else ['19311', '19312']
HOURS = 24 if db == 'b24' else 4
FIELDS = ['usage_user','usage_system','usage_idle','usage_nice','usage_iowait','usage_irq','usage_softirq','usage_steal','usage_guest','usage_guest_nice']
rng = random.Random(7)
def win(h):
    start = 1451606400 + rng.randrange(0, HOURS*3600 - h*3600)
    f = lambda t: time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))
    return f(start), f(start + h*3600)
def q():
    host = rng.randrange(200)
    if qtype == 'single-groupby-1-1-1':
        a, b = win(1)
        return f"SELECT max(usage_user) from cpu where (hostname = 'host_{host}') and time >= '{a}' and time < '{b}' group by time(1m)"
    if qtype == 'cpu-max-all-1':
        a, b = win(8 if HOURS >= 8 else 3)
        return "SELECT " + ", ".join(f"max({x})" for x in FIELDS) + f" from cpu where (hostname = 'host_{host}') and time >= '{a}' and time < '{b}' group by time(1h)"
    raise SystemExit(qtype)
def ch(p, sql):
    return urllib.request.urlopen(urllib.request.Request(f'http://127.0.0.1:{p}/', data=sql.encode())).read().decode()
for p in shards: ch(p, 'SYSTEM FLUSH LOGS')
t0 = ch(shards[0], 'SELECT now()').strip()
time.sleep(1.1)
totals, timings = [], []
for i in range(n):
    url = f'http://127.0.0.1:{port}/query?' + urllib.parse.urlencode({'db': db, 'q': q()})
    s = time.perf_counter(); r = urllib.request.urlopen(url); body = r.read(); e = time.perf_counter()
    assert b'"error"' not in body, body[:300]
    totals.append((e - s) * 1000); timings.append(r.headers.get('Server-Timing'))
time.sleep(1.1)
for p in shards: ch(p, 'SYSTEM FLUSH LOGS')
print(f'{qtype} on {db}: {n} queries, client p50 {statistics.median(totals):.1f} ms (min {min(totals):.1f}, max {max(totals):.1f})')
print('  last Server-Timing:', timings[-1])
for p in shards:
    rows = ch(p, f"""SELECT multiIf(query LIKE 'SELECT toUInt8(0) AS __k%', 'folded partial read+listing',
        query LIKE '%system.columns%', 'catalog: columns', query LIKE 'SELECT \\'databases\\'%', 'catalog: databases/drops',
        query LIKE '%__chingest.nodes%', 'nodes fence', query LIKE '%system.parts%', 'listing', substring(query, 1, 40)) AS kind,
        count(), quantileExact(0.5)(query_duration_ms), max(query_duration_ms), quantileExact(0.5)(read_rows), quantileExact(0.5)(read_bytes)
        FROM system.query_log WHERE type = 2 AND event_time > toDateTime('{t0}') AND query NOT LIKE '%query_log%' AND query NOT LIKE 'SELECT now()%' AND query NOT LIKE 'SYSTEM%'
        GROUP BY kind ORDER BY count() DESC FORMAT TSV""")
    print(f'  shard :{p}  kind | statements | per query | p50 ms | max ms | p50 read_rows | p50 read_bytes')
    for line in rows.strip().splitlines():
        k, c, d50, dmax, rr, rb = line.split('\t')
        print(f'    {k} | {c} | {int(c)/n:.2f} | {d50} | {dmax} | {rr} | {rb}')
