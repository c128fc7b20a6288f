#!/usr/bin/env bash
# The adaptive throttle against every fixed limit on the shapes where a limit matters
# (BENCHMARKS.md, "Adaptive throttle: finding the knee"): a backend collapsing past 4 in
# flight (32 workers), a contended spin lock (16 workers), blocking I/O and mixed compute +
# I/O (32 workers), and a backend whose knee moves from 4 to 12 mid-run. Interleaved rounds;
# per shape every configuration's throughput and ratio to the best fixed limit of the same
# round (crates/pool/benches/throttle.rs says what each shape does).
#
#   scripts/bench-throttle.sh                     every shape, 3 rounds of 2 s runs (~4 min)
#   scripts/bench-throttle.sh --only backend      one shape (backend lock io mixed step)
#   scripts/bench-throttle.sh --quick             1 round of 0.5 s runs: a check that it runs
#   scripts/bench-throttle.sh --rounds 5 --seconds 3 --label contended
#
# It wraps itself in no lock: run it as `flock -x /work/wt/quiet.lock scripts/bench-throttle.sh`
# on a machine shared with builds. Arguments go to the bench; the build is excluded from the
# time, and loadavg is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
# The binary is run directly, so that sources edited while it runs change nothing.
bin=$(cargo bench --locked -p coretune-pool --bench throttle --no-run 2>&1 |
    tee /dev/stderr | sed -n 's/.*Executable.*(\(.*\)).*/\1/p' | tail -1)
[ -x "$bin" ] || { echo "bench-throttle: no bench binary found" >&2; exit 1; }
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates/pool || echo ' (+ changes)'); loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --bench "$@"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
