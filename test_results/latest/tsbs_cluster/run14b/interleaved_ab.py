# H2 rig (not part of CI): servers on 18696 (main af98c72, cluster node), 18697 (h2 8861ba1, cluster node), 18698 (main, embedded, hot store off),
# the same 200-host TSBS data on two 18.16 shards (both cluster nodes read the same shard tables) and in the embedded node.
# Each round runs one statement on all three, rotating which goes first; every answer compared byte for byte.
import time, urllib.request, urllib.parse, statistics, sys, json
servers = {"embedded": 18698, "cluster-before": 18696, "cluster-after": 18697}
F = ["usage_user","usage_system","usage_idle","usage_nice","usage_iowait","usage_irq","usage_softirq","usage_steal","usage_guest","usage_guest_nice"]
def q(n, h):
    calls = ", ".join(f"mean({f})" for f in F[:n])
    return f"SELECT {calls} from cpu where time >= '2016-01-01T{h:02d}:17:31Z' and time < '2016-01-01T{h+12:02d}:17:31Z' group by time(1h),hostname"
rounds = int(sys.argv[1])
res = {}
names = list(servers)
for typ, n in [("double-groupby-5", 5), ("double-groupby-all", 10)]:
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
for typ in ["double-groupby-5", "double-groupby-all"]:
    med = {s: statistics.median(res[(typ, s)]) for s in names}
    print(f"{typ}: " + ", ".join(f"{s} p50 {med[s]:.1f} ms" for s in names)
          + f"; before/embedded {med['cluster-before']/med['embedded']:.2f}x, after/embedded {med['cluster-after']/med['embedded']:.2f}x, after/before {med['cluster-after']/med['cluster-before']:.2f}")
