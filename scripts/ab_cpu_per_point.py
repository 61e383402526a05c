#!/usr/bin/env python3
"""CPU per acknowledged-and-flushed point of two or more chingest builds, same run (not CI).

    python3 scripts/ab_cpu_per_point.py OLD_BIN NEW_BIN      (payloads: PAYLOADS, default /tmp/ab/payloads)

Per round and build (3 rounds, builds interleaved): a fresh server with the default config on
a temp dir, N (240) requests of the payload files (`chingest-load gen`, as scripts/ab_ramp.sh
makes them) posted by 4 closed-loop clients (a 429/503 is retried after 200 ms), then waited
until /health shows every point in the engine; the server's user+system CPU over that span
divided by the points, and the bytes it had written to storage (`/proc/<pid>/io` write_bytes:
WAL, RocksDB flushes and compactions, engine parts and merges so far) per point. A BIN may be a
wrapper script that sets `CHINGEST_…` overrides (one build, two configs). Where an open-model ramp's p95 at saturation is noisy round to round,
this says whether a change costs CPU on the write path (parse, WAL, flush, merges so far).
"""
import sys, os, time, json, subprocess, tempfile, threading, urllib.request, glob
bins = sys.argv[1:]
files = sorted(glob.glob(os.path.join(os.environ.get('PAYLOADS', '/tmp/ab/payloads'), '*.lp')))
bodies = [open(f,'rb').read() for f in files]
def write_bytes(pid):
    for line in open(f'/proc/{pid}/io'):
        if line.startswith('write_bytes:'):
            return int(line.split()[1])
    return 0
def ticks(pid):
    f = open(f'/proc/{pid}/stat').read().split(')')[1].split()
    return int(f[11]) + int(f[12])
def post(url, body):
    for _ in range(100):
        try:
            r = urllib.request.urlopen(urllib.request.Request(url, data=body, method='POST'), timeout=60)
            return r.status
        except urllib.error.HTTPError as e:
            if e.code in (429, 503): time.sleep(0.2); continue
            raise
def health(port):
    return json.load(urllib.request.urlopen(f'http://127.0.0.1:{port}/health'))['wal']
N = 240
for rnd in range(3):
    for b in bins:
        d = tempfile.mkdtemp()
        port = 18078
        open(f'{d}/c.toml','w').write(f'[server]\nlisten = "127.0.0.1:{port}"\n\n[storage]\ndata_dir = "{d}/data"\n')
        p = subprocess.Popen([b, 'serve', '--config', f'{d}/c.toml'], stdout=open(f'{d}/log','w'), stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                urllib.request.urlopen(f'http://127.0.0.1:{port}/ping'); break
            except Exception: time.sleep(0.2)
        urllib.request.urlopen(urllib.request.Request(f'http://127.0.0.1:{port}/query?q=CREATE+DATABASE+bench', method='POST'))
        t0 = ticks(p.pid); b0 = write_bytes(p.pid); w0 = time.time()
        idx = [0]; lock = threading.Lock()
        def worker():
            while True:
                with lock:
                    i = idx[0]; idx[0] += 1
                if i >= N: return
                post(f'http://127.0.0.1:{port}/write?db=bench', bodies[i % len(bodies)])
        ts = [threading.Thread(target=worker) for _ in range(4)]
        [t.start() for t in ts]; [t.join() for t in ts]
        w1 = time.time()
        while True:
            h = health(port)
            if h['unflushed_points'] == 0 and h['flushed_seq'] is not None and h['flushed_seq'] >= h['last_seq']: break
            time.sleep(0.2)
        t1 = ticks(p.pid); b1 = write_bytes(p.pid)
        print(f'round {rnd} {b}: {N*50000/(w1-w0)/1e3:.0f}k pts/s wall, cpu {(t1-t0)/100:.1f} s for {N*50000/1e6:.0f}M points = {(t1-t0)*1e4/(N*50000):.2f} us/pt, disk writes {(b1-b0)/(N*50000):.0f} B/pt', flush=True)
        p.terminate(); p.wait()
        subprocess.run(['rm','-rf',d])
        time.sleep(3)
