#!/usr/bin/env python3
"""Writes data.lp, the dataset of the InfluxQL differential test
(server/tests/http/influxql_diff.rs), to stdout. Deterministic (its own LCG,
no wall clock): rerunning it reproduces data.lp byte for byte.

    python3 server/tests/data/influxql/gen_data.py > server/tests/data/influxql/data.lp

The data lies between 2020-09-13T12:00:00Z and 16:00:00Z (epoch 1599998400 s
to 1600012800 s), written in batches; a batch starts with a directive line
`#! db=<db> precision=<p>` and the test POSTs each batch to both servers, in
order, with those parameters. Other `#` lines are comments.

What it holds and why:
- cpu (host, region): floats usage_user/usage_system/usage_idle, integer procs,
  string state, boolean throttled; irregular intervals (15-30 s); server04
  only reports from 13:00 to 15:00 (empty and NULL-filled groups); every 17th
  point lacks usage_system (missing field).
- mem (host): Telegraf-like used_percent/available_percent floats and
  used/available/total integers, every 60 s.
- net (host, interface): monotonic integer counters, a counter reset on
  server02/eth0 at 14:00 (non_negative_derivative/difference).
- disk (host, path): one series without `path`, one without `host`.
- weather (location): each point carries a random subset of its fields,
  nanosecond timestamps with sub-second parts.
- rewritten points (the last batches): the same series and time written again
  with other or partial fields, a new field, and a duplicate inside one batch;
  InfluxDB merges them field by field, the last write winning.
- db `other`: a little cpu data, for fully qualified names and SHOW DATABASES.
"""

BASE = 1599998400  # 2020-09-13T12:00:00Z
END = BASE + 4 * 3600


class Lcg:
    """A small deterministic generator (Knuth's MMIX constants)."""

    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return self.state >> 33

    def uniform(self, lo, hi):
        return lo + (hi - lo) * (self.next() / float(1 << 31))

    def int(self, lo, hi):
        return lo + self.next() % (hi - lo + 1)


def f2(x):
    """A float field value with two decimals (exact in the line protocol)."""
    return "%.2f" % x


def cpu(out, rng):
    regions = {"server01": "us-east", "server02": "us-east", "server03": "us-west", "server04": "eu-central"}
    states = ["ok", "ok", "ok", "warn", "crit"]
    for host, region in regions.items():
        t = BASE + rng.int(0, 9)
        stop = END
        if host == "server04":
            t, stop = BASE + 3600 + rng.int(0, 9), BASE + 3 * 3600
        user = rng.uniform(5, 40)
        n = 0
        while t < stop:
            user = min(95.0, max(0.5, user + rng.uniform(-4, 4)))
            system = rng.uniform(1, 10)
            idle = max(0.0, 100.0 - user - system)
            fields = ["usage_user=" + f2(user)]
            if n % 17 != 5:
                fields.append("usage_system=" + f2(system))
            fields.append("usage_idle=" + f2(idle))
            fields.append("procs=%di" % rng.int(80, 160))
            fields.append('state="%s"' % states[rng.int(0, len(states) - 1)])
            fields.append("throttled=" + ("true" if rng.int(0, 9) == 0 else "false"))
            out.append("cpu,host=%s,region=%s %s %d" % (host, region, ",".join(fields), t))
            t += rng.int(15, 30)
            n += 1


def mem(out, rng):
    total = 16 * 1024 * 1024 * 1024
    for host in ["server01", "server02", "server03"]:
        used = rng.int(4, 8) * 1024 * 1024 * 1024
        for t in range(BASE, END, 60):
            used = min(total - 1, max(1 << 30, used + rng.int(-50, 50) * 1024 * 1024))
            used_pct = 100.0 * used / total
            out.append(
                "mem,host=%s used=%di,available=%di,total=%di,used_percent=%s,available_percent=%s %d"
                % (host, used, total - used, total, f2(used_pct), f2(100 - used_pct), t)
            )


def net(out, rng):
    for host in ["server01", "server02"]:
        for iface in ["eth0", "lo"]:
            recv, sent, packets, errs = rng.int(10**6, 10**7), rng.int(10**6, 10**7), rng.int(10**4, 10**5), 0
            for t in range(BASE, END, 60):
                if host == "server02" and iface == "eth0" and t == BASE + 2 * 3600:
                    recv, sent, packets = rng.int(0, 5000), rng.int(0, 5000), rng.int(0, 50)  # reboot
                recv += rng.int(1000, 200000)
                sent += rng.int(1000, 100000)
                packets += rng.int(10, 500)
                if rng.int(0, 29) == 0:
                    errs += 1
                out.append(
                    "net,host=%s,interface=%s bytes_recv=%di,bytes_sent=%di,packets_recv=%di,err_in=%di %d"
                    % (host, iface, recv, sent, packets, errs, t)
                )


def disk(out, rng):
    series = ["host=server01,path=/", "host=server01,path=/data", "host=server02", "path=/backup"]
    for tags in series:
        used = rng.uniform(20, 60)
        for t in range(BASE + 30, END, 120):
            used = min(99.0, used + rng.uniform(0, 0.3))
            out.append("disk,%s used_percent=%s,free=%di %d" % (tags, f2(used), int((100 - used) * 10**7), t))


def weather(out, rng):
    for location in ["north", "south"]:
        t = BASE * 10**9 + rng.int(0, 10**9)
        for _ in range(150):
            fields = []
            if rng.int(0, 3) != 0:
                fields.append("temperature=" + f2(rng.uniform(-5, 30)))
            if rng.int(0, 2) != 0:
                fields.append("humidity=" + f2(rng.uniform(20, 90)))
            if rng.int(0, 4) == 0:
                fields.append("wind=%di" % rng.int(0, 40))
            if rng.int(0, 9) == 0:
                fields.append('note="gust %d"' % rng.int(1, 9))
            if not fields:
                fields.append("humidity=" + f2(rng.uniform(20, 90)))
            out.append("weather,location=%s %s %d" % (location, ",".join(fields), t))
            t += rng.int(30, 150) * 10**9 + rng.int(0, 10**9 - 1)


def batches(lines, size=2000):
    for i in range(0, len(lines), size):
        yield lines[i : i + size]


def main():
    rng = Lcg(12)
    out = []

    def emit(db, precision, lines, note):
        for chunk in batches(lines):
            out.append("# " + note)
            out.append("#! db=%s precision=%s" % (db, precision))
            out.extend(chunk)

    for name, gen, precision in [("cpu", cpu, "s"), ("mem", mem, "s"), ("net", net, "s"), ("disk", disk, "s")]:
        lines = []
        gen(lines, rng)
        emit("diff", precision, lines, name)
    lines = []
    weather(lines, rng)
    emit("diff", "ns", lines, "weather: random field subsets, nanosecond times")

    # Rewrites. The times are those of points written above (cpu from its first
    # lines, so the generator's order fixes them).
    cpu01 = [l for l in out if l.startswith("cpu,host=server01,")]
    times = [int(l.rsplit(" ", 1)[1]) for l in cpu01]
    rewrites = [
        # partial: only usage_user changes, the other fields stay
        "cpu,host=server01,region=us-east usage_user=99.5 %d" % times[3],
        "cpu,host=server01,region=us-east usage_user=98.25,state=\"rewritten\" %d" % times[10],
        # a field only a rewrite carries
        "cpu,host=server01,region=us-east usage_guest=1.5 %d" % times[20],
        "cpu,host=server01,region=us-east usage_guest=2.5,usage_user=0.75 %d" % times[21],
        # a field the original lacked (every 17th point has no usage_system)
        "cpu,host=server01,region=us-east usage_system=42.42 %d" % times[5],
        # twice in one batch: the second wins
        "cpu,host=server01,region=us-east usage_idle=11.11 %d" % times[30],
        "cpu,host=server01,region=us-east usage_idle=22.22 %d" % times[30],
        # a new point between existing ones
        "cpu,host=server01,region=us-east usage_user=50.5,usage_idle=49.5 %d" % (times[40] + 1),
        "disk,host=server02 used_percent=77.77 %d" % (BASE + 30 + 120 * 7),
        "mem,host=server03 used_percent=10.01 %d" % (BASE + 60 * 12),
        "mem,host=server03 used_percent=20.02,used=1i %d" % (BASE + 60 * 12),
    ]
    emit("diff", "s", rewrites, "rewritten points: InfluxDB merges field by field, last write wins")
    # The same point once more, addressed in milliseconds.
    emit("diff", "ms", ["cpu,host=server01,region=us-east usage_user=97.125 %d" % (times[3] * 1000)], "a rewrite in ms")

    other = []
    for i in range(20):
        other.append("cpu,host=alpha usage_user=%s %d" % (f2(10 + i), BASE + 600 * i))
    emit("other", "s", other, "db other: fully qualified names")
    # Twenty series with points at the same two times: first() and last() without GROUP BY
    # must pick among them by a rule (the larger value), not by the order rows are read in.
    tie = []
    for i in range(20):
        tie.append("tie,host=h%02d v=%d,f=%s %d" % (i, (i * 13) % 20 + 1, f2((i * 13) % 20 + 0.5), BASE))
        tie.append("tie,host=h%02d v=%d,f=%s %d" % (i, (i * 7) % 20 + 1, f2((i * 7) % 20 + 0.5), BASE + 60))
    emit("other", "s", tie, "db other: series that share their times")
    print("\n".join(out))


if __name__ == "__main__":
    main()
