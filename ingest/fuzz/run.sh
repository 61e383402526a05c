#!/usr/bin/env bash
# Coverage-guided fuzzing on the stable toolchain: the same SanitizerCoverage
# instrumentation cargo-fuzz uses (without AddressSanitizer, which needs
# nightly). Usage: ingest/fuzz/run.sh [seconds per target, default 60]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
secs=${1:-60}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chingest/target-fuzz-cov}
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks --cfg fuzzing"
# An explicit --target keeps RUSTFLAGS off build scripts (they cannot link the
# coverage hooks), as cargo-fuzz does.
triple=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --bins --target "$triple"
for t in line_protocol msgpack wire_decode; do
  mkdir -p "corpus/$t"
  echo "fuzz: $t for ${secs}s"
  "$CARGO_TARGET_DIR/$triple/release/$t" -max_total_time="$secs" -max_len=65536 "corpus/$t"
done
