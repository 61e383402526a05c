# Run 16 rig (branch h1, not part of CI): servers on 19098 (main 9a94893, embedded, hot store off),
# 19096 (main 9a94893, cluster node) and 19097 (h1, cluster node), the same 200-host TSBS data
# (chingest-load tsbs-fill, 24 h) on two 18.16 shards (both cluster nodes read the same shard tables)
# and in the embedded node. Each round runs one statement on all three, rotating which goes first;
# every answer compared byte for byte. Usage: interleaved_ab.py ROUNDS [TYPES]
import time, urllib.request, urllib.parse, statistics, sys
servers = {"embedded": 19098, "cluster-main": 19096, "cluster-h1": 19097}
F = ["usage_user","usage_system","usage_idle","usage_nice","usage_iowait","usage_irq","usage_softirq","usage_steal","usage_guest","usage_guest_nice"]
def q(n, h):
    calls = ", ".join(f"mean({f})" for f in F[:n])
    return f"SELECT {calls} from cpu where time >= '2016-01-01T{h:02d}:17:31Z' and time < '2016-01-01T{h+12:02d}:17:31Z' group by time(1h),hostname"
rounds = int(sys.argv[1])
types = {"double-groupby-1": 1, "double-groupby-5": 5, "double-groupby-all": 10}
if len(sys.argv) > 2:
    types = {t: types[t] for t in sys.argv[2].split(",")}
res = {}
names = list(servers)
for typ, n in types.items():
    for r in range(rounds):
        stmt = q(n, r % 11)
        order = names[r % 3:] + names[:r % 3]
        bodies = {}
        for s in order:
            url = f"http://127.0.0.1:{servers[s]}/query?db=benchmark&epoch=ns&q=" + urllib.parse.quote(stmt)
            t = time.perf_counter()
            body = urllib.request.urlopen(url).read()
            res.setdefault((typ, s), []).append((time.perf_counter() - t) * 1000)
            bodies[s] = body
        assert len(set(bodies.values())) == 1, f"answers differ: {typ} round {r}"
for typ in types:
    med = {s: statistics.median(res[(typ, s)]) for s in names}
    print(f"{typ}: " + ", ".join(f"{s} p50 {med[s]:.1f} ms" for s in names)
          + f"; main/embedded {med['cluster-main']/med['embedded']:.2f}x, h1/embedded {med['cluster-h1']/med['embedded']:.2f}x, h1/main {med['cluster-h1']/med['cluster-main']:.2f}")
