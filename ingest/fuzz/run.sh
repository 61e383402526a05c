#!/usr/bin/env bash
# Coverage-guided fuzzing of the ingest parsers.
#   ingest/fuzz/run.sh [seconds per target, default 60]          stable toolchain, SanitizerCoverage only
#   ingest/fuzz/run.sh [seconds per target, default 60] --asan   cargo-fuzz with AddressSanitizer
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
secs=${1:-60}
mode=${2:-}
targets=(line_protocol msgpack wire_decode)

if [ "$mode" = --asan ]; then
  command -v cargo-fuzz >/dev/null || { echo "run.sh: cargo install cargo-fuzz first" >&2; exit 1; }
  # AddressSanitizer is a nightly (-Z) flag; RUSTC_BOOTSTRAP lets the stable compiler accept it.
  export RUSTC_BOOTSTRAP=1
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chingest/target-fuzz-asan}
  for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "fuzz (asan): $t for ${secs}s"
    (cd .. && cargo fuzz run "$t" "fuzz/corpus/$t" -- -max_total_time="$secs" -max_len=65536)
  done
  exit 0
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chingest/target-fuzz-cov}
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks --cfg fuzzing"
# An explicit --target keeps RUSTFLAGS off build scripts (they cannot link the
# coverage hooks), as cargo-fuzz does.
triple=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --bins --target "$triple"
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "fuzz: $t for ${secs}s"
  "$CARGO_TARGET_DIR/$triple/release/$t" -max_total_time="$secs" -max_len=65536 "corpus/$t"
done
