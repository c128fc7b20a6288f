#!/usr/bin/env python3
"""Generate the replay corpus: modelled exhaustive sweeps of the machines of
tests/data/topologies/, one JSON-lines file per (topology, workload shape), in the minimal form
`coretune tune --replay` reads ({"threads", "place", "cpus", "time_s"}), into
tests/data/replay/generated/.

    python3 scripts/replay-corpus.py            # writes the corpus (deterministic: seed 37)
    python3 scripts/replay-corpus.py --check    # regenerates in memory, fails if a file differs

Python 3 standard library only. Everything below is a model, stated with where its numbers come
from; the corpus exists to judge the *search* (does it find what an exhaustive sweep finds, at
what cost), so the shapes matter more than the absolute times.

The machine
-----------
Each hwloc XML (v1 or v2) is read into its PUs in hwloc's logical order, each with its core,
last-level cache (L3; L2 where a machine has no L3), NUMA node (from the NUMANode objects'
cpusets; one node when there are none), package and CPU kind (hwloc's cpukinds, ranked by
forced_efficiency; higher = faster). PUs outside the root's allowed_cpuset are left out, as a
default hwloc load does. The counts are checked against tests/data/topologies/expected.json.

The grid
--------
What `coretune tune -- PROGRAM` sweeps on that machine (`Grid::default_for` in
crates/core/src/grid.rs; `coretune tune --dry-run --input TOPOLOGY --json -- prog` prints it,
and scripts/replay-corpus-eval.sh checks every file against it): the thread counts of
`default_threads` (a x1.5 ladder to 4 x PUs, at least 8, plus the core and PU counts), the
placements os, compact, spread, cores, and the CPU sets `all` and `all ~pu:0` (more than 2 PUs).
Every configuration gets RUNS (5) runs.

Where the threads run (per configuration)
-----------------------------------------
- compact: the first N PUs in logical order (SMT siblings together); past the PUs, round again.
- cores: one PU per core in logical order, then each core's second PU, and so on.
- spread: one PU per core, cores taken round-robin over packages, then NUMA nodes, then L3s
  (hwloc-distrib's split), then the second PUs in the same order.
- os: the scheduler spreads like `spread` (Linux's load balancer prefers idle cores to SMT
  siblings and idle packages), but threads move: a 2% migration cost on every thread, and for
  the memory-bound shape pages are not always local (x1.08 memory time on machines with more
  than one NUMA node).
- `all ~pu:0` leaves out the first PU in logical order.

The speed of a thread
---------------------
- CPU kind: the fastest kind 1.0; with two kinds the slower one SLOW (drawn in 0.55..0.85:
  Intel's Gracemont E-cores run integer code at about 0.55-0.65 of a Raptor Cove P-core,
  AMD's Zen 5c at about 0.85 of Zen 5 for the clock it reaches); with three kinds 0.4, 0.7, 1.0
  (Arm's Cortex-A510/A710/X3 ladder).
- SMT: m threads on one core share it; the core gives 1 + (YIELD - 1)(m - 1) in all (YIELD, the
  SMT yield, drawn in 1.0..1.35: Intel quotes up to 30% for Hyper-Threading; POWER7's SMT4 is
  capped at 2 cores' worth).
- Oversubscription: r threads on one PU share it (1/r each) and pay for the switching:
  x (1 - 0.015 (r - 1)) of throughput, at most a 30% loss (context-switch costs of a few
  microseconds per 1-4 ms time slice, plus cache refills).
- CPU-0 interference: a thread on OS CPU 0 loses I0 (drawn in 0.05..0.25) of its time to
  interrupts and housekeeping (the Threadripper renderer and Windows games of DESIGN.md). Under
  `os` the scheduler moves threads off CPU 0 unless every PU is busy.

The workload shapes (T1 = one thread's time, drawn in 5..60 s)
--------------------------------------------------------------
- compute: Amdahl with a serial fraction S (0.002..0.05), the parallel part balanced
  dynamically (work stealing): T = T1 (S + (1 - S) / sum of thread speeds).
- membw: memory-bandwidth bound (STREAM triad): each thread asks DEMAND (6..12 GB/s, one
  core's streaming rate on recent x86), each NUMA node gives at most NODE_BW (40..120 GB/s:
  4-12 DDR channels); T = BYTES / sum over nodes of min(node's demand, NODE_BW), plus a 1%
  serial part.
- cache: the working set WS (0.4..1.5 x all last-level caches together) runs at full speed while
  it fits in the caches the threads span, and up to MISS (2..4) times slower when it does not,
  in proportion to what does not fit: speed / (1 + (MISS - 1) max(0, 1 - span / WS)).
  Compact packs threads under one cache; spread spans them all.
- lock: a shared lock, Gunther's Universal Scalability Law on the thread speeds' sum n:
  throughput n / (1 + A (n - 1) + B n (n - 1)) with contention A (0.02..0.1) and coherency B
  (0.0005..0.005), B up to 4 x when the threads span every package and up to 2 x more when
  they span every NUMA node, in proportion to the share spanned (the lock's cache line crosses
  the interconnect): a peak, then decline.
  (Not generated where the XML gives no cache sizes: the two Itanium machines.)
- static (only on machines with two or more CPU kinds): hybrid imbalance, the work split in N
  equal parts up front (OpenMP's schedule(static)): T = T1 (S + (1 - S) / (N x the slowest
  thread's speed)); the E-cores, an SMT sibling or CPU 0 hold everyone up.

The runs
--------
Each run is the model's time x a log-normal noise factor exp(N(0, SIGMA)) with SIGMA drawn per
sweep in 0.01..0.05 (1-5%: the run-to-run spread of a quiet to a busy machine), and with
probability 0.005 an outlier x (1.3..2.5) (a daemon waking, a page-cache flush). Times are
written to 5 significant digits.
"""

import json
import math
import os
import random
import sys
import xml.etree.ElementTree as ET
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOLOGIES = os.path.join(ROOT, "tests", "data", "topologies")
OUT = os.path.join(ROOT, "tests", "data", "replay", "generated")
SEED = 37
RUNS = 5
SHAPES = ["compute", "membw", "cache", "lock", "static"]


def bitmap(text):
    """hwloc's bitmap string (32-bit words, most significant first, empty = 0) as a set."""
    if not text:
        return set()
    value = 0
    for word in text.split(","):
        word = word.strip()
        value = (value << 32) | (int(word, 16) if word and word != "0x" else 0)
    out, i = set(), 0
    while value:
        if value & 1:
            out.add(i)
        value >>= 1
        i += 1
    return out


class Pu:
    def __init__(self, os_index, core, llc, package):
        self.os = os_index
        self.core = core
        self.llc = llc
        self.package = package
        self.numa = 0
        self.kind = 0  # rank among the CPU kinds, 0 = slowest


class Machine:
    def __init__(self, name, pus, llc_bytes, kinds):
        self.name = name
        self.pus = pus
        self.llc_bytes = llc_bytes  # size of each last-level cache, by id
        self.kinds = kinds  # number of CPU kinds
        self.cores = sorted({p.core for p in pus}, key=lambda c: min(
            i for i, p in enumerate(pus) if p.core == c))

    def counts(self):
        return {
            "pus": len(self.pus),
            "cores": len(self.cores),
            "packages": len({p.package for p in self.pus}),
            "numa": len({p.numa for p in self.pus}),
            "llc": len({p.llc for p in self.pus if p.llc is not None}),
        }


def load(path):
    tree = ET.parse(path)
    root = tree.getroot().find("object")
    allowed = bitmap(root.get("allowed_cpuset")) if root.get("allowed_cpuset") else None
    pus, llc_bytes, numa_sets = [], {}, []
    counter = {"core": 0, "llc": 0, "package": 0}

    # The last-level cache: L3 if the machine has one, else L2.
    def cache_level(obj):
        t = obj.get("type")
        if t in ("L3Cache", "L2Cache"):
            return int(t[1])
        if t == "Cache" and obj.get("cache_type") in (None, "0", "1", "2") and obj.get("depth"):
            return int(obj.get("depth"))
        return None

    levels = {cache_level(o) for o in root.iter("object")}
    llc_level = 3 if 3 in levels else (2 if 2 in levels else None)

    def walk(obj, core, llc, package):
        t = obj.get("type")
        if t == "NUMANode":
            numa_sets.append(bitmap(obj.get("cpuset")))
        if t in ("Package", "Socket"):
            package = ("p", counter["package"])
            counter["package"] += 1
        if t == "Core":
            core = ("c", counter["core"])
            counter["core"] += 1
        if cache_level(obj) == llc_level and llc_level is not None:
            llc = counter["llc"]
            counter["llc"] += 1
            llc_bytes[llc] = int(obj.get("cache_size", "0"))
        if t == "PU":
            os_index = int(obj.get("os_index"))
            if allowed is None or os_index in allowed:
                # A PU without a core of its own is its own core.
                c = core if core is not None else ("pu", os_index)
                pus.append(Pu(os_index, c, llc, package))
        for child in obj.findall("object"):
            walk(child, core, llc, package)

    walk(root, None, None, ("p", 0))
    for i, nodeset in enumerate(s for s in numa_sets if s):
        for p in pus:
            if p.os in nodeset:
                p.numa = i
    # Renumber the NUMA nodes that hold PUs.
    ids = sorted({p.numa for p in pus})
    for p in pus:
        p.numa = ids.index(p.numa)
    kinds = []
    for k in tree.getroot().iter("cpukind"):
        kinds.append((int(k.get("forced_efficiency", "0")), bitmap(k.get("cpuset"))))
    kinds.sort(key=lambda k: k[0])
    for rank, (_, cpus) in enumerate(kinds):
        for p in pus:
            if p.os in cpus:
                p.kind = rank
    return Machine(os.path.basename(path), pus, llc_bytes, max(1, len(kinds)))


def default_threads(cores, pus):
    """crates/core/src/grid.rs `default_threads`, line for line."""
    top = max(4 * pus, 8)
    out = [max(cores, 1), max(pus, 1)]
    p = 1
    while p <= top:
        out.append(p)
        if p * 3 // 2 <= top and p >= 2:
            out.append(p * 3 // 2)
        p *= 2
    out.append(top)
    return sorted(set(out))


def round_robin(groups):
    """Interleave lists: the first of each, then the second of each, ..."""
    out, i = [], 0
    while any(i < len(g) for g in groups):
        out.extend(g[i] for g in groups if i < len(g))
        i += 1
    return out


def by_core_rank(pus, core_order):
    """PUs as one per core in `core_order`, then each core's second PU, and so on."""
    per_core = {}
    for p in pus:
        per_core.setdefault(p.core, []).append(p)
    return round_robin([per_core[c] for c in core_order if c in per_core])


def spread_cores(pus):
    """Cores round-robin over packages, then NUMA nodes, then caches (hwloc-distrib's order)."""
    def split(items, keys):
        if not keys:
            seen = []
            for p in items:
                if p.core not in seen:
                    seen.append(p.core)
            return seen
        key, rest = keys[0], keys[1:]
        groups = {}
        for p in items:
            groups.setdefault(key(p), []).append(p)
        return round_robin([split(g, rest) for g in groups.values()])
    return split(pus, [lambda p: p.package, lambda p: p.numa, lambda p: p.llc])


def placement(machine, threads, place, cpus):
    """Which PU each thread runs on (a list of Pu, possibly repeating past the PUs)."""
    pus = machine.pus[1:] if cpus != "all" else machine.pus
    if place == "compact":
        order = pus
    elif place == "cores":
        seen = []
        for p in pus:
            if p.core not in seen:
                seen.append(p.core)
        order = by_core_rank(pus, seen)
    else:  # spread, os
        order = by_core_rank(pus, spread_cores(pus))
    return [order[i % len(order)] for i in range(threads)]


class Model:
    """One workload shape's parameters on one machine, drawn from `rng`."""

    def __init__(self, shape, machine, rng):
        self.shape = shape
        self.machine = machine
        self.t1 = rng.uniform(5, 60)
        self.serial = rng.uniform(0.002, 0.05)
        self.smt_yield = rng.uniform(1.0, 1.35)
        self.cpu0 = rng.uniform(0.05, 0.25)
        self.slow = rng.uniform(0.55, 0.85)
        self.demand = rng.uniform(6, 12)
        self.node_bw = rng.uniform(40, 120)
        total_llc = sum(machine.llc_bytes.values()) or 1
        self.working_set = rng.uniform(0.4, 1.5) * total_llc
        self.miss = rng.uniform(2, 4)
        self.contention = rng.uniform(0.02, 0.1)
        self.coherency = rng.uniform(0.0005, 0.005)
        self.sigma = rng.uniform(0.01, 0.05)

    def kind_speed(self, kind):
        k = self.machine.kinds
        if k == 1:
            return 1.0
        if k == 2:
            return [self.slow, 1.0][kind]
        ladder = [0.4, 0.7, 1.0]
        return ladder[min(kind, 2)] if k == 3 else 0.4 + 0.6 * kind / (k - 1)

    def speeds(self, where, place, cpus):
        """Each thread's speed (work per second, a lone fast thread = 1)."""
        on_pu, on_core = {}, {}
        for p in where:
            on_pu[p.os] = on_pu.get(p.os, 0) + 1
        for p in {p.os: p for p in where}.values():
            on_core[p.core] = on_core.get(p.core, 0) + 1
        all_busy = len(where) >= len(self.machine.pus) - (0 if cpus == "all" else 1)
        out = []
        for p in where:
            m = on_core[p.core]  # PUs of this core in use
            core_total = 1 + (self.smt_yield - 1) * min(m - 1, 1)
            s = self.kind_speed(p.kind) * core_total / m
            r = on_pu[p.os]
            s *= max(0.7, 1 - 0.015 * (r - 1)) / r
            if p.os == 0 and (place != "os" or all_busy):
                s *= 1 - self.cpu0
            if place == "os":
                s *= 0.98
            out.append(s)
        return out

    def time(self, threads, place, cpus):
        where = placement(self.machine, threads, place, cpus)
        speeds = self.speeds(where, place, cpus)
        total = sum(speeds)
        if self.shape == "compute":
            return self.t1 * (self.serial + (1 - self.serial) / total)
        if self.shape == "static":
            return self.t1 * (self.serial + (1 - self.serial) / (threads * min(speeds)))
        if self.shape == "membw":
            per_node = {}
            for p, s in zip(where, speeds):
                per_node[p.numa] = per_node.get(p.numa, 0) + s * self.demand
            bw = sum(min(d, self.node_bw) for d in per_node.values())
            remote = 1.08 if place == "os" and len({p.numa for p in self.machine.pus}) > 1 else 1
            return self.t1 * (0.01 + 0.99 * self.demand / bw * remote)
        if self.shape == "cache":
            span = sum(self.machine.llc_bytes.get(l, 0) for l in {p.llc for p in where})
            miss = max(0.0, 1 - span / self.working_set)
            return self.t1 * (self.serial + (1 - self.serial) / total * (1 + (self.miss - 1) * miss))
        if self.shape == "lock":
            packages = len({p.package for p in where})
            nodes = len({p.numa for p in where})
            c = self.machine.counts()
            b = self.coherency * (1 + 3 * (packages - 1) / max(c["packages"] - 1, 1)) * (
                1 + (nodes - 1) / max(c["numa"] - 1, 1))
            rate = total / (1 + self.contention * (total - 1) + b * total * (total - 1))
            return self.t1 / rate
        raise ValueError(self.shape)


def sweep(machine, shape):
    """The lines of one modelled exhaustive sweep."""
    seed = SEED ^ zlib.crc32(f"{machine.name}/{shape}".encode())
    rng = random.Random(seed)
    model = Model(shape, machine, rng)
    c = machine.counts()
    cpus_list = ["all", "all ~pu:0"] if c["pus"] > 2 else ["all"]
    lines = []
    for threads in default_threads(c["cores"], c["pus"]):
        for place in ["os", "compact", "spread", "cores"]:
            for cpus in cpus_list:
                truth = model.time(threads, place, cpus)
                for _ in range(RUNS):
                    t = truth * math.exp(rng.gauss(0, model.sigma))
                    if rng.random() < 0.005:
                        t *= rng.uniform(1.3, 2.5)
                    lines.append(json.dumps({
                        "threads": threads, "place": place, "cpus": cpus,
                        "time_s": float(f"{t:.5g}"),
                    }))
    return "\n".join(lines) + "\n"


def machines():
    expected = {}
    path = os.path.join(TOPOLOGIES, "expected.json")
    if os.path.exists(path):
        with open(path) as f:
            expected = json.load(f)["topologies"]
    for name in sorted(os.listdir(TOPOLOGIES)):
        if not name.endswith(".xml"):
            continue
        m = load(os.path.join(TOPOLOGIES, name))
        want = expected.get(name, {}).get("counts")
        if want:
            got = m.counts()
            for key, theirs in [("pus", "pus"), ("cores", "cores")]:
                if got[key] != want[theirs]:
                    sys.exit(f"{name}: {got[key]} {key} read, expected.json says {want[theirs]}")
        yield m


def corpus():
    for m in machines():
        for shape in SHAPES:
            if shape == "static" and m.kinds < 2:
                continue
            if shape == "cache" and not m.llc_bytes:
                continue  # no cache sizes in the XML (the Itanium machines)
            yield f"{m.name[:-4]}.{shape}.jsonl", sweep(m, shape)


def main():
    check = "--check" in sys.argv[1:]
    os.makedirs(OUT, exist_ok=True)
    differ = 0
    for name, text in corpus():
        path = os.path.join(OUT, name)
        if check:
            with open(path) as f:
                if f.read() != text:
                    print(f"differs: {path}")
                    differ += 1
        else:
            with open(path, "w") as f:
                f.write(text)
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
