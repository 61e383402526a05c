# The two commands README.md names are `make run` and `make test`; both set the
# machine up first (apt packages, the engine, .cargo/config.toml) and are idempotent.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: setup run test lint bench clean-data

setup:
	@scripts/setup.sh

## Run the server on embedded defaults: data under ./data, listening on 127.0.0.1:8086.
run: setup
	$(CARGO) build --release -p chingest
	@scripts/setup.sh --save-rocksdb
	$(CARGO) run --release -p chingest -- serve

## Build everything, check formatting and lints, and run the full test suite
## against the real engine, RocksDB, HTTP sockets and the real clients.
test:
	@scripts/setup.sh --test-deps
	$(CARGO) build --workspace --all-targets --locked
	@scripts/setup.sh --save-rocksdb
	$(MAKE) --no-print-directory lint
	$(CARGO) test --workspace --locked

## Formatting and lints as strict as CI: rustfmt, and clippy with warnings as errors.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## Every-layer benchmark: chdb_raw, flush, WAL, ramp; regenerates the docs.
bench: setup
	scripts/bench.sh

clean-data:
	rm -rf data
