#!/usr/bin/env bash
# Measures coretune-pool against its peers, quiet and under contention (BENCHMARKS.md, "Pool
# overhead: quiet and contended").
#
#   scripts/bench-pool.sh [spawn] [wake] [ab]      spawn and wake by default
#   ITEMS=100000 ROUNDS=1 scripts/bench-pool.sh spawn   a quick check that it runs
#   BASE=main scripts/bench-pool.sh ab                  this checkout against revision BASE
#   BASE_BIN=/path/to/coretune scripts/bench-pool.sh ab   ... against a binary built before
#
# spawn: `coretune bench spawn` (one process per run: 2 workers, ITEMS items, default 10M, the
#        pool built before the clock starts, time from the first submission until the main
#        thread wakes) for coretune spawn, coretune spawn_batch, rayon::spawn, rayon::scope,
#        tokio, a crossbeam Injector pool, a Mutex+Condvar pool and, when `go` is installed, a
#        Go channel worker pool (scripts/bench-pool/gopool.go: GOMAXPROCS worker goroutines on a
#        buffered channel, the same atomic countdown). Twice: on the quiet machine, then with
#        one busy-looping process per CPU at normal priority (started and stopped here). Each
#        of ROUNDS rounds (default 5) runs every peer once, in an order rotated per round, so
#        drift hits all alike. Prints one Markdown table per condition: median, min, max
#        ns/item, the ratio to coretune spawn and to the fastest peer of the same table, and
#        the medians of the process's CPU time per item (user + system: what the pool costs
#        the machine, and the figure that decides throughput when the CPUs are shared) and
#        of its voluntary and involuntary context switches.
# ab:    coretune spawn and spawn_batch of this checkout against the same built from git
#        revision BASE (default main; a temporary worktree, its own target directory), in the
#        same interleaved rounds, quiet and contended: the A/B for a change to the pool.
# wake:  `cargo bench -p coretune-pool --features peers --bench spawn` (the bench needs the
#        pool's peer pools) restricted to coretune spawn: prints the idle pool's CPU use and
#        the wake-up latency of one spawn into a sleeping pool (coretune and rayon, 500
#        samples, median and p99).
set -euo pipefail

cd "$(dirname "$0")/.."
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(spawn wake)
ITEMS=${ITEMS:-10000000}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-2}

competitors=()
stop_competitors() {
  for pid in "${competitors[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${competitors[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  competitors=()
}
trap stop_competitors EXIT

start_competitors() {
  local n
  n=$(nproc)
  for _ in $(seq "$n"); do
    bash -c 'while :; do :; done' &
    competitors+=("$!")
  done
}

# Prints one line for peer $1: wall ns/item, CPU ns/item (user + system time of the whole
# process over the same span), voluntary and involuntary context switches, tab-separated.
run_peer() {
  local coretune_fields
  coretune_fields="[.throughput.value, (.runs[0].user_s + .runs[0].sys_s) * 1e9 / $ITEMS,
    .runs[0].voluntary_ctx_switches, .runs[0].involuntary_ctx_switches] | @tsv"
  case $1 in
  go) "$GOPOOL" -items "$ITEMS" -workers "$THREADS" | awk -v OFS='\t' '{print $1, $3, $5, $6}' ;;
  batch) "$BIN" bench spawn --pool coretune --batch --items "$ITEMS" --threads "$THREADS" \
    --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  base) "$BASE_BIN" bench spawn --pool coretune --items "$ITEMS" --threads "$THREADS" \
    --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  base-batch) "$BASE_BIN" bench spawn --pool coretune --batch --items "$ITEMS" \
    --threads "$THREADS" --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  *) "$BIN" bench spawn --pool "$1" --items "$ITEMS" --threads "$THREADS" \
    --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  esac
}

label() {
  case $1 in
  coretune) echo "coretune spawn" ;;
  batch) echo "coretune spawn_batch" ;;
  rayon) echo "rayon::spawn" ;;
  rayon-scope) echo "rayon::scope" ;;
  tokio) echo "tokio spawn" ;;
  crossbeam) echo "crossbeam Injector" ;;
  mutex) echo "Mutex+Condvar" ;;
  go) echo "Go channel pool" ;;
  base) echo "coretune spawn at $BASE" ;;
  base-batch) echo "coretune spawn_batch at $BASE" ;;
  esac
}

# Median of column $2 of file $1 (tab-separated, one run per line).
median() {
  cut -f"$2" "$1" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# Runs ROUNDS interleaved rounds of every peer and prints the Markdown table.
table() {
  local title=$1 dir
  dir=$(mktemp -d)
  echo
  echo "### $title ($(cut -d' ' -f1-3 /proc/loadavg) loadavg before)"
  local n=${#peers[@]}
  for ((round = 0; round < ROUNDS; round++)); do
    for ((k = 0; k < n; k++)); do
      local peer=${peers[$(((k + round) % n))]}
      run_peer "$peer" >>"$dir/$peer"
    done
  done
  echo
  echo "| pool | ns/item (median of $ROUNDS) | min | max | ÷ coretune spawn | ÷ fastest | CPU ns/item (median) | vol. cs | invol. cs |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  local base fastest
  base=$(median "$dir/coretune" 1)
  fastest=$(for peer in "${peers[@]}"; do median "$dir/$peer" 1; done | sort -g | head -1)
  for peer in "${peers[@]}"; do
    cut -f1 "$dir/$peer" | sort -g | awk -v name="$(label "$peer")" -v base="$base" \
      -v fastest="$fastest" -v cpu="$(median "$dir/$peer" 2)" -v vol="$(median "$dir/$peer" 3)" \
      -v invol="$(median "$dir/$peer" 4)" \
      '{a[NR]=$1} END {m=a[int((NR+1)/2)];
        printf "| %s | %.1f | %.1f | %.1f | %.2f× | %.2f× | %.1f | %d | %d |\n",
          name, m, a[1], a[NR], m/base, m/fastest, cpu, vol, invol}'
  done
  echo
  echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
  rm -rf "$dir"
}

for section in "${sections[@]}"; do
  case $section in
  spawn)
    cargo build --release --locked -p coretune >&2
    BIN=${CARGO_TARGET_DIR:-target}/release/coretune
    peers=(coretune batch rayon rayon-scope tokio crossbeam mutex)
    if command -v go >/dev/null; then
      GOPOOL=$(mktemp -d)/gopool
      (cd scripts/bench-pool && GO111MODULE=off go build -o "$GOPOOL" gopool.go)
      peers+=(go)
    else
      echo "(go not installed: no Go channel pool row; apt-get install golang-go)" >&2
    fi
    echo "== spawn: $ITEMS items, $THREADS workers, $ROUNDS interleaved rounds, $(nproc) CPUs"
    table "quiet"
    start_competitors
    table "contended: ${#competitors[@]} busy-looping processes, one per CPU"
    stop_competitors
    ;;
  ab)
    cargo build --release --locked -p coretune >&2
    BIN=${CARGO_TARGET_DIR:-target}/release/coretune
    base_dir=
    if [ -n "${BASE_BIN:-}" ]; then
      BASE=${BASE:-$BASE_BIN}
    else
      BASE=${BASE:-main}
      base_dir=$(mktemp -d)
      git worktree add --detach "$base_dir/src" "$BASE" >&2
      (cd "$base_dir/src" && CARGO_TARGET_DIR="$base_dir/target" \
        cargo build --release --locked -p coretune >&2)
      BASE_BIN=$base_dir/target/release/coretune
      BASE="$BASE ($(git rev-parse --short "$BASE"))"
    fi
    peers=(coretune base batch base-batch)
    echo "== ab: this checkout ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', modified')) against $BASE: $ITEMS items, $THREADS workers, $ROUNDS interleaved rounds"
    table "quiet"
    start_competitors
    table "contended: ${#competitors[@]} busy-looping processes, one per CPU"
    stop_competitors
    if [ -n "$base_dir" ]; then
      git worktree remove --force "$base_dir/src"
      rm -rf "$base_dir"
    fi
    ;;
  wake)
    echo "== wake-up latency and idle CPU ($(cut -d' ' -f1-3 /proc/loadavg) loadavg before)"
    SPAWN_BENCH_ONLY="coretune spawn" cargo bench --locked -p coretune-pool --features peers \
      --bench spawn 2>/dev/null |
      grep -E "idle|wake-up|^[0-9]+ items|coretune spawn"
    ;;
  *)
    echo "unknown section '$section' (spawn, wake, ab)" >&2
    exit 2
    ;;
  esac
done
