#!/usr/bin/env bash
# Prepares a machine to build and run chingest. Idempotent and quiet when
# everything is already in place; every failure says what failed and how to fix it.
#
#   scripts/setup.sh                 install apt packages, fetch the engine, write .cargo/config.toml
#   scripts/setup.sh --test-deps     also what the HTTP tests drive: the Python clients, Telegraf,
#                                    Prometheus, systemd-analyze and InfluxDB 1.x (Debian packages), curl,
#                                    Chromium and chromedriver, Selenium (the web console's browser tests)
#   scripts/setup.sh --save-rocksdb  keep the RocksDB static library cargo just built
#
# Caches live outside the checkout, under $CHINGEST_CACHE_DIR
# (default ${XDG_CACHE_HOME:-~/.cache}/chingest):
#   engine/<version>/libchdb.so       the embedded ClickHouse engine (from npm)
#   uplot/<version>/                  uPlot, the web console's charts (from npm; embedded at build)
#   rocksdb/<librocksdb-sys version>/ a prebuilt librocksdb.a (saves ~20 min a clean build)
#   venv/                             Python clients for the tests
#   telegraf/<version>/telegraf       Telegraf for the tests (built from the Go module proxy)
#   target-ci/                        cargo's target dir when CI=true
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CHINGEST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chingest}

# The engine: keep these three in step.
ENGINE_PACKAGE=@chdb/lib-linux-x64-gnu
ENGINE_VERSION=26.7.3-stable.1
ENGINE_SHA256=36ad4e999882821ef13cf2d0f52c93f48e6ee1b4498b35a201c23ce4b8d15bf5
ENGINE_DIR=$CACHE/engine/$ENGINE_VERSION

# The web console's charting library (server/src/console/), embedded into the binary at build
# time from this cache (`CHINGEST_UPLOT_DIR`): a dependency, not code in the repository. The
# checksum is of the npm tarball (whose SHA-1 the registry publishes: c800a63b…). Keep these
# two in step.
UPLOT_VERSION=1.6.32
UPLOT_SHA256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
UPLOT_DIR=$CACHE/uplot/$UPLOT_VERSION

# The RocksDB binding whose static library may be cached (see Cargo.lock).
ROCKSDB_SYS_VERSION=$(awk '/^name = "librocksdb-sys"/{getline; gsub(/version = |"/,""); print; exit}' "$ROOT/Cargo.lock" 2>/dev/null || true)
ROCKSDB_DIR=$CACHE/rocksdb/${ROCKSDB_SYS_VERSION:-unknown}

APT_PACKAGES=(libclang-dev libssl-dev pkg-config)

# Debian packages the HTTP tests run (server/tests/http/): python3-venv for the Python
# clients; prometheus (2.42 on bookworm: the server and promtool) scrapes the server with
# deploy/prometheus/; systemd for `systemd-analyze verify deploy/chingest.service`; curl is
# the container's HEALTHCHECK command. Installed without recommends (prometheus would pull
# in and start prometheus-node-exporter); where systemd runs, the packaged prometheus
# service may start on :9090: the tests use their own instance on a free loopback port.
# influxdb (1.6.7 on bookworm) is the oracle of the InfluxQL differential test
# (server/tests/http/influxql_diff.rs), which runs its own influxd on a temp dir and free
# loopback ports; the packaged service is stopped when installed here (see ensure_test_deps).
# clickhouse-server (18.16 on bookworm) is the peer of the cluster delivery test
# (cluster/tests/it/cluster.rs), which runs two servers of its own on free loopback ports; the
# packaged service is stopped where systemd started it (it would hold :8123 and :9000).
# zookeeper (3.8 on bookworm; no service of its own) is what the replica tests' servers
# share their replicated tables through (cluster/tests/it/cluster_replicas.rs): each test runs
# its own on a free loopback port.
# chromium and chromium-driver (headless, driven by Selenium from the venv) run the web
# console's browser tests (server/tests/http/console.rs) against a server of their own.
TEST_APT_PACKAGES=(python3-venv prometheus systemd curl influxdb clickhouse-server zookeeper
  chromium chromium-driver)

# Telegraf for the HTTP tests (server/tests/http/telegraf.rs): a custom build
# with only the plugins they use: ~1.5 min on 2 cores from a cold Go cache (Go >= 1.25),
# where the full build is far heavier. Bump the version here and in the test together.
TELEGRAF_VERSION=1.37.2
TELEGRAF_TAGS=custom,inputs.file,inputs.mem,parsers.influx,outputs.influxdb,outputs.influxdb_v2
TELEGRAF_DIR=$CACHE/telegraf/$TELEGRAF_VERSION

die() { echo "setup: $*" >&2; exit 1; }
say() { echo "setup: $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root to run '$*' (install sudo or run as root)"; fi
}

ensure_apt_packages() {
  local flags=()
  if [ "${1:-}" = "--no-install-recommends" ]; then flags=(--no-install-recommends); shift; fi
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get: install them with your package manager"
  say "installing ${missing[*]} with apt-get"
  as_root apt-get update -qq >/dev/null \
    || die "apt-get update failed: check the network to the Debian mirrors"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${flags[@]}" "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
}

ensure_engine() {
  if [ -f "$ENGINE_DIR/.complete" ] && [ -f "$ENGINE_DIR/libchdb.so" ]; then return 0; fi
  command -v npm >/dev/null || die "npm is needed to fetch the engine ($ENGINE_PACKAGE@$ENGINE_VERSION): apt-get install npm"
  say "fetching the engine $ENGINE_PACKAGE@$ENGINE_VERSION (~180 MB download, 566 MB unpacked)"
  local staging="$CACHE/engine/.staging.$$"
  rm -rf "$staging"; mkdir -p "$staging"
  (cd "$staging" && npm pack --silent "$ENGINE_PACKAGE@$ENGINE_VERSION" >/dev/null 2>"$staging/npm.log") \
    || die "npm pack $ENGINE_PACKAGE@$ENGINE_VERSION failed (no network to the npm registry?): $(tail -n 3 "$staging/npm.log")"
  tar -xzf "$staging"/*.tgz -C "$staging" || die "could not unpack the engine package"
  local sum; sum=$(sha256sum "$staging/package/libchdb.so" | cut -d' ' -f1)
  [ "$sum" = "$ENGINE_SHA256" ] || die "libchdb.so checksum mismatch: got $sum, want $ENGINE_SHA256"
  mkdir -p "$ENGINE_DIR"
  mv "$staging/package/libchdb.so" "$ENGINE_DIR/libchdb.so"
  echo "$ENGINE_SHA256" > "$ENGINE_DIR/.complete"
  say "engine cached at $ENGINE_DIR"
}

ensure_uplot() {
  if [ -f "$UPLOT_DIR/.complete" ] && [ -f "$UPLOT_DIR/uPlot.iife.min.js" ]; then return 0; fi
  command -v npm >/dev/null || die "npm is needed to fetch uplot@$UPLOT_VERSION (the console's charts): apt-get install npm"
  say "fetching uplot@$UPLOT_VERSION for the web console (~50 KB)"
  local staging="$CACHE/uplot/.staging.$$"
  rm -rf "$staging"; mkdir -p "$staging"
  (cd "$staging" && npm pack --silent "uplot@$UPLOT_VERSION" >/dev/null 2>"$staging/npm.log") \
    || die "npm pack uplot@$UPLOT_VERSION failed (no network to the npm registry?): $(tail -n 3 "$staging/npm.log")"
  local sum; sum=$(sha256sum "$staging/uplot-$UPLOT_VERSION.tgz" | cut -d' ' -f1)
  [ "$sum" = "$UPLOT_SHA256" ] || die "uplot-$UPLOT_VERSION.tgz checksum mismatch: got $sum, want $UPLOT_SHA256"
  tar -xzf "$staging/uplot-$UPLOT_VERSION.tgz" -C "$staging" || die "could not unpack the uplot package"
  mkdir -p "$UPLOT_DIR"
  cp "$staging/package/dist/uPlot.iife.min.js" "$staging/package/dist/uPlot.min.css" \
    "$staging/package/LICENSE" "$UPLOT_DIR/" || die "the uplot package lacks its dist files"
  echo "$UPLOT_SHA256" > "$UPLOT_DIR/.complete"
  rm -rf "$staging"
  say "uplot cached at $UPLOT_DIR"
}

target_dir() {
  if [ "${CI:-}" = "true" ]; then echo "$CACHE/target-ci"; else echo "$ROOT/target"; fi
}

write_cargo_config() {
  local rocksdb_env=""
  if [ -f "$ROCKSDB_DIR/librocksdb.a" ]; then
    rocksdb_env=$(printf 'ROCKSDB_LIB_DIR = "%s"\nROCKSDB_STATIC = "1"\n' "$ROCKSDB_DIR")
  fi
  local want; want=$(cat <<CONF
# Written by scripts/setup.sh; do not edit (it is rewritten on every setup).
[build]
target-dir = "$(target_dir)"

[env]
CHDB_LIB_DIR = "$ENGINE_DIR"
CHDB_INCLUDE_DIR = "$ROOT/engine/include"
CHINGEST_UPLOT_DIR = "$UPLOT_DIR"
$rocksdb_env
CONF
)
  mkdir -p "$ROOT/.cargo"
  if [ ! -f "$ROOT/.cargo/config.toml" ] || [ "$(cat "$ROOT/.cargo/config.toml")" != "$want" ]; then
    printf '%s\n' "$want" > "$ROOT/.cargo/config.toml"
  fi
}

save_rocksdb() {
  [ -f "$ROCKSDB_DIR/librocksdb.a" ] && return 0
  local lib
  lib=$(ls -t "$(target_dir)"/*/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -n 1 || true)
  [ -n "$lib" ] || return 0
  mkdir -p "$ROCKSDB_DIR"
  cp "$lib" "$ROCKSDB_DIR/librocksdb.a.tmp" && mv "$ROCKSDB_DIR/librocksdb.a.tmp" "$ROCKSDB_DIR/librocksdb.a"
  say "cached RocksDB's static library at $ROCKSDB_DIR (later clean builds link it)"
  write_cargo_config
}

ensure_test_deps() {
  local fresh_influxdb=0 fresh_clickhouse=0
  dpkg-query -W -f='${Status}' influxdb 2>/dev/null | grep -q "install ok installed" || fresh_influxdb=1
  dpkg-query -W -f='${Status}' clickhouse-server 2>/dev/null | grep -q "install ok installed" || fresh_clickhouse=1
  ensure_apt_packages --no-install-recommends "${TEST_APT_PACKAGES[@]}"
  if [ "$fresh_clickhouse" = 1 ] && [ -d /run/systemd/system ]; then
    as_root systemctl disable --now clickhouse-server >/dev/null 2>&1 \
      || say "could not stop the packaged clickhouse-server service: systemctl disable --now clickhouse-server"
  fi
  # Where systemd runs, the package starts influxdb.service on :8086, chingest's own default
  # port, which the tests do not need; a service installed before this setup is left alone.
  if [ "$fresh_influxdb" = 1 ] && [ -d /run/systemd/system ]; then
    as_root systemctl disable --now influxdb >/dev/null 2>&1 \
      || say "could not stop the packaged influxdb service (it holds :8086): systemctl disable --now influxdb"
  fi
  local venv="$CACHE/venv"
  if [ ! -x "$venv/bin/python" ] \
    || ! "$venv/bin/python" -c 'import influxdb, influxdb_client, selenium' 2>/dev/null; then
    say "installing the Python InfluxDB clients and Selenium into $venv"
    python3 -m venv "$venv" || die "python3 -m venv failed: apt-get install python3-venv"
    "$venv/bin/pip" install -q 'influxdb==5.3.2' 'influxdb-client==1.49.0' 'selenium==4.51.0' \
      || die "pip install influxdb influxdb-client selenium failed (no network to PyPI?)"
  fi
}

ensure_telegraf() {
  local bin="$TELEGRAF_DIR/telegraf"
  if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "Telegraf $TELEGRAF_VERSION" ] \
    && [ "$(cat "$TELEGRAF_DIR/.tags" 2>/dev/null)" = "$TELEGRAF_TAGS" ]; then return 0; fi
  command -v go >/dev/null \
    || die "go is needed to build telegraf $TELEGRAF_VERSION for the tests: install Go >= 1.25 (https://go.dev/dl)"
  say "building telegraf $TELEGRAF_VERSION ($TELEGRAF_TAGS) into $TELEGRAF_DIR"
  local staging="$CACHE/telegraf/.staging.$$"
  rm -rf "$staging"; mkdir -p "$staging"
  # GOFLAGS cleared so that a user's setting (e.g. -mod=vendor) cannot change the build.
  local why
  if ! (cd "$staging" && CGO_ENABLED=0 GOFLAGS= GOBIN="$staging" go install -trimpath \
      -ldflags "-s -w -X github.com/influxdata/telegraf/internal.Version=$TELEGRAF_VERSION" \
      -tags "$TELEGRAF_TAGS" "github.com/influxdata/telegraf/cmd/telegraf@v$TELEGRAF_VERSION" \
      >"$staging/go.log" 2>&1); then
    why=$(tail -n 3 "$staging/go.log"); rm -rf "$staging"
    die "go install telegraf@v$TELEGRAF_VERSION failed (no network to the Go module proxy, or Go older than 1.25?): $why"
  fi
  why=$("$staging/telegraf" --version 2>&1 | head -n 1 || true)
  if [ "$why" != "Telegraf $TELEGRAF_VERSION" ]; then
    rm -rf "$staging"
    die "the telegraf just built reports '$why', not 'Telegraf $TELEGRAF_VERSION'"
  fi
  mkdir -p "$TELEGRAF_DIR"
  mv "$staging/telegraf" "$TELEGRAF_DIR/telegraf"
  echo "$TELEGRAF_TAGS" > "$TELEGRAF_DIR/.tags"
  rm -rf "$staging"
  say "telegraf cached at $TELEGRAF_DIR/telegraf"
}

case "${1:-}" in
  --save-rocksdb) save_rocksdb; exit 0 ;;
esac

command -v cargo >/dev/null || die "cargo not found: install Rust with rustup (https://rustup.rs)"
ensure_apt_packages "${APT_PACKAGES[@]}"
ensure_engine
ensure_uplot
write_cargo_config
if [ "${1:-}" = "--test-deps" ]; then ensure_test_deps; ensure_telegraf; fi
