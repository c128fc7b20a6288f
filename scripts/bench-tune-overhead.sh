#!/usr/bin/env bash
# What `coretune tune` costs the program it times, against hyperfine on the same command
# (BENCHMARKS.md, "What tune costs the program it times").
#
#   scripts/bench-tune-overhead.sh            xz -T<nproc> on 32 MB, 5 rounds of 10 runs each
#   ROUNDS=3 RUNS=5 MB=8 scripts/bench-tune-overhead.sh      smaller
#   THREADS=1 scripts/bench-tune-overhead.sh                 xz -T1 (CPUs to spare)
#   BIN=/path/to/coretune scripts/bench-tune-overhead.sh     another build (e.g. an older one)
#   TUNE_ARGS="--monitor" scripts/bench-tune-overhead.sh     what a sampler beside it costs
#
# The program uses every CPU (xz -T$THREADS, default nproc, -3, 1 MiB blocks, on MB megabytes of
# base64 text made once from /dev/urandom), so anything that wakes beside it takes a CPU from
# it. Each round runs, in turn: hyperfine (-N: no shell; RUNS runs after one warm-up), coretune
# tune (one configuration, RUNS runs after one warm-up), and the program alone RUNS times under
# a getrusage wrapper (python3: the program's own involuntary and voluntary context switches,
# what it gets with nobody measuring). Prints a Markdown table per round and the medians over
# the rounds: each tool's median and fastest time, coretune's ratio to hyperfine, and the
# program's involuntary context switches per run under coretune and alone.
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-10}
MB=${MB:-32}
THREADS=${THREADS:-$(nproc)}

for tool in hyperfine xz python3 jq; do
  command -v "$tool" >/dev/null || {
    echo "bench-tune-overhead: $tool is not installed" >&2
    exit 1
  }
done
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked -p coretune >&2
  BIN=${CARGO_TARGET_DIR:-target}/release/coretune
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c $((MB * 1024 * 768)) /dev/urandom | base64 >"$work/input"
cmd=(xz "-T$THREADS" -3 --block-size=1MiB -c "$work/input")
cmd_text="${cmd[*]} > /dev/null"

# The program alone, RUNS times: median involuntary and voluntary context switches per run.
alone() {
  python3 - "$RUNS" "${cmd[@]}" <<'EOF'
import resource, subprocess, sys
runs, cmd = int(sys.argv[1]), sys.argv[2:]
invol, vol = [], []
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    invol.append(after.ru_nivcsw - before.ru_nivcsw)
    vol.append(after.ru_nvcsw - before.ru_nvcsw)
invol.sort(); vol.sort()
print(invol[len(invol) // 2], vol[len(vol) // 2])
EOF
}

echo "== tune${TUNE_ARGS:+ $TUNE_ARGS} against hyperfine: $cmd_text ($(nproc) CPUs), $ROUNDS rounds of $RUNS runs"
echo
echo "| round | hyperfine median s | hyperfine min s | tune median s | tune min s | tune ÷ hyperfine (median) | invol. cs under tune | invol. cs alone | vol. cs under tune | vol. cs alone |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
: >"$work/rows"
for ((round = 1; round <= ROUNDS; round++)); do
  hyperfine -N --runs "$RUNS" --warmup 1 --output=null --export-json "$work/hf.json" \
    "${cmd[*]}" >/dev/null 2>&1
  rm -rf "$work/sweep"
  # The command's stdout is closed by tune, as hyperfine's --output=null discards it.
  # shellcheck disable=SC2086 # TUNE_ARGS is a list of words
  "$BIN" tune --threads "$THREADS" --place os --runs "$RUNS" --warmup 1 --exhaustive --quiet \
    ${TUNE_ARGS:-} --out "$work/sweep" -- "${cmd[@]}" >/dev/null
  read -r alone_invol alone_vol < <(alone)
  hf=$(jq -r '.results[0] | "\(.median) \(.min)"' "$work/hf.json")
  ct=$(jq -r '.configs[0] | "\(.median_s) \(.min_s) \(.involuntary_ctx_switches) \(.voluntary_ctx_switches)"' \
    "$work/sweep/summary.json")
  read -r hf_med hf_min <<<"$hf"
  read -r ct_med ct_min ct_invol ct_vol <<<"$ct"
  echo "$hf_med $hf_min $ct_med $ct_min $ct_invol $alone_invol $ct_vol $alone_vol" >>"$work/rows"
  awk -v r="$round" '{printf "| %d | %.4f | %.4f | %.4f | %.4f | %.3f | %.0f | %d | %.0f | %d |\n",
    r, $1, $2, $3, $4, $3/$1, $5, $6, $7, $8}' <<<"$hf_med $hf_min $ct_med $ct_min $ct_invol $alone_invol $ct_vol $alone_vol"
done
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
col() { awk -v c="$1" '{print $c}' "$work/rows" | med; }
echo
echo "Medians over the rounds: hyperfine $(col 1) s, tune $(col 3) s (ratio $(awk '{print $3/$1}' "$work/rows" | med)); involuntary context switches per run: $(col 5) under tune, $(col 6) alone."
