#!/usr/bin/env bash
# Measures per-thread pinning (BENCHMARKS.md, "Per-thread placement of other programs").
#
#   scripts/bench-pin.sh [create] [sweep]      both by default
#   SIZE_MB=64 RUNS=3 scripts/bench-pin.sh sweep   a smaller sweep (defaults: 256 MB, 5 runs)
#
# create: what the pinning library adds to one thread creation: `cargo bench -p coretune-pin
#         --bench create` (plain / preloaded without a plan / pinned / likwid-pin's library,
#         2000 threads a run, 9 interleaved rounds, medians; the target is ≤ 5 µs added).
# sweep:  `coretune tune` of a real multi-threaded program nobody here wrote — xz (liblzma's
#         pthreads, `xz -T N`) and, when installed, zstd (`zstd -T N`) — compressing the same
#         generated file, over 1..2×PUs threads and the placements os, compact, spread, cores,
#         every configuration (--exhaustive), with --monitor. Prints the table, then per
#         placement the mechanism each run recorded (`preload` expected) and how many runs were
#         flagged as leaving their places (0 expected). The folders stay in $OUT (printed).
set -euo pipefail

cd "$(dirname "$0")/.."
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(create sweep)
SIZE_MB=${SIZE_MB:-256}
RUNS=${RUNS:-5}

for section in "${sections[@]}"; do
  case $section in
  create)
    echo "== cost per thread creation ($(cut -d' ' -f1-3 /proc/loadavg) loadavg before)"
    cargo bench --locked -p coretune-pin --bench create 2>/dev/null
    echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
    ;;
  sweep)
    cargo build --release --locked -p coretune -p coretune-pin >&2
    BIN=${CARGO_TARGET_DIR:-target}/release/coretune
    OUT=${OUT:-$(mktemp -d)}
    mkdir -p "$OUT"
    pus=$("$BIN" cpus all --to count 2>/dev/null)
    threads="1-$((2 * pus))"
    # Compressible but not trivial input: text of numbers interleaved with binary from /usr/lib.
    input="$OUT/input.bin"
    if [ ! -s "$input" ]; then
      # `head` closes the pipes early on purpose: their writers' SIGPIPE is not an error here.
      set +o pipefail
      { seq 1 100000000 | head -c $((SIZE_MB * 1024 * 1024 / 2))
        find /usr/lib -type f -size +100k 2>/dev/null | head -400 | xargs cat 2>/dev/null |
          head -c $((SIZE_MB * 1024 * 1024 / 2)); } >"$input"
      set -o pipefail
    fi
    echo "== input: $(du -h "$input" | cut -f1), threads $threads, $RUNS runs, $(cut -d' ' -f1-3 /proc/loadavg) loadavg"
    programs=("xz|xz -T{threads} -6 --block-size=2MiB -c $input")
    if command -v zstd >/dev/null; then
      programs+=("zstd|zstd -q -T{threads} -12 -B2MiB -c $input")
    fi
    for entry in "${programs[@]}"; do
      name=${entry%%|*}
      read -r -a cmd <<<"${entry#*|}"
      dir="$OUT/$name"
      rm -rf "$dir"
      echo
      echo "== $name: coretune tune -- ${cmd[*]}"
      "$BIN" tune -q --exhaustive --runs "$RUNS" --warmup 1 --monitor \
        --threads "$threads" --place os,compact,spread,cores --out "$dir" -- "${cmd[@]}"
      echo "-- $name: mechanism and off-place runs per placement (runs.jsonl)"
      jq -r 'select(.warmup == false and .status == "ok")
             | [.place, (.record.pinning.mechanism // "none"),
                ((.record.pinning.off_place // []) | length > 0)] | @tsv' "$dir/runs.jsonl" |
        sort | uniq -c | awk '{printf "   %3d runs  %-8s %-12s flagged=%s\n", $1, $2, $3, $4}'
    done
    echo
    echo "Folders: $OUT (loadavg after: $(cut -d' ' -f1-3 /proc/loadavg))"
    ;;
  *)
    echo "unknown section '$section' (create, sweep)" >&2
    exit 2
    ;;
  esac
done
