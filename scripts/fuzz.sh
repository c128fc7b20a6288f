#!/bin/sh
# Runs every fuzz target of fuzz/ (libFuzzer through libfuzzer-sys) for SECONDS each, seeded.
# Built as `cargo fuzz build -s none` builds it (the same coverage flags, `--cfg fuzzing`, debug
# assertions and overflow checks), with the stable toolchain: no nightly, no cargo-fuzz, no
# sanitizer. A crash, a panic or a failed assertion stops it with libFuzzer's report, and the
# input is kept in fuzz/artifacts/TARGET/.
#
#   scripts/fuzz.sh [SECONDS]   default 10: the smoke run of `make test` (make fuzz-smoke)
#   FUZZ_RELEASE=1 scripts/fuzz.sh 600
#                               a real session, optimised; the corpus grows in fuzz/corpus/TARGET/
#
# With nightly and cargo-fuzz, `cargo +nightly fuzz run TARGET` in fuzz/ adds AddressSanitizer.
set -eu
cd "$(dirname "$0")/../fuzz"
seconds="${1:-10}"
target=x86_64-unknown-linux-gnu
profile=debug
release=
if [ "${FUZZ_RELEASE:-0}" = 1 ]; then profile=release; release=--release; fi
# --target: the flags then reach only the fuzzed code, not build scripts (as cargo-fuzz does).
RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
CARGO_TARGET_DIR=../target/fuzz \
    cargo build --quiet --locked $release --target "$target" --bins

# Seeds for the CPU-set parser: one per kind of spelling it takes.
mkdir -p corpus/cpuset_expr
for seed in 'all' '0-3,8' '0xff' '0xffffffff,0xfffffffc' '0b1010' 'win:FC' 'win:0:1,1:2' \
    'numa:1' 'core:0-3' 'numa:1.core:0-3' 'all ~pu:0' 'core:odd xnuma:0' '^l3:1' 'pu:3:4' \
    'cpukind:0' 'pcores' 'mask_cpu:0x5' 'N:0-1' 'S0:0-3@S1:0-3' 'E:N:4:1:2'; do
    printf '%s' "$seed" > "corpus/cpuset_expr/$(printf '%s' "$seed" | cksum | cut -d' ' -f1)"
done

for source in fuzz_targets/*.rs; do
    name=$(basename "$source" .rs)
    mkdir -p "corpus/$name" "artifacts/$name"
    echo "fuzz: $name for ${seconds}s" >&2
    log=$(mktemp)
    status=0
    "../target/fuzz/$target/$profile/$name" "corpus/$name" -max_total_time="$seconds" \
        -max_len=256 -artifact_prefix="artifacts/$name/" -print_final_stats=1 >"$log" 2>&1 ||
        status=$?
    grep -E '^stat::(number_of_executed_units|new_units_added)' "$log" >&2 || true
    if [ "$status" != 0 ]; then
        tail -40 "$log" >&2
        rm -f "$log"
        echo "fuzz: $name failed (status $status): the input is in fuzz/artifacts/$name/" >&2
        exit 1
    fi
    rm -f "$log"
done
