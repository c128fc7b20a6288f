#!/usr/bin/env bash
# Default search vs --exhaustive on the built-in workloads (issue 6): runs needed and answer,
# both ways, on the same grid. Prints a Markdown table for BENCHMARKS.md.
#
#   scripts/bench-search.sh                 raymesh (tune's default size), mixed, sum
#   scripts/bench-search.sh raymesh         one workload
#
# "Agrees" means the search's answer is the exhaustive sweep's answer, or one the exhaustive
# sweep measured as tied with it (its 95% interval overlaps, or it is within the 3% tolerance):
# two sweeps on a noisy machine can each pick a different member of a tie, even two
# exhaustive ones.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p coretune >&2
bin=$PWD/target/release/coretune
out=$(mktemp -d)
workloads=("$@")
[[ ${#workloads[@]} -gt 0 ]] || workloads=(raymesh mixed sum)

args_for() {
    case "$1" in
        raymesh) echo "raymesh" ;;
        # The sizing rule's best is 10 threads here (2 cores x (1 + 800/200)): go past it.
        mixed) echo "mixed --threads 1-16" ;;
        sum) echo "sum" ;;
    esac
}

echo "| workload | grid | runs (search) | runs (exhaustive) | search's answer | exhaustive's answer | agrees | loadavg before/after |"
echo "| --- | --- | ---: | ---: | --- | --- | --- | --- |"
for w in "${workloads[@]}"; do
    read -r -a a <<<"$(args_for "$w")"
    before=$(cut -d' ' -f1 /proc/loadavg)
    "$bin" tune "${a[@]}" --quiet --json --out "$out/search-$w" >"$out/search-$w.json"
    "$bin" tune "${a[@]}" --exhaustive --quiet --json --out "$out/exhaustive-$w" >"$out/exhaustive-$w.json"
    after=$(cut -d' ' -f1 /proc/loadavg)
    python3 - "$w" "$out/search-$w.json" "$out/exhaustive-$w.json" "$before" "$after" <<'PY'
import json, sys
w, s_path, e_path, before, after = sys.argv[1:]
s, e = json.load(open(s_path)), json.load(open(e_path))
def runs(r): return r["runs"]["measured"] + r["runs"]["warmup"]
def key(c): return (c["threads"], c["place"], c["cpus"], c["throttle"])
def label(c):
    t = f'{c["threads"]} thr, {c["place"]}'
    if c["cpus"] != "all": t += f', cpus {c["cpus"]}'
    if c["throttle"] is not None: t += f', throttle {c["throttle"]}'
    return t
rs, re_ = s["recommendation"], e["recommendation"]
rows = {key(c): c for c in e["configs"]}
tol = e["plan"]["tolerance"]
best = min((c for c in e["configs"] if c["median_s"] is not None), key=lambda c: c["median_s"])
def ties(c):
    return c["ci_s"][0] <= best["ci_s"][1] or c["median_s"] <= best["median_s"] * (1 + tol)
mine = rows.get(key(rs))
if key(rs) == key(re_):
    agrees = "yes (same)"
elif mine is not None and mine["median_s"] is not None and ties(mine):
    agrees = "yes (a tie in the exhaustive sweep)"
else:
    agrees = "**no**"
g = e["plan"]["grid"]
grid = f'{len(g["threads"])} thread counts x {len(g["places"])} places x {len(g["cpus"])} cpus x {len(g["throttles"])} throttles'
print(f'| {w} | {grid} | {runs(s)} | {runs(e)} | {label(rs)} | {label(re_)} | {agrees} | {before} / {after} |')
PY
done
echo
echo "Sweep folders: $out" >&2
