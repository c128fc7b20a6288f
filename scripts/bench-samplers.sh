#!/usr/bin/env bash
# What the samplers beside a run cost a program of many threads (BENCHMARKS.md, "What tune
# costs the program it times": the samplers at 1,000 threads).
#
#   scripts/bench-samplers.sh                    1,024 threads, 5 rounds of 3 runs per mode
#   THREADS=64 ROUNDS=3 scripts/bench-samplers.sh
#   BIN=/path/to/coretune scripts/bench-samplers.sh
#
# The program (C, compiled here) starts THREADS threads that share a fixed amount of integer
# work and end together, about 2 s on 2 CPUs: every CPU stays busy, so a sampler beside it
# takes its time from the program. Each round runs, in turn, three one-configuration sweeps of
# RUNS runs (after one warm-up): no sampler (`--place os`), `--monitor` (every 50 ms), and the
# placement check of a run on a CPU set (`--cpus`, every 50 ms). Every run's record states what
# its sampler cost (`sampler.samples`, `sampler.cpu_s`: the sampling thread's own CPU time).
# Prints per mode, over all rounds: the median run time and its ratio to no sampler's, the
# samples per run, the sampler's CPU time per run, and that time as a share of the run's wall
# time (of one CPU) and of the program's CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-1024}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-3}
WORK=${WORK:-4000000000}
for tool in cc jq python3; do
  command -v "$tool" >/dev/null || { echo "bench-samplers: $tool is not installed" >&2; exit 1; }
done
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked -p coretune >&2
  BIN=${CARGO_TARGET_DIR:-target}/release/coretune
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/threads.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static long per;
static pthread_barrier_t go;
static unsigned long *sums;
static void *run(void *arg) {
    long i = (long)arg;
    unsigned long x = (unsigned long)i + 1;
    pthread_barrier_wait(&go);
    for (long k = 0; k < per; k++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sums[i] = x;
    return NULL;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]), work = atol(argv[2]);
    per = work / n;
    sums = calloc((size_t)n, sizeof *sums);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_barrier_init(&go, NULL, (unsigned)n);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 65536);
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, run, (void *)i)) { perror("pthread_create"); return 1; }
    unsigned long s = 0;
    for (long i = 0; i < n; i++) { pthread_join(t[i], NULL); s ^= sums[i]; }
    printf("%lu\n", s);
    return 0;
}
C
cc -O2 -pthread -o "$work/threads" "$work/threads.c"
last=$(($(nproc) - 1))
modes=("none:--place os" "monitor:--place os --monitor" "audit:--place os --cpus 0-$last")
echo "== samplers beside $THREADS threads ($(nproc) CPUs), $ROUNDS rounds of $RUNS runs per mode; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/runs"
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in "${modes[@]}"; do
    name=${mode%%:*}
    rm -rf "$work/sweep"
    # shellcheck disable=SC2086 # the mode's options are a list of words
    "$BIN" tune --threads "$THREADS" ${mode#*:} --runs "$RUNS" --max-runs "$RUNS" --warmup 1 \
      --exhaustive --quiet --out "$work/sweep" -- "$work/threads" "$THREADS" "$WORK" >/dev/null
    jq -c --arg mode "$name" 'select(.status == "ok" and (.warmup | not)) | {mode: $mode, wall: .record.wall_s,
      cpu: ((.record.user_s // 0) + (.record.sys_s // 0)), samples: (.record.sampler.samples // 0),
      sampler: (.record.sampler.cpu_s // 0)}' "$work/sweep/runs.jsonl" >>"$work/runs"
  done
done
python3 - "$work/runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = statistics.median(r["wall"] for r in rows if r["mode"] == "none")
print("| mode | runs | median run s | ÷ no sampler | samples per run | sampler CPU ms per run | sampler CPU ÷ run wall time | sampler CPU ÷ program CPU |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for mode in ["none", "monitor", "audit"]:
    rs = [r for r in rows if r["mode"] == mode]
    med = lambda k: statistics.median(r[k] for r in rs)
    wall = med("wall")
    share_wall = statistics.median(r["sampler"] / r["wall"] for r in rs) * 100
    share_cpu = statistics.median(r["sampler"] / r["cpu"] for r in rs if r["cpu"] > 0) * 100
    print(f"| {mode} | {len(rs)} | {wall:.3f} | {wall / base:.3f} | {med('samples'):.0f} | "
          f"{med('sampler') * 1e3:.1f} | {share_wall:.2f}% | {share_cpu:.2f}% |")
PY
