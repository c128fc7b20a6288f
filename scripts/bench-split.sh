#!/usr/bin/env bash
# Splitting a machine (issue 28): instances × threads × memory policy sweeps of membw and
# raymesh, on this machine quiet, under contention (one busy loop per CPU beside the sweep) and
# under a CPU quota (a cgroup allowed one CPU's worth of time, scripts/quota-cgroup.sh),
# and — with `guest` — in the 4-node QEMU guest (functional: TCG runs every vCPU on one host
# thread). Prints each sweep's table and recommendation for BENCHMARKS.md.
#
#   scripts/bench-split.sh            this machine, quiet, under a quota, then busy
#   scripts/bench-split.sh guest      the 4-node guest (scripts/vm/vm.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p coretune >&2
bin=$PWD/target/release/coretune
out=$(mktemp -d)
grid=(--instances 1,2 --threads 1,2 --place os --cpus all --mem none,local,interleave --exhaustive --runs 3 --warmup 1)

if [[ "${1:-}" == guest ]]; then
    payload=$out/split.sh
    cat > "$payload" <<'PAYLOAD'
#!/bin/sh
#@ sockets=4 cores=2 threads=1 nodes=4 mem=4096 timeout=1500
. /lib/vm/lib.sh
CHECK_TIMEOUT=700
grid="--instances 1,2,4 --threads 1,2 --place os --cpus all --mem none,local,interleave --exhaustive --runs 2 --warmup 0"
check "split membw" coretune tune membw --size small $grid --out /tmp/split-membw
check "split raymesh" coretune tune raymesh --size small --rays 20000 $grid --out /tmp/split-raymesh
PAYLOAD
    scripts/vm/vm.sh run "$payload" > "$out/guest.log"
    python3 - "$out/guest.log" <<'PY'
import json, sys
for line in open(sys.argv[1], errors="replace"):
    i = line.find('{"check":"split')
    if i >= 0:
        d = json.loads(line[i:])
        print(f"## {d['check']} (rc {d['rc']}, {d['s']} s)\n{d['out']}")
PY
    exit 0
fi

. scripts/quota-cgroup.sh
trap remove_quota_cgroup EXIT

sweep() { # name, then tune's arguments
    local name=$1
    shift
    echo "## $name (loadavg before: $(cut -d' ' -f1 /proc/loadavg))"
    launch "$bin" tune "$@" "${grid[@]}" --quiet --out "$out/$name" | sed -n '/^inst×thr/,/^Apply it/p'
    echo "(loadavg after: $(cut -d' ' -f1 /proc/loadavg))"
}

sweep membw-quiet membw
sweep raymesh-quiet raymesh
if make_quota_cgroup; then
    sweep membw-quota membw
    sweep raymesh-quota raymesh
    remove_quota_cgroup
fi
# Contention: one busy loop per CPU for the length of the sweeps.
pids=()
for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null; remove_quota_cgroup' EXIT
sweep membw-busy membw
sweep raymesh-busy raymesh
