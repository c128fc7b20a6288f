#!/usr/bin/env bash
# Measures the built-in workloads with `coretune bench` and prints Markdown tables
# (BENCHMARKS.md, "Built-in workloads" and the pool section's throttle/placement tables).
#
#   scripts/bench-workloads.sh [SECTION...]        R=5 by default; R=7 scripts/... for more
#
# Sections: raymesh sum spawn (the default set), place, adaptive-mixed, adaptive-raymesh,
# adaptive-sum, all. The adaptive-* sections run each workload at its default size (SIZE=small
# or SIZE=large to change it) under no throttle, a ladder of fixed limits and the adaptive one,
# and print each limit's whole-run throughput as a ratio to the best fixed limit's, then per
# adaptive run its ratio, when it settled (the first time after which its limit stays within
# one step of its final value; in seconds and as a share of the run) and how often it moved
# after that.
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
    sections=(raymesh sum spawn place adaptive-mixed adaptive-raymesh adaptive-sum)
fi
size=${SIZE:+--size $SIZE}

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
    if unit == "ns/item":  # sum: lower is better; compare items per second instead
        def value(r):
            return 1e9 / r["throughput"]["value"]
        unit = "items/s"
    else:
        def value(r):
            return r["throughput"]["value"]
    tput = {label: med(col(runs, value)) for label, runs in rows}
    fixed = {l: t for l, t in tput.items() if l != "adaptive"}
    best_label = max(fixed, key=fixed.get)
    best = fixed[best_label]
    print(f"| throttle | {unit} (median) | min | max | ratio to best fixed ({best_label}) "
          "| wall s | invol. cs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, runs in rows:
        v = col(runs, value)
        print(f"| {label} | {f(med(v), 1)} | {f(min(v), 1)} | {f(max(v), 1)} "
              f"| {med(v) / best:.3f} "
              f"| {f(med(col(runs, lambda r: r['wall_s'])))} "
              f"| {med(col(runs, lambda r: r['ctx_switches']['involuntary'])):,.0f} |")
    adaptive = dict(rows).get("adaptive", [])
    print("\nAdaptive runs (settled = the first time after which the limit stays within one step "
          "of its final value; changes after = how often the limit changed from then on, each "
          "within that step: the settled climber's probes):\n")
    print("| run | throughput ratio to best fixed | samples | limits visited | settled at s "
          "| settled at (share of run) | changes after | final limit |")
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for i, r in enumerate(adaptive, 1):
        trace = r["throttle_trace"]
        ratio = value(r) / best
        if not trace:
            print(f"| {i} | {ratio:.3f} | 0 | – | – | – | – | – |")
            continue
        limits = [s["limit"] for s in trace]
        final = limits[-1]
        out = [k for k, l in enumerate(limits) if abs(l - final) > 1]
        settled = trace[out[-1]]["t_s"] if out else 0.0
        after = limits[out[-1] + 1:] if out else limits
        moves = sum(1 for a, b in zip(after, after[1:]) if a != b)
        print(f"| {i} | {ratio:.3f} | {len(limits)} | {min(limits)}–{max(limits)} "
              f"| {settled:.3f} | {settled / r['wall_s']:.1%} | {moves} | {final} |")
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
        mixed="mixed --threads 32 $size"
        configs=("none|$mixed")
        for k in 2 4 8 12 16 24 32; do configs+=("$k|$mixed --throttle $k"); done
        run adaptive-mixed 0 "${configs[@]}" "adaptive|$mixed --throttle adaptive"
        ;;
    adaptive-raymesh)
        ray="raymesh --threads 16 $size"
        configs=("none|$ray")
        for k in 1 2 4 8 16; do configs+=("$k|$ray --throttle $k"); done
        run adaptive-raymesh 0 "${configs[@]}" "adaptive|$ray --throttle adaptive"
        ;;
    adaptive-sum)
        sum="sum $size"
        configs=("none|$sum")
        for k in 1 2 4 8 16 32 64; do configs+=("$k|$sum --throttle $k"); done
        run adaptive-sum 0 "${configs[@]}" "adaptive|$sum --throttle adaptive"
        ;;
    *)
        echo "unknown section '$section'" >&2
        exit 2
        ;;
    esac
done
