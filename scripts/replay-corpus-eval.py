#!/usr/bin/env python3
"""Measure the search on the replay corpus (BENCHMARKS.md, "The search on replayed sweeps").

    cargo build --release -p coretune
    python3 scripts/replay-corpus-eval.py [--coretune target/release/coretune] [--seeds 3] [--jobs 2]

Replays every sweep of tests/data/replay/ (generated/*.jsonl and the real results folders under
real/) through `coretune tune --replay SWEEP --json --seed S`, once with the default search and
once with --exhaustive (tune's defaults: 3 runs per configuration, the 3% tolerance, up to 10
deciding runs per comparison; `--max-runs 3` replays without deciding runs), for seeds
0..N-1, and prints a Markdown table per strategy and machine size: in how many replays the pick's
true objective is within 3% of the best configuration's, the median and worst gap, and the cost
as a share of the exhaustive sweep's summed run time (median and worst) and of its runs.

Before it replays a generated sweep it checks that its grid is the one `coretune tune` would
sweep on that machine: `coretune tune --dry-run --input TOPOLOGY --json -- prog` (thread counts,
placements, CPU sets), so that the replay exercises the real search. Python 3 standard library
only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "data", "replay")
TOPOLOGIES = os.path.join(ROOT, "tests", "data", "topologies")
TOLERANCE_PCT = 3.0


def run(coretune, args):
    out = subprocess.run([coretune] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"coretune {' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def plan(coretune, topology):
    """The grid and PU count `tune` would use for a program on `topology`."""
    p = run(coretune, ["tune", "--dry-run", "--input", topology, "--json", "--", "prog"])
    return p["plan"]["grid"], p["topology"]


def grid_of(path):
    """The grid a minimal-form file names (every combination of its values)."""
    threads, places, cpus = set(), [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            threads.add(r["threads"])
            if r["place"] not in places:
                places.append(r["place"])
            if r["cpus"] not in cpus:
                cpus.append(r["cpus"])
    return sorted(threads), places, cpus


def pus_of(summary):
    """The PU count of the plan's topology line (`2 packages, ..., 384 PUs, SMT 2`)."""
    found = re.search(r"(\d+) PUs", summary)
    if not found:
        sys.exit(f"no PU count in the topology summary: {summary}")
    return int(found.group(1))


def sweeps(coretune):
    """(name, source, PUs, topology) of every sweep of the corpus, its grid checked: the
    topology file is given to the replay (`--input`) for the generated sweeps, whose PUs per
    CPU set it counts (the oversubscription rule); a results folder has its own."""
    out = []
    gen = os.path.join(CORPUS, "generated")
    for name in sorted(os.listdir(gen)):
        if not name.endswith(".jsonl"):
            continue
        topo = os.path.join(TOPOLOGIES, name.split(".")[0] + ".xml")
        grid, summary = plan(coretune, topo)
        path = os.path.join(gen, name)
        threads, places, cpus = grid_of(path)
        want = (grid["threads"], grid["places"], grid["cpus"])
        if (threads, places, cpus) != want:
            sys.exit(f"{name}: grid {threads, places, cpus} is not tune's {want}")
        out.append((name, path, pus_of(summary), topo))
    real = os.path.join(CORPUS, "real")
    if os.path.isdir(real):
        for name in sorted(os.listdir(real)):
            folder = os.path.join(real, name)
            xml = os.path.join(folder, "topology.xml")
            _, summary = plan(coretune, xml)
            out.append((f"real/{name}", folder, pus_of(summary), None))
    return out


def size_class(pus):
    if pus <= 8:
        return "≤ 8 PUs"
    if pus >= 64:
        return "≥ 64 PUs"
    return "9–63 PUs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coretune", default=os.path.join(ROOT, "target", "release", "coretune"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--json", help="also write every replay's result to this file")
    ap.add_argument("--max-runs", type=int,
                    help="tune --max-runs (default: tune's, 10; N <= 3 makes no deciding "
                    "runs)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="replays run at once (default 1; the answers do not depend on it)")
    ap.add_argument("--only", help="replay only the sweeps whose name contains this text")
    ap.add_argument("--search-only", action="store_true",
                    help="replay the default search alone, not --exhaustive")
    args = ap.parse_args()
    max_runs = [] if args.max_runs is None else ["--max-runs", str(args.max_runs)]
    cases = [(name, source, pus, topo, seed, strategy)
             for name, source, pus, topo in sweeps(args.coretune)
             if args.only is None or args.only in name
             for seed in range(args.seeds)
             for strategy in (("search",) if args.search_only else ("search", "exhaustive"))]

    def replay(case):
        name, source, pus, topo, seed, strategy = case
        extra = ["--exhaustive"] if strategy == "exhaustive" else []
        if topo:
            extra += ["--input", topo]
        r = run(args.coretune, ["tune", "--replay", source, "--json", "--seed",
                                str(seed)] + extra + max_runs)
        return {
            "sweep": name, "pus": pus, "seed": seed, "strategy": strategy,
            "real": name.startswith("real/"),
            "config": r["recommendation"]["config"],
            "reason": r["recommendation"].get("reason"),
            "gap_to_best_pct": r["recommendation"]["gap_to_best_pct"],
            "gap_pct": r["gap_pct"],
            "cost_share": r["cost"]["search"]["summed_time_s"]
            / r["cost"]["exhaustive"]["summed_time_s"],
            "run_share": r["cost"]["search"]["runs"] / r["cost"]["exhaustive"]["runs"],
        }

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(replay, cases))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    sweeps_n = len({r["sweep"] for r in results})
    print(f"{sweeps_n} sweeps × {args.seeds} seeds, tolerance {TOLERANCE_PCT:g}%, "
          f"3 runs per configuration, --max-runs {args.max_runs or 'default (10)'}\n")
    print("| strategy | machines | replays | pick within 3% of the best | median gap | worst gap "
          "| share of exhaustive run time: median | worst | share of exhaustive runs: median |")
    print("|---|---|---|---|---|---|---|---|---|")
    groups = ["≤ 8 PUs", "9–63 PUs", "≥ 64 PUs", "real (this machine)", "all"]
    for strategy in ("search", "exhaustive"):
        for group in groups:
            rows = [r for r in results if r["strategy"] == strategy and (
                group == "all"
                or (group == "real (this machine)" and r["real"])
                or (not r["real"] and size_class(r["pus"]) == group))]
            if not rows:
                continue
            gaps = [r["gap_to_best_pct"] for r in rows]
            within = sum(1 for g in gaps if g <= TOLERANCE_PCT)
            shares = [r["cost_share"] for r in rows]
            run_shares = [r["run_share"] for r in rows]
            print(f"| {'default search' if strategy == 'search' else '--exhaustive'} | {group} "
                  f"| {len(rows)} | {within} ({100 * within / len(rows):.0f}%) "
                  f"| {statistics.median(gaps):.1f}% | {max(gaps):.1f}% "
                  f"| {100 * statistics.median(shares):.0f}% | {100 * max(shares):.0f}% "
                  f"| {100 * statistics.median(run_shares):.0f}% |")


if __name__ == "__main__":
    main()
