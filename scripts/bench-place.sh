#!/usr/bin/env bash
# Planning at scale (issue 12), end to end: `coretune place` and `coretune distrib` for 4096
# threads on a 4096-PU synthetic machine, next to hwloc-distrib on the same machine, with
# hyperfine (wall time, and user/system time in its JSON). Target: under 100 ms each. Also the
# issue's case: `place --threads 4096 --json` on a 2048-PU machine (12 s of system time before:
# line-buffered stdout and a quadratic steal order).
#
#   scripts/bench-place.sh            the machines above
#   scripts/bench-place.sh small      a 64-PU machine and 64 threads (checks the script runs)
#   FLAT_ONLY=1 scripts/bench-place.sh    the flat machines alone
#
# Then flat machines (issue 37): 2,048 cores in one package, and 16 packages of 128 cores,
# whose synthetic descriptions hwloc builds in a time that grows with the square of one
# parent's children; coretune keeps big ones as XML in its cache (README, `topo`): timed with the
# cache emptied before every run (cold) and kept (warm), next to hwloc-calc on the same machine.
#
# Prints hyperfine's Markdown tables; `--export-json` files stay in the printed folder.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p coretune >&2
bin=$PWD/target/release/coretune
out=$(mktemp -d)
if [[ "${1:-}" == "small" ]]; then
    big='pack:2 numa:2 l3:2 core:4 pu:2'; n=64
    issue='pack:2 numa:2 l3:2 core:2 pu:2'; runs=(--runs 3 --warmup 1)
    flat='pack:1 core:1024 pu:1'; wide='pack:2 core:512 pu:1'; flat_n=1024
else
    big='pack:16 numa:4 l3:2 core:16 pu:2'; n=4096
    issue='pack:16 numa:4 l3:2 core:8 pu:2'; runs=(--runs 20 --warmup 3)
    flat='pack:1 core:2048 pu:1'; wide='pack:16 core:128 pu:1'; flat_n=2048
fi
echo "results in $out" >&2
# The cache of big synthetic topologies: the script's own, so that every run starts as told.
export XDG_CACHE_HOME=$out/cache
if [[ -z "${FLAT_ONLY:-}" ]]; then
hyperfine -N "${runs[@]}" --export-markdown "$out/place.md" --export-json "$out/place.json" \
    -n "place $n threads (spread/pu)" "$bin place --threads $n --input '$big'" \
    -n "place $n threads --bind share" "$bin place --threads $n --bind share --input '$big'" \
    -n "place $n threads --json" "$bin place --threads $n --json --input '$big'" \
    -n "place $n threads --json, issue's machine" "$bin place --threads $n --json --input '$issue'" \
    -n "distrib $n" "$bin distrib --input '$big' $n" \
    -n "hwloc-distrib $n" "hwloc-distrib --input '$big' $n" \
    -n "topology load alone (topo --xml)" "$bin topo --xml --input '$big'" >&2
fi
hyperfine -N "${runs[@]}" --export-markdown "$out/flat.md" --export-json "$out/flat.json" \
    --prepare "rm -rf $out/cache" -n "place, '$flat', cold cache" "$bin place --threads $flat_n --input '$flat'" \
    --prepare "true" -n "place, '$flat', warm cache" "$bin place --threads $flat_n --input '$flat'" \
    --prepare "rm -rf $out/cache" -n "place, '$wide', cold cache" "$bin place --threads $flat_n --input '$wide'" \
    --prepare "true" -n "place, '$wide', warm cache" "$bin place --threads $flat_n --input '$wide'" \
    --prepare "true" -n "hwloc-calc, '$flat'" "hwloc-calc --input '$flat' all" >&2
cat "$out"/*.md
python3 - "$out"/*.json <<'PY'
import json, sys
for r in (r for f in sys.argv[1:] for r in json.load(open(f))["results"]):
    print(f"{r['command']}: median {r['median']*1e3:.1f} ms, user {r['user']*1e3:.1f} ms, system {r['system']*1e3:.1f} ms")
PY
