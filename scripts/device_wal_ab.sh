#!/usr/bin/env bash
# The single WAL writer's wall on a lent 16-core machine (issue #22 items 2-3), WAL settings A/B
# interleaved in one run. Not CI: it runs on the device machine, after ../shared/device/pack.sh
# here and its part-a call there (../shared/device/README.md), as
#   bash scripts/device_wal_ab.sh            (the working tree's copy; .dev/b carried)
# Per round and variant (`[BUILD@]COMPRESSION:WRITE_BUFFER_MIB`, VARIANTS; BUILD is a server
# binary under /root/bin, default `chingest`: a previous release goes in as `chingest-prev`
# through .dev/b/prev.tar.xz), a fresh server pinned to cores 0..N-1 is ramped by
# chingest-load on the other cores (RATES requests/s of 50,000 points, STEP s each, the kit's
# payload), for each `N:RATES` of PLAN (default `12:60,80,100,120`); recorded: the ramp JSON,
# the bytes the server wrote to storage per acknowledged point over the ramp plus 5 s
# (/proc/PID/io write_bytes: WAL, RocksDB flushes and compactions, engine parts and merges), and
# per thread group the cores busy and bytes written during the third step. Results under $OUT.
set -uo pipefail
: "${OUT:=/tmp/out}"; mkdir -p "$OUT"
PLAN=${PLAN:-"12:60,80,100,120"}; STEP=${STEP:-8}; ROUNDS=${ROUNDS:-2}
VARIANTS=${VARIANTS:-"none:128 lz4:128 lz4:512"}
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
ver=$(cat .dev/b/engine-version)
E=/root/.cache/chingest/engine/$ver; mkdir -p "$E" /root/bin
if [ ! -s "$E/libchdb.so" ]; then
  cat /root/stage/part-a .dev/b/part-b > /root/libchdb.so.xz
  echo "$(cat .dev/b/libchdb.sha256)  /root/libchdb.so.xz" | sha256sum -c - >/dev/null \
    || { log "engine parts do not match"; exit 3; }
  xz -d -T0 -c /root/libchdb.so.xz > "$E/libchdb.so" && rm /root/libchdb.so.xz
fi
tar -C /root -xJf .dev/b/bins.tar.xz
# The previous release, packed here by: strip -o /tmp/p/bin/chingest-prev OLD && tar -C /tmp/p -cJf .dev/b/prev.tar.xz bin
[ -s .dev/b/prev.tar.xz ] && tar -C /root -xJf .dev/b/prev.tar.xz
log "host: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB; $(grep -m1 'model name' /proc/cpuinfo); data on $(df -T /root | awk 'NR==2{print $2}')"
[ -d /root/payloads ] || /root/bin/chingest-load gen --out /root/payloads >/dev/null
PID=
stop() { [ -n "$PID" ] && kill -TERM $PID 2>/dev/null; for _ in $(seq 120); do kill -0 $PID 2>/dev/null || break; sleep 0.5; done; kill -KILL $PID 2>/dev/null; PID=; }
trap stop EXIT
wbytes() { awk '/^write_bytes/{print $2}' /proc/$1/io; }
# Cores busy and bytes written per thread group over 6 s.
threads() {
  local p=$1
  snap() { for t in /proc/$p/task/*; do c=$(tr ' ' _ < $t/comm 2>/dev/null); s=$(awk '{print $14+$15}' $t/stat 2>/dev/null); w=$(awk '/^write_bytes/{print $2}' $t/io 2>/dev/null); [ -n "$c" ] && [ -n "$s" ] && echo "$c $s ${w:-0}"; done; }
  snap > /tmp/t1; sleep 6; snap > /tmp/t2
  { echo "== $2"; awk 'function g(c){ if (c ~ /^chingest-wal-wr/) return "wal-writer"; if (c ~ /^rocksdb/) return "rocksdb"; if (c ~ /^chingest-flush/) return "flusher"; if (c ~ /^tokio|^chingest-http|^chingest-parse|^chingest-cpu/) return "http+parse"; return "engine+other:" c }
      NR==FNR{a[g($1)]+=$2; aw[g($1)]+=$3; next}{b[g($1)]+=$2; bw[g($1)]+=$3}
      END{for(k in b) printf "  %-40s %6.2f cores %8.1f MB/s\n", k, (b[k]-a[k])/600, (bw[k]-aw[k])/6e6}' /tmp/t1 /tmp/t2 | sort -k2 -nr | head -16; } >> "$OUT/threads.txt"
}
run() {  # ROUND BUILD COMPRESSION BUFFER_MIB
  local name="n$N-r$1-$2-$3-$4" d=/root/data; rm -rf $d
  set -- "$1" "$3" "$4" "$2"   # ROUND COMPRESSION BUFFER_MIB BUILD
  CHINGEST_STORAGE__DATA_DIR=$d CHINGEST_SERVER__LISTEN=127.0.0.1:18086 NO_COLOR=1 \
    CHINGEST_STORAGE__WAL_COMPRESSION=$2 CHINGEST_WAL__WRITE_BUFFER_BYTES=$(($3 << 20)) \
    taskset -c 0-$((N-1)) /root/bin/$4 serve >"$OUT/server-$name.log" 2>&1 & PID=$!
  for _ in $(seq 120); do curl -s -o /dev/null http://127.0.0.1:18086/ping && break; sleep 0.25; done
  curl -s -XPOST http://127.0.0.1:18086/query --data-urlencode 'q=CREATE DATABASE bench' >/dev/null
  local w0; w0=$(wbytes $PID)
  ( sleep $((2 * STEP + 1)); threads $PID "$name, third step" ) &
  taskset -c $N-$(( $(nproc) - 1 )) /root/bin/chingest-load ramp --url 'http://127.0.0.1:18086/write?db=bench' \
    --payloads /root/payloads --rates "$RATES" --step-secs $STEP --server-pid $PID --results "$OUT" --name "$name" \
    > "$OUT/ramp-$name.txt" 2>&1
  sleep 5
  local w1; w1=$(wbytes $PID)
  local acked; acked=$(python3 -c "import json,sys; print(sum(s['ok_points'] for s in json.load(open(sys.argv[1]))['steps']))" "$OUT/$name.json" 2>/dev/null || echo 0)
  local left; left=$(curl -s http://127.0.0.1:18086/health | python3 -c "import json,sys; print(json.load(sys.stdin)['wal']['unflushed_points'])" 2>/dev/null || echo '?')
  local bpp; bpp=$(python3 -c "print(round(($w1-$w0)/max($acked,1),1))")
  log "$name: acknowledged $acked ($left not yet in the engine 5 s later), $bpp bytes written per acknowledged point"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('  sustainable', r['summary']['sustainable']); [print('  step', s['index'], s.get('offered_points_per_sec'), round(s['achieved_points_per_sec']), 'p95', round(s['latency']['p95_us']/1000), 'cpu', s.get('server_cpu_pct'), 'failed', s['failed']) for s in r['steps']]" "$OUT/$name.json" 2>&1 | tee -a "$OUT/log.txt"
  stop
}
for p in $PLAN; do
  N=${p%%:*}; RATES=${p#*:}
  for r in $(seq "$ROUNDS"); do
    for v in $VARIANTS; do
      b=chingest; case $v in *@*) b=${v%%@*}; v=${v#*@} ;; esac
      run "$r" "$b" "${v%%:*}" "${v##*:}"
    done
  done
done
cd "$OUT" && tar czf /tmp/results.tgz --exclude='*.tgz' . && mv /tmp/results.tgz "$OUT/results.tgz" \
  && find . -maxdepth 1 -type f ! -name log.txt ! -name threads.txt ! -name results.tgz -delete
cat "$OUT/threads.txt" 2>/dev/null
