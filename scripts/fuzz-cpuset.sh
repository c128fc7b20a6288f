#!/bin/sh
# Fuzz the CPU-set expression parser for a few minutes (not run in CI).
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Usage: scripts/fuzz-cpuset.sh [SECONDS]   (default 180)
set -eu
cd "$(dirname "$0")/../fuzz"
seconds="${1:-180}"
mkdir -p corpus/cpuset_expr
for seed in 'all' '0-3,8' '0xff' '0xffffffff,0xfffffffc' '0b1010' 'win:FC' 'win:0:1,1:2' \
    'numa:1' 'core:0-3' 'numa:1.core:0-3' 'all ~pu:0' 'core:odd xnuma:0' '^l3:1' 'pu:3:4' \
    'cpukind:0' 'pcores' 'mask_cpu:0x5'; do
    printf '%s' "$seed" > "corpus/cpuset_expr/$(printf '%s' "$seed" | cksum | cut -d' ' -f1)"
done
exec cargo +nightly fuzz run cpuset_expr corpus/cpuset_expr -- -max_total_time="$seconds" -max_len=256
