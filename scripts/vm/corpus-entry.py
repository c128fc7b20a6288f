#!/usr/bin/env python3
"""Facts for one topology of tests/data/topologies/expected.json, from hwloc's own tools.

    scripts/vm/corpus-entry.py FILE.xml KERNEL_FACTS.txt SOURCE.json > entry.json

Run in tests/data/topologies/ (the commands are recorded with $F for the file name). Writes the
keys the corpus tests read, in the shape of the other entries: levels, counts, smt, root,
offline/disallowed PUs, numa, packages, l3, distances, cpukinds, queries (hwloc-calc) and distrib
(hwloc-distrib). Where hwloc's tools refuse a question (a type on several levels: "found multiple
levels", "cannot use ... with multiple depth") the refusal is recorded as it was printed, and the
answer the kernel gives is under `kernel` (KERNEL_FACTS: the guest's `facts` check output, see
scripts/vm/guest/lib.sh), so the tests can compare coretune with the kernel there.

SOURCE.json is the entry's `source`, `model` and `notes`. Maintenance tool: no test runs it.
"""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def bits(hexstr):
    """hwloc bitmap string -> sorted CPU numbers."""
    out = []
    for i, word in enumerate(reversed(hexstr.split(","))):
        word = word.replace("0x", "") or "0"
        v = int(word, 16)
        out += [32 * i + b for b in range(32) if v >> b & 1]
    return sorted(out)


def pulist(cpus):
    cpus = sorted(cpus)
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def taskset(hexstr):
    v = sum(1 << c for c in bits(hexstr))
    return hex(v)


def levels(f, disallowed=False):
    extra = ["--disallowed"] if disallowed else []
    _, out, _ = run("hwloc-info", "--input", f, *extra)
    lv = {}
    for line in out.splitlines():
        m = re.match(r"\s*depth (\d+):\s+(\d+) (\S+)", line) or re.match(
            r"\s*Special depth -\d+:\s+(\d+) (\S+)", line
        )
        if not m:
            continue
        n, ty = (m.group(2), m.group(3)) if line.strip().startswith("depth") else m.groups()
        if ty in ("Bridge", "PCIDev", "OSDev", "Misc"):
            continue
        lv[ty] = lv.get(ty, 0) + int(n)  # a type on several levels: summed
    return lv


def info(f, loc, disallowed=False):
    extra = ["--disallowed"] if disallowed else []
    _, out, _ = run("hwloc-info", "--input", f, *extra, loc)
    d = {}
    for line in out.splitlines():
        k, sep, v = line.strip().partition(" =")
        if sep:
            d[k] = v.strip()
    return d


def count(f, ty, lv, disallowed=False):
    extra = ["--disallowed"] if disallowed else []
    rc, out, _ = run("hwloc-calc", "--input", f, *extra, "-N", ty, "all")
    if rc == 0 and out.isdigit():
        return int(out)
    # "cannot use --number-of type Core with multiple depth": the levels, summed.
    return lv.get({"core": "Core", "pu": "PU", "die": "Die"}.get(ty, ty), 0)


def main():
    f, kernel_file, source_file = sys.argv[1:4]
    name = f.split("/")[-1]
    source = json.load(open(source_file))
    lv, lvd = levels(f), levels(f, True)

    cores = set()
    for line in open(kernel_file):
        p = line.split()
        if p and p[0] == "cpu":
            sib = []
            for part in p[3].split(","):
                a, _, b = part.partition("-")
                sib += range(int(a), int(b or a) + 1)
            cores.add(tuple(sib))
    kernel_cores = [list(c) for c in sorted(cores)]

    root, rootd = info(f, "root"), info(f, "root", True)
    cpuset = bits(root["cpuset"])
    complete = bits(root["complete cpuset"])
    with_dis = bits(rootd["cpuset"])
    offline = sorted(set(complete) - set(with_dis))
    disallowed = sorted(set(with_dis) - set(cpuset))

    tree = ET.parse(f).getroot()
    hist = {}
    for core in tree.iter("object"):
        if core.get("type") == "Core":
            n = sum(1 for o in core.iter("object") if o.get("type") == "PU")
            hist[str(n)] = hist.get(str(n), 0) + 1
    smt_cmd = "hwloc-calc --input $F -H core.pu all"
    rc, _, err = run("hwloc-calc", "--input", f, "-H", "core.pu", "all")
    smt = {
        "pus_per_core_histogram": hist,
        "min": min(map(int, hist)),
        "max": max(map(int, hist)),
        "cmd": smt_cmd if rc == 0 and not err else "PU children of each Core object of $F",
    }
    if rc != 0 or err:
        smt["hwloc_calc_stderr"] = err

    numa = []
    for i in range(lv.get("NUMANode", 0)):
        d = info(f, f"numa:{i}")
        pus = bits(d["cpuset"])
        numa.append({
            "logical_index": i, "os_index": int(d["os index"]),
            "local_memory": int(d.get("local memory", 0)), "cpuset": d["cpuset"],
            "pus": pus, "pulist": pulist(pus),
        })

    def objects(ty, n):
        out = []
        for i in range(n):
            _, s, _ = run("hwloc-calc", "--input", f, f"{ty}:{i}")
            out.append({"logical_index": i, "cpuset": s, "pulist": pulist(bits(s)),
                        "npus": len(bits(s))})
        return out

    distances = []
    _, out, _ = run("lstopo-no-graphics", "--input", f, "--distances")
    lines = out.splitlines()
    for k, line in enumerate(lines):
        m = re.match(r"(.*) matrix \(name (\S+) kind (\d+)\) between (\d+) (\S+) .*", line)
        if m:
            n = int(m.group(4))
            matrix = [[int(x) for x in lines[k + 2 + r].split()[1:]] for r in range(n)]
            distances.append({
                "description": m.group(1), "name": m.group(2), "kind": int(m.group(3)),
                "nbobjs": n, "objects": m.group(5), "matrix": matrix,
                "os_indexes": [x["os_index"] for x in numa],
            })

    cpukinds = []
    for rank, kind in enumerate(tree.iter("cpukind")):
        pus = bits(kind.get("cpuset"))
        cpukinds.append({
            "rank": rank, "efficiency": int(kind.get("forced_efficiency", rank)),
            "cpuset": kind.get("cpuset"), "pus": pus,
            "infos": {i.get("name"): i.get("value") for i in kind.iter("info")},
            "pulist": pulist(pus),
        })

    queries = {}
    for key in ["all", "numa:0", "core:0-3", "all ~pu:0", "--pi all ~pu:0", "--no-smt all",
                "--disallowed all"]:
        opts = [w for w in key.split() if w.startswith("--")]
        loc = [w for w in key.split() if not w.startswith("--")]
        rc, s, err = run("hwloc-calc", "--input", f, *opts, *loc)
        _, order, _ = run("hwloc-calc", "--input", f, *opts, "-I", "pu", "--po", *loc)
        pus = [int(x) for x in order.split(",") if x.strip().isdigit()]
        q = {
            "cmd": f"hwloc-calc --input $F {key}", "cpuset": s or "0x0",
            "taskset": taskset(s or "0x0"),
            "pus_cmd": f"hwloc-calc --input $F {' '.join(opts + ['-I', 'pu', '--po'] + loc)}",
            "pus": pus, "pulist": pulist(bits(s or "0x0")), "npus": len(bits(s or "0x0")),
        }
        if err:
            q["stderr"], q["rc"] = err, rc
        queries[key] = q

    ncores = count(f, "core", lv)
    distrib = {}
    for n in sorted({4, ncores}):
        for single in (False, True):
            key = f"--single {n}" if single else str(n)
            args = ["--single"] if single else []
            rc, out, _ = run("hwloc-distrib", "--input", f, *args, str(n))
            sets = out.split()
            distrib[key] = {"cmd": f"hwloc-distrib --input $F {key}", "rc": rc,
                            "cpusets": sets, "pus": [bits(s) for s in sets]}

    entry = {
        "file": name, "set": "vm", **source, "hwloc_tools_version": "2.9.0",
        "levels": lv, "levels_with_disallowed": lvd,
        "counts": {
            "packages": count(f, "package", lv), "dies": count(f, "die", lv),
            "numa_nodes": lv.get("NUMANode", 0),
            "numa_nodes_intersecting_cpus": count(f, "numa", lv),
            "l3": count(f, "l3cache", lv), "l2": count(f, "l2cache", lv), "cores": ncores,
            "pus": count(f, "pu", lv), "cores_with_disallowed": count(f, "core", lvd, True),
            "pus_with_disallowed": count(f, "pu", lvd, True),
        },
        "smt": smt,
        "root": {
            "cpuset": root["cpuset"], "complete_cpuset": root["complete cpuset"],
            "allowed_cpuset": root["allowed cpuset"], "cpuset_with_disallowed": rootd["cpuset"],
            "nodeset": root["nodeset"], "complete_nodeset": root["complete nodeset"],
            "allowed_nodeset": root["allowed nodeset"],
            "cmd": "hwloc-info --input $F root ; hwloc-info --input $F --disallowed root",
        },
        "offline_pus": offline, "offline_pulist": pulist(offline),
        "disallowed_pus": disallowed, "disallowed_pulist": pulist(disallowed),
        "offline_or_cpuless_numa_nodes": [], "disallowed_numa_nodes": [],
        "numa": numa,
        "packages": objects("package", count(f, "package", lv)),
        "l3": objects("l3cache", count(f, "l3cache", lv)),
        "distances": distances, "cpukinds": cpukinds, "queries": queries, "distrib": distrib,
        "kernel": {
            "cores": kernel_cores,
            "cmd": "thread_siblings_list of every online CPU in the guest (scripts/vm/guest/lib.sh facts)",
        },
    }
    json.dump(entry, sys.stdout, indent=1)
    print()


main()
