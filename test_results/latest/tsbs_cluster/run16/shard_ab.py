# Run 16 (branch h1, not part of CI): the rig of interleaved_ab.py, its two 18.16 shards on 19411/19412.
# Variants of the double-groupby-all shard statement, both shards at once (as the node asks), interleaved.
import urllib.request, urllib.parse, time, statistics, sys, threading
F = ["usage_user","usage_system","usage_idle","usage_nice","usage_iowait","usage_irq","usage_softirq","usage_steal","usage_guest","usage_guest_nice"]
T = "`__shard_benchmark`.`cpu`"
B = "(__t - (((__t - toInt64(0)) % toInt64(3600000000000)) + toInt64(3600000000000)) % toInt64(3600000000000))"
def where(h):
    lo = 1451606400000000000 + (h*3600+17*60+31)*10**9
    return f"__src.`time` >= toInt64({lo}) AND __src.`time` <= toInt64({lo + 12*3600*10**9 - 1})"
def aggs(sumf="sum(toFloat64({v}))", cnt="count({v})"):
    return [cnt.format(v=f"__v{j}") for j in range(10)] + [sumf.format(v=f"__v{j}") for j in range(10)]
def inner(h, tag=True, pre=False):
    cols = "__src.`series_id` AS __sid, __src.`time` AS __t" + (", __src.`hostname` AS __k0" if tag else "")
    cols += "".join(f", __src.`{f}` AS __v{j}" for j, f in enumerate(F))
    w = where(h)
    return f"SELECT {cols}, toUInt64(0) AS __ms FROM {T} AS __src " + (f"PREWHERE {w}" if pre else f"WHERE {w}")
def v(h, key="__k0", tag=True, pre=False, a=None, settings=""):
    a = a or aggs()
    return (f"SELECT {B} AS __p0, {key} AS __p1, " + ", ".join(a) + f" FROM ({inner(h, tag, pre)}) GROUP BY __p0, __p1 FORMAT RowBinary", settings)
V = {
 "v0_main": lambda h: v(h),
 "v1_sid": lambda h: v(h, key="__sid", tag=False),
 "v1_sid_pre": lambda h: v(h, key="__sid", tag=False, pre=True),
 "v0_pre": lambda h: v(h, pre=True),
 "v1_sid_sumint": lambda h: v(h, key="__sid", tag=False, a=aggs(sumf="sum({v})")),
 "v1_sid_t1": lambda h: v(h, key="__sid", tag=False, settings="max_threads=1"),
 "v1_flat": lambda h: (f"SELECT {B.replace('__t','`time`')} AS __p0, `series_id` AS __p1, " + ", ".join(f"count(`{f}`)" for f in F) + ", " + ", ".join(f"sum(toFloat64(`{f}`))" for f in F) + f" FROM {T} AS __src WHERE {where(h)} GROUP BY __p0, __p1 FORMAT RowBinary", ""),
 "v0_t1": lambda h: v(h, settings="max_threads=1"),
}
only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(V)
V = {k: V[k] for k in only}
rounds = int(sys.argv[1])
res = {k: [] for k in V}
bodies = {}
def one(port, sql, out, i):
    sql, qs = sql
    t = time.perf_counter()
    out[i] = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/?{qs}", data=sql.encode())).read()
    out[i+2] = (time.perf_counter() - t) * 1000
names = list(V)
for r in range(rounds):
    h = r % 11
    order = names[r % len(names):] + names[:r % len(names)]
    for n in order:
        sql = V[n](h)
        out = [None]*4
        ths = [threading.Thread(target=one, args=(p, sql, out, i)) for i, p in enumerate((19411, 19412))]
        t = time.perf_counter()
        [x.start() for x in ths]; [x.join() for x in ths]
        res[n].append((time.perf_counter() - t) * 1000)
        bodies.setdefault((n, h), (len(out[0]), len(out[1])))
for n in names:
    print(f"{n:16s} p50 {statistics.median(res[n]):6.1f} min {min(res[n]):6.1f} ms  bytes {bodies[(n,0)]}")
