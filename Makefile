# The two commands of the README's quick start, and the pieces they are made of.
#
#   make tune    build (release) and run the main job: `coretune tune` on the built-in workload
#   make test    everything CI checks: format, clippy, unit/integration/doc tests (debug and
#                release), benchmark smoke runs, docs
#
# Both install the system packages they need first (scripts/setup.sh).

CARGO ?= cargo
export RUSTDOCFLAGS ?= -D warnings

.PHONY: tune test setup setup-test build fmt-check clippy unit-tests release-tests bench-smoke docs

tune: setup build
	./target/release/coretune tune

setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh --test

build:
	$(CARGO) build --release --locked -p coretune

test: setup-test fmt-check clippy unit-tests release-tests bench-smoke docs

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

unit-tests:
	$(CARGO) test --locked --workspace

release-tests:
	$(CARGO) test --locked --workspace --release

# Benchmarks compile and run once at a tiny size (they print their own numbers under `--bench`).
bench-smoke:
	$(CARGO) test --locked --workspace --benches

docs:
	$(CARGO) doc --locked --workspace --no-deps
