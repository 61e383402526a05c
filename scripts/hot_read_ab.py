#!/usr/bin/env python3
"""Grafana's regex panels, TSBS high-cpu-1 and a raw "last 20 points" read on
two chingest servers of one binary, the hot store on and off (issue #44).

Both get the same points: 100 hosts x 10 float fields (TSBS `cpu`'s names), one
point per 10 s over the last hour. Each query's answers must agree (floats
within 1e-9: the two paths sum floats in different orders) and each server's
`X-Chingest-Read-Path` must say `hot` and `engine`. Then the queries run
sequentially on one keep-alive connection per server, the servers alternating
round by round; p50/p95 per query and path.
Usage: [ROUNDS=6 PER_ROUND=40] scripts/hot_read_ab.py target/release/chingest
(ports 18641 and 18642, data under /tmp/hoteval-bench-*).
"""
import http.client, json, os, random, shutil, statistics, subprocess, sys, time, urllib.parse

BIN = sys.argv[1]
ROUNDS = int(os.environ.get("ROUNDS", "6"))
PER_ROUND = int(os.environ.get("PER_ROUND", "40"))
FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
          "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]


def start(name, port, hot):
    d = f"/tmp/hoteval-bench-{name}"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = f"{d}/config.toml"
    with open(cfg, "w") as f:
        f.write(f"[hot]\nenabled = {'true' if hot else 'false'}\n")
    env = dict(os.environ, CHINGEST_SERVER__LISTEN=f"127.0.0.1:{port}",
               CHINGEST_STORAGE__DATA_DIR=f"{d}/data", RUST_LOG="warn")
    log = open(f"{d}/server.log", "w")
    p = subprocess.Popen([BIN, "serve", "--config", cfg], env=env, stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/ping")
            if c.getresponse().status == 204:
                return p
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{name} did not start")


def req(conn, method, path, body=None):
    conn.request(method, path, body=body)
    r = conn.getresponse()
    data = r.read()
    return r.status, data, r.getheader("X-Chingest-Read-Path")


def main():
    servers = {}
    try:
        servers["hot"] = (start("hot", 18641, True), 18641)
        servers["engine"] = (start("engine", 18642, False), 18642)
        run(servers)
    finally:
        for p, _ in servers.values():
            p.terminate()
        for p, _ in servers.values():
            p.wait(timeout=60)


def run(servers):
    conns = {k: http.client.HTTPConnection("127.0.0.1", port, timeout=60) for k, (_, port) in servers.items()}
    now = time.time_ns()
    start_ns = now - 3600 * 10**9
    rng = random.Random(44)
    lines = []
    for h in range(100):
        for k in range(360):
            t = start_ns + k * 10 * 10**9 + h * 10**7
            vals = ",".join(f"{f}={rng.uniform(0, 100):.2f}" for f in FIELDS)
            lines.append(f"cpu,hostname=host_{h},region=r{h % 3},datacenter=dc{h % 5} {vals} {t}")
    for name, conn in conns.items():
        st, body, _ = req(conn, "POST", "/query?q=CREATE+DATABASE+bench")
        assert st == 200, body
        for i in range(0, len(lines), 5000):
            st, body, _ = req(conn, "POST", "/write?db=bench", "\n".join(lines[i:i + 5000]).encode())
            assert st == 204, body
    ms = lambda ns: ns // 10**6
    queries = {
        "grafana 3 hosts =~ /^(a|b|c)$/": (
            'SELECT mean("usage_user") AS "user", mean("usage_system") AS "system", mean("usage_idle") AS "idle" '
            'FROM "cpu" WHERE ("hostname" =~ /^(host_1|host_7|host_42)$/) AND '
            f'time >= {ms(start_ns)}ms and time <= {ms(now)}ms GROUP BY time(10s), "hostname" fill(null)'),
        "grafana 1 host =~ /^a$/": (
            'SELECT mean("usage_user") FROM "cpu" WHERE ("hostname" =~ /^host_42$/) AND '
            f'time >= {ms(start_ns)}ms and time <= {ms(now)}ms GROUP BY time(30s), "hostname" fill(null)'),
        "tsbs high-cpu-1": (
            f"SELECT * FROM cpu WHERE usage_user > 90.0 AND time >= {start_ns} AND time < {now} "
            "AND hostname = 'host_42'"),
        "raw last 20 points": (
            "SELECT usage_user, usage_system FROM cpu WHERE hostname = 'host_42' "
            f"AND time >= {start_ns} ORDER BY time DESC LIMIT 20"),
    }
    # The same answer on both, and each path as expected.
    for label, q in queries.items():
        path = "/query?" + urllib.parse.urlencode({"db": "bench", "q": q, "epoch": "ns"})
        answers = {}
        for name, conn in conns.items():
            st, body, rp = req(conn, "GET", path)
            assert st == 200, body
            answers[name] = json.loads(body)
            assert rp == ("hot" if name == "hot" else "engine"), (label, name, rp)
        def close(a, b):
            if isinstance(a, float) or isinstance(b, float):
                return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
            if isinstance(a, list):
                return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
            if isinstance(a, dict):
                return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
            return a == b
        exact = answers["hot"] == answers["engine"]
        assert close(answers["hot"], answers["engine"]), label
        rows = sum(len(s["values"]) for s in answers["hot"]["results"][0].get("series", []))
        print(f"{label}: {rows} rows, answers {'equal' if exact else 'equal within 1e-9 (float sums in another order)'}")
    lat = {(l, n): [] for l in queries for n in conns}
    for r in range(ROUNDS):
        order = list(conns.items()) if r % 2 == 0 else list(conns.items())[::-1]
        for name, conn in order:
            for label, q in queries.items():
                path = "/query?" + urllib.parse.urlencode({"db": "bench", "q": q})
                for i in range(PER_ROUND + (5 if r == 0 else 0)):
                    t0 = time.perf_counter()
                    st, body, rp = req(conn, "GET", path)
                    dt = time.perf_counter() - t0
                    assert st == 200
                    if r > 0 or i >= 5:
                        lat[(label, name)].append(dt * 1000)
    print(f"\n{ROUNDS} rounds x {PER_ROUND} sequential requests per server and query (first 5 warm-up dropped)")
    print("| query | hot p50 ms | engine p50 ms | hot p95 ms | engine p95 ms | engine/hot p50 |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in queries:
        h, e = lat[(label, "hot")], lat[(label, "engine")]
        q = lambda v, p: statistics.quantiles(v, n=100)[p - 1]
        hp, ep = statistics.median(h), statistics.median(e)
        print(f"| {label} | {hp:.2f} | {ep:.2f} | {q(h, 95):.2f} | {q(e, 95):.2f} | {ep / hp:.1f}x |")


main()
