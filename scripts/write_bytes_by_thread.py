#!/usr/bin/env python3
"""Bytes written to storage per acknowledged point, split by the server's threads (not CI).

    PAYLOADS=/tmp/ab/payloads python3 scripts/write_bytes_by_thread.py BIN [SECONDS]

A fresh server (default config, temp dir) takes the payload files (`chingest-load gen`, as
scripts/ab_ramp.sh makes them) from 4 closed-loop clients for SECONDS (default 180: as long
as #22's soak); then, once `/health` shows every point in the engine, each thread's
`/proc/<pid>/task/<tid>/io` `write_bytes` (bytes it caused to be written to storage, counted
when it dirtied them) is summed by thread name (digits dropped) and divided by the points
acknowledged. Threads that exited take their counts with them: the process's own
`write_bytes` less the live threads' is shown as "exited threads". Where the bytes come from:
`chingest-wal-writer` appends the WAL (RocksDB's log and memtable), RocksDB's `rocksdb:*`
threads flush and compact it, chingest's flush workers write the engine's new parts, the
engine's background pool (`MergeMutate`, …) its merges.
"""
import sys, os, re, time, json, subprocess, tempfile, threading, urllib.request, glob, collections

binary = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 180.0
files = sorted(glob.glob(os.path.join(os.environ.get('PAYLOADS', '/tmp/ab/payloads'), '*.lp')))
bodies = [open(f, 'rb').read() for f in files]
points_per_body = [b.count(b'\n') for b in bodies]
port = 18077


def io_of(path):
    for line in open(path):
        if line.startswith('write_bytes:'):
            return int(line.split()[1])
    return 0


def post(url, body):
    while True:
        try:
            return urllib.request.urlopen(urllib.request.Request(url, data=body, method='POST'), timeout=60).status
        except urllib.error.HTTPError as e:
            if e.code in (429, 503):
                time.sleep(0.2)
                continue
            raise


d = tempfile.mkdtemp()
open(f'{d}/c.toml', 'w').write(f'[server]\nlisten = "127.0.0.1:{port}"\n\n[storage]\ndata_dir = "{d}/data"\n')
p = subprocess.Popen([binary, 'serve', '--config', f'{d}/c.toml'], stdout=open(f'{d}/log', 'w'), stderr=subprocess.STDOUT)
for _ in range(300):
    try:
        urllib.request.urlopen(f'http://127.0.0.1:{port}/ping')
        break
    except Exception:
        time.sleep(0.2)
urllib.request.urlopen(urllib.request.Request(f'http://127.0.0.1:{port}/query?q=CREATE+DATABASE+bench', method='POST'))
acked = [0]
lock = threading.Lock()
stop = time.time() + seconds


def worker(k):
    i = k
    while time.time() < stop:
        post(f'http://127.0.0.1:{port}/write?db=bench', bodies[i % len(bodies)])
        with lock:
            acked[0] += points_per_body[i % len(bodies)]
        i += 4


ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
while True:
    h = json.load(urllib.request.urlopen(f'http://127.0.0.1:{port}/health'))['wal']
    if h['unflushed_points'] == 0 and h['flushed_seq'] is not None and h['flushed_seq'] >= h['last_seq']:
        break
    time.sleep(0.2)
by_name = collections.Counter()
for task in glob.glob(f'/proc/{p.pid}/task/*'):
    try:
        name = re.sub(r'[0-9]+', '', open(f'{task}/comm').read().strip()) or '?'
        by_name[name] += io_of(f'{task}/io')
    except OSError:
        pass
total = io_of(f'/proc/{p.pid}/io')
by_name['exited threads'] = max(0, total - sum(by_name.values()))
n = acked[0]
print(f'{binary}: {n / 1e6:.1f}M points acknowledged in {seconds:.0f} s ({n / seconds / 1e3:.0f}k/s), '
      f'{total / n:.1f} B written per point in all')
for name, b in by_name.most_common():
    if b:
        print(f'  {name:28s} {b / n:7.1f} B/pt  {100 * b / total:5.1f} %')
p.terminate()
p.wait()
subprocess.run(['rm', '-rf', d])
