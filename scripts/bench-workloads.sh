#!/usr/bin/env bash
# Measures the built-in workloads with `coretune bench` and prints Markdown tables
# (BENCHMARKS.md, "Built-in workloads" and the pool section's throttle/placement tables).
#
#   scripts/bench-workloads.sh [SECTION...]        R=5 by default; R=7 scripts/... for more
#
# Sections: raymesh sum spawn (the default set), place, adaptive-mixed, adaptive-raymesh, all.
#
# Method: release build once; then, per section, R repetitions, and within each repetition every
# configuration of the section once, in order (A B C A B C ..., so drift in the machine's load
# hits every configuration alike). Each configuration is one `coretune bench ... --runs 1 --json`
# process (workload preparation and verification are outside the measured run). Tables give
# the median, min and max over the R runs and ratios of medians to the section's baseline;
# /proc/loadavg is printed before and after each section.
set -euo pipefail

cd "$(dirname "$0")/.."
R=${R:-5}
cargo build --release -p coretune >&2
BIN=${CARGO_TARGET_DIR:-target}/release/coretune
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

sections=("$@")
if [ ${#sections[@]} -eq 0 ]; then
    sections=(raymesh sum spawn)
elif [ "${sections[0]}" = all ]; then
    sections=(raymesh sum spawn place adaptive-mixed adaptive-raymesh)
fi

# run SECTION WARMUP LABEL|ARGS... : R interleaved repetitions of every configuration.
run() {
    local section=$1 warmup=$2
    shift 2
    local configs=("$@") rep i label args
    mkdir -p "$OUT/$section"
    : >"$OUT/$section/labels"
    for i in "${!configs[@]}"; do
        echo "${configs[$i]%%|*}" >>"$OUT/$section/labels"
    done
    echo "<!-- $section: loadavg before: $(cat /proc/loadavg) -->"
    for rep in $(seq 1 "$R"); do
        for i in "${!configs[@]}"; do
            label=${configs[$i]%%|*}
            args=${configs[$i]#*|}
            echo "$section rep $rep/$R: $label (loadavg $(cut -d' ' -f1 /proc/loadavg))" >&2
            # shellcheck disable=SC2086 # args are words on purpose
            "$BIN" bench $args --runs 1 --warmup "$warmup" --json >"$OUT/$section/$i-$rep.json"
            cut -d' ' -f1 /proc/loadavg >>"$OUT/$section/load"
        done
    done
    echo "<!-- $section: loadavg after: $(cat /proc/loadavg) -->"
    summarize "$section"
}

summarize() {
    python3 - "$OUT/$1" "$1" <<'EOF'
import json, os, statistics, sys

d, section = sys.argv[1], sys.argv[2]
labels = open(os.path.join(d, "labels")).read().splitlines()
rows = []
for i, label in enumerate(labels):
    runs = []
    rep = 1
    while os.path.exists(p := os.path.join(d, f"{i}-{rep}.json")):
        runs.append(json.load(open(p)))
        rep += 1
    rows.append((label, runs))
loads = [float(x) for x in open(os.path.join(d, "load")).read().split()]
med = statistics.median


def f(x, digits=3):
    return f"{x:,.{digits}f}"


def col(runs, key):
    return [key(r) for r in runs]


def run0(r):
    return r["runs"][0]


print(f"\n**{section}** ({len(rows[0][1])} runs per row; loadavg (1 min) during the runs: "
      f"{min(loads):.2f}–{max(loads):.2f}, median {med(loads):.2f})\n")
if section == "raymesh":
    base = med(col(rows[0][1], lambda r: r["wall_s"]))
    base_runs = rows[0][1]
    print("| config | wall s (median) | min | max | Mrays/s | speedup (ratio of medians) "
          "| paired speedups min–max | user s | invol. cs | migrations |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, runs in rows:
        w = col(runs, lambda r: r["wall_s"])
        paired = [b["wall_s"] / r["wall_s"] for b, r in zip(base_runs, runs)]
        print(f"| {label} | {f(med(w))} | {f(min(w))} | {f(max(w))} "
              f"| {f(med(col(runs, lambda r: r['throughput']['value'])), 2)} "
              f"| {base / med(w):.2f}× | {min(paired):.2f}–{max(paired):.2f} "
              f"| {f(med(col(runs, lambda r: run0(r)['user_s'])))} "
              f"| {med(col(runs, lambda r: r['ctx_switches']['involuntary'])):,.0f} "
              f"| {med(col(runs, lambda r: r['migrations'] or 0)):,.0f} |")
elif section in ("sum", "place", "spawn"):
    unit = rows[0][1][0]["throughput"]["unit"]
    key = (lambda r: r["wall_s"]) if section == "sum" else (lambda r: r["throughput"]["value"])
    name = "wall s" if section == "sum" else unit
    base = med(col(rows[0][1], key))
    print(f"| config | {name} (median) | min | max | ratio to {rows[0][0]} "
          "| vol. cs | invol. cs | migrations |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, runs in rows:
        v = col(runs, key)
        digits = 3 if section == "sum" else 1
        print(f"| {label} | {f(med(v), digits)} | {f(min(v), digits)} | {f(max(v), digits)} "
              f"| {med(v) / base:.2f}× "
              f"| {med(col(runs, lambda r: r['ctx_switches']['voluntary'])):,.0f} "
              f"| {med(col(runs, lambda r: r['ctx_switches']['involuntary'])):,.0f} "
              f"| {med(col(runs, lambda r: r['migrations'] or 0)):,.0f} |")
else:  # adaptive-*: throughput, higher is better
    unit = rows[0][1][0]["throughput"]["unit"]
    tput = {label: med(col(runs, lambda r: r["throughput"]["value"])) for label, runs in rows}
    fixed = {l: t for l, t in tput.items() if l != "adaptive"}
    best_label = max(fixed, key=fixed.get)
    print(f"| throttle | {unit} (median) | min | max | ratio to best fixed ({best_label}) "
          "| wall s | invol. cs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, runs in rows:
        v = col(runs, lambda r: r["throughput"]["value"])
        print(f"| {label} | {f(med(v), 1)} | {f(min(v), 1)} | {f(max(v), 1)} "
              f"| {med(v) / fixed[best_label]:.3f} "
              f"| {f(med(col(runs, lambda r: r['wall_s'])))} "
              f"| {med(col(runs, lambda r: r['ctx_switches']['involuntary'])):,.0f} |")
    adaptive = dict(rows).get("adaptive", [])
    print("\nAdaptive runs' traces (settled = the second half of each run's samples):\n")
    print("| run | samples | limits visited | settled limits | most frequent settled limit "
          "| largest distance from it | final limit |")
    print("| ---: | ---: | --- | --- | ---: | ---: | ---: |")
    for i, r in enumerate(adaptive, 1):
        limits = [s["limit"] for s in r["throttle_trace"]]
        if not limits:
            print(f"| {i} | 0 | – | – | – | – | – |")
            continue
        half = limits[len(limits) // 2:]
        mode = max(set(half), key=half.count)
        print(f"| {i} | {len(limits)} | {min(limits)}–{max(limits)} | {min(half)}–{max(half)} "
              f"| {mode} | {max(abs(l - mode) for l in half)} | {limits[-1]} |")
EOF
}

for section in "${sections[@]}"; do
    case $section in
    raymesh)
        run raymesh 1 \
            "1 thread|raymesh --threads 1" \
            "2 threads|raymesh --threads 2" \
            "2 threads, --place cores|raymesh --threads 2 --place cores"
        ;;
    sum)
        run sum 1 \
            "no throttle|sum" \
            "--throttle 1|sum --throttle 1" \
            "--throttle 2|sum --throttle 2" \
            "--throttle 4|sum --throttle 4" \
            "--throttle 64|sum --throttle 64"
        ;;
    spawn)
        run spawn 1 \
            "coretune|spawn --pool coretune" \
            "coretune --batch|spawn --pool coretune --batch" \
            "rayon|spawn --pool rayon" \
            "rayon-scope|spawn --pool rayon-scope" \
            "tokio|spawn --pool tokio" \
            "crossbeam|spawn --pool crossbeam" \
            "mutex|spawn --pool mutex"
        ;;
    place)
        run place 1 \
            "spawn, --place os|spawn --pool coretune --place os" \
            "spawn, --place cores|spawn --pool coretune --place cores" \
            "spawn, --place spread|spawn --pool coretune --place spread" \
            "batch, --place os|spawn --pool coretune --batch --place os" \
            "batch, --place cores|spawn --pool coretune --batch --place cores" \
            "batch, --place spread|spawn --pool coretune --batch --place spread"
        ;;
    adaptive-mixed)
        mixed="mixed --threads 32 --tasks 30000"
        configs=()
        for k in 1 2 4 6 8 10 12 16 24 32; do configs+=("$k|$mixed --throttle $k"); done
        run adaptive-mixed 0 "${configs[@]}" "adaptive|$mixed --throttle adaptive"
        ;;
    adaptive-raymesh)
        ray="raymesh --threads 16 --rays 2000000"
        configs=()
        for k in 1 2 3 4 6 8 16; do configs+=("$k|$ray --throttle $k"); done
        run adaptive-raymesh 0 "${configs[@]}" "adaptive|$ray --throttle adaptive"
        ;;
    *)
        echo "unknown section '$section'" >&2
        exit 2
        ;;
    esac
done
