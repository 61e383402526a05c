#!/usr/bin/env python3
"""Same-run A/B of two chingest builds on TSBS's small query types, hot store on
(issue #44: dashboards under a millisecond), with each statement's stages.

Both servers get TSBS `cpu-only` data (`chingest-load tsbs-fill`: 200 hosts x
24 h, 10 integer fields every 10 s) with `[hot] enabled = true`. Then per type
QUERIES TSBS-shaped queries (windows and hosts drawn as TSBS does, one seed)
run one at a time on one keep-alive connection per server, the servers
alternating query by query; every answer must be byte-equal between the two.
Printed: p50/p95 per type and build (HTTP included: the client's wall time
from request to last body byte), the read path each build took, and the
medians of each `Server-Timing` stage where a build sends it (docs/influxql.md),
and how each build ran the statements (`chingest_influxql_inline_total` by
outcome: inline, refused inline and run again, blocking).

Usage: [QUERIES=50 ROUNDS=2 HOSTS=200 LOAD=path/to/chingest-load TYPES=a,b] \
  scripts/hot_stage_ab.py BEFORE_BINARY AFTER_BINARY
(ports PORT and PORT+1, 18741 unless PORT is set; data under
${DIR:-/tmp/hot-stage-ab}-*). REUSE=1 starts the
servers on the data a previous run left (no fill; the hot store refills from
the engine at start-up); HOLD=1 keeps them running after the queries until
Ctrl-C (for `perf record -p`); ATTACH=1 only queries servers already
running on the two ports (another run's, held).
"""
import http.client, json, os, random, shutil, statistics, subprocess, sys, time, urllib.parse
from datetime import datetime, timezone

BEFORE, AFTER = sys.argv[1], sys.argv[2]
QUERIES = int(os.environ.get("QUERIES", "50"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
HOSTS = int(os.environ.get("HOSTS", "200"))
HOURS = 24
LOAD = os.environ.get("LOAD", "target/release/chingest-load")
START_NS = 1_451_606_400_000_000_000  # TSBS's default start, as chingest-load's
END_NS = START_NS + HOURS * 3600 * 10**9
FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
          "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
TYPES = os.environ.get("TYPES", "single-groupby-1-1-1,single-groupby-1-8-1,single-groupby-5-1-1,"
                       "cpu-max-all-1,high-cpu-1,lastpoint,cpu-max-all-8").split(",")


REUSE = os.environ.get("REUSE") == "1"
PORT = int(os.environ.get("PORT", "18741"))
DIR = os.environ.get("DIR", "/tmp/hot-stage-ab")


def start(name, binary, port):
    d = f"{DIR}-{name}"
    # A server left on the port (another run's, held) would answer the
    # /ping below while this one fails to bind: the run would time the old one.
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/ping")
        c.getresponse()
        raise SystemExit(f"{name}: port {port} already answers (another run's server?)")
    except OSError:
        pass
    if not REUSE:
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d, exist_ok=True)
    cfg = f"{d}/config.toml"
    with open(cfg, "w") as f:
        f.write("[hot]\nenabled = true\n")
    env = dict(os.environ, CHINGEST_SERVER__LISTEN=f"127.0.0.1:{port}",
               CHINGEST_STORAGE__DATA_DIR=f"{d}/data", RUST_LOG="warn")
    log = open(f"{d}/server.log", "a")
    p = subprocess.Popen([binary, "serve", "--config", cfg], env=env,
                         stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/ping")
            if c.getresponse().status == 204 and p.poll() is None:
                return p
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{name} did not start")


def fill(name, port):
    subprocess.run([LOAD, "tsbs-fill", "--server", f"{name}=http://127.0.0.1:{port}",
                    "--hosts", str(HOSTS), "--hours", str(HOURS), "--batch", str(HOSTS * 10),
                    "--out", f"{DIR}-{name}/fill.json"],
                   check=True, stdout=subprocess.DEVNULL)
    for _ in range(1200):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/health")
        w = json.loads(c.getresponse().read())["wal"]
        if w["unflushed_points"] == 0 and w["flushed_seq"] is not None and w["flushed_seq"] >= w["last_seq"]:
            return
        time.sleep(0.5)
    raise SystemExit(f"{name} did not flush")


def rfc3339(s):
    return datetime.fromtimestamp(s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def window(rng, hours):
    last = (END_NS - hours * 3600 * 10**9 - START_NS) // 10**9
    f = START_NS // 10**9 + rng.randint(0, last)
    return rfc3339(f), rfc3339(f + hours * 3600)


def hosts(rng, n):
    return "(" + " or ".join(f"hostname = 'host_{h}'" for h in rng.sample(range(HOSTS), n)) + ")"


def draw(t, rng):
    calls = lambda fn, n: ", ".join(f"{fn}({f})" for f in FIELDS[:n])
    if t.startswith("single-groupby-"):
        nf, nh, hrs = map(int, t.split("-")[2:])
        a, b = window(rng, hrs)
        return (f"SELECT {calls('max', nf)} from cpu where {hosts(rng, nh)} and time >= '{a}' "
                f"and time < '{b}' group by time(1m)")
    if t.startswith("cpu-max-all-"):
        a, b = window(rng, 8)
        return (f"SELECT {calls('max', 10)} from cpu where {hosts(rng, int(t.split('-')[3]))} "
                f"and time >= '{a}' and time < '{b}' group by time(1h)")
    if t == "high-cpu-1":
        a, b = window(rng, 12)
        return f"SELECT * from cpu where usage_user > 90.0 and {hosts(rng, 1)} and time >= '{a}' and time < '{b}'"
    if t == "lastpoint":
        return 'SELECT * from cpu group by "hostname" order by time desc limit 1'
    raise SystemExit(f"unknown type {t}")


def get(conn, q):
    path = "/query?" + urllib.parse.urlencode({"db": "benchmark", "q": q})
    t0 = time.perf_counter()
    try:
        conn.request("GET", path)
        r = conn.getresponse()
    except (http.client.RemoteDisconnected, ConnectionError):
        # The server closed the idle keep-alive connection (a long wait on
        # the other server's refill): once more on a new one, timed anew.
        conn.close()
        t0 = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
    body = r.read()
    dt = time.perf_counter() - t0
    assert r.status == 200, body
    return dt, body, r.getheader("X-Chingest-Read-Path"), r.getheader("Server-Timing")


def inline_counts(conn):
    """`chingest_influxql_inline_total` by outcome (how statements ran)."""
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("chingest_influxql_inline_total{outcome=\""):
            name = line.split('"')[1]
            out[name] = float(line.rsplit(" ", 1)[1])
    return out


def stages(header):
    out = {}
    for part in (header or "").split(","):
        bits = part.strip().split(";")
        for b in bits[1:]:
            if b.strip().startswith("dur="):
                out[bits[0].strip()] = float(b.strip()[4:])
    return out


def main():
    if os.environ.get("ATTACH") == "1":
        run({"before": (None, PORT), "after": (None, PORT + 1)})
        return
    servers = {}
    try:
        servers["before"] = (start("before", BEFORE, PORT), PORT)
        servers["after"] = (start("after", AFTER, PORT + 1), PORT + 1)
        for name, (_, port) in servers.items():
            if REUSE:
                break
            t0 = time.time()
            fill(name, port)
            print(f"{name}: filled and flushed in {time.time() - t0:.0f} s", flush=True)
        run(servers)
        if os.environ.get("HOLD") == "1":
            print("holding: " + ", ".join(f"{k} pid {p.pid} port {port}" for k, (p, port) in servers.items()), flush=True)
            while True:
                time.sleep(3600)
    finally:
        for p, _ in servers.values():
            p.terminate()
        for p, _ in servers.values():
            p.wait(timeout=120)


def run(servers):
    conns = {k: http.client.HTTPConnection("127.0.0.1", port, timeout=60) for k, (_, port) in servers.items()}
    # The hot store must serve: wait until both answer a small read from it.
    probe = draw("single-groupby-1-1-1", random.Random(1))
    for name, conn in conns.items():
        for _ in range(600):
            if get(conn, probe)[2] == "hot":
                break
            time.sleep(1)
        else:
            raise SystemExit(f"{name}: the hot store never served")
    print(f"load average before the queries: {os.getloadavg()}", flush=True)
    for t in TYPES:
        rng = random.Random(f"44-{t}")
        qs = [draw(t, rng) for _ in range(QUERIES)]
        lat = {k: [] for k in conns}
        paths = {k: set() for k in conns}
        st = {k: {} for k in conns}
        for q in qs[:3]:  # warm-up, untimed
            for conn in conns.values():
                get(conn, q)
        counted = {k: inline_counts(c) for k, c in conns.items()}
        for r in range(ROUNDS):
            order = list(conns) if r % 2 == 0 else list(reversed(conns))
            for q in qs:
                bodies = {}
                for k in order:
                    dt, body, path, timing = get(conns[k], q)
                    lat[k].append(dt * 1e3)
                    paths[k].add(path)
                    bodies[k] = body
                    for s, v in stages(timing).items():
                        st[k].setdefault(s, []).append(v)
                assert bodies["before"] == bodies["after"], (t, q)
        line = f"{t:22}"
        for k in conns:
            xs = sorted(lat[k])
            p95 = xs[int(0.95 * (len(xs) - 1))]
            line += f"  {k}: p50 {statistics.median(xs):.3f} p95 {p95:.3f} ms ({'/'.join(sorted(map(str, paths[k])))})"
        print(line, flush=True)
        for k, c in conns.items():
            now = inline_counts(c)
            ran = {o: now[o] - counted[k].get(o, 0) for o in sorted(now) if now[o] != counted[k].get(o, 0)}
            print(f"{'':22}  {k} ran (statements): " +
                  ", ".join(f"{o} {n:.0f}" for o, n in ran.items()), flush=True)
        for k in conns:
            if st[k]:
                print(f"{'':22}  {k} stages (median ms): " +
                      ", ".join(f"{s} {statistics.median(v):.3f}" for s, v in st[k].items()), flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
