#!/usr/bin/env bash
# Measures coretune-pool against its peers in the shapes a shared machine has: few and many
# workers, quiet, contended and under a CPU quota (BENCHMARKS.md, "Pool overhead: shapes").
#
#   scripts/bench-pool.sh [spawn] [wake] [ab]      spawn and wake by default
#   ITEMS=100000 ROUNDS=1 WORKERS=2 scripts/bench-pool.sh spawn   a quick check that it runs
#   CONDITIONS="quiet quota" scripts/bench-pool.sh spawn          some of the conditions
#   BASE=main scripts/bench-pool.sh ab                  this checkout against revision BASE
#   BASE_BIN=/path/to/coretune scripts/bench-pool.sh ab   ... against a binary built before
#
# spawn: `coretune bench spawn` (one process per run: ITEMS items, default 10M, the pool built
#        before the clock starts, time from the first submission until the main thread wakes)
#        for coretune spawn, coretune spawn_batch, rayon::spawn, tokio, a crossbeam Injector
#        pool and, when `go` is installed, a Go channel worker pool
#        (scripts/bench-pool/gopool.go: GOMAXPROCS = workers goroutines on a buffered
#        channel, the same atomic countdown); PEERS overrides the list (names: coretune batch
#        rayon rayon-scope tokio crossbeam mutex go). Every peer runs with each worker count
#        of WORKERS (default "2 4 16 64": on a 2-CPU machine, one per CPU, and 2x, 8x and 32x
#        more workers than CPUs) under each of CONDITIONS (default "quiet contended quota"):
#          quiet      nothing else runs;
#          contended  one busy-looping process per CPU at normal priority beside it (started
#                     and stopped here);
#          quota      the run inside a cgroup allowed one CPU's worth of time (cpu.max
#                     "100000 100000" on cgroup v2, cpu.cfs_quota_us = cpu.cfs_period_us on
#                     v1's cpu controller), created and removed here; needs root, and is
#                     skipped with a message otherwise.
#        Each of ROUNDS rounds (default 5) runs every (workers, peer) once, the peers in an
#        order rotated per round, so drift hits all alike. Prints one Markdown table per
#        condition: per peer and worker count the median, min and max wall ns/item, max/min,
#        the median's ratio to coretune spawn's and to the fastest peer's at that worker count,
#        and the medians of the process's CPU time per item (user + system: what the pool costs
#        the machine, and what decides throughput when the CPUs are shared) and of its
#        voluntary and involuntary context switches.
# ab:    coretune spawn and spawn_batch of this checkout against the same built from git
#        revision BASE (default main; a temporary worktree, its own target directory), in the
#        same interleaved rounds and shapes: the A/B for a change to the pool.
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
read -r -a workers <<<"${WORKERS:-2 4 16 64}"
read -r -a conditions <<<"${CONDITIONS:-quiet contended quota}"

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

start_competitors() {
  local n
  n=$(nproc)
  for _ in $(seq "$n"); do
    bash -c 'while :; do :; done' &
    competitors+=("$!")
  done
}

. scripts/quota-cgroup.sh

cleanup() {
  stop_competitors
  remove_quota_cgroup
}
trap cleanup EXIT


# Prints one line for peer $1 with $2 workers: wall ns/item, CPU ns/item (user + system time
# of the whole process over the same span), voluntary and involuntary context switches,
# tab-separated.
run_peer() {
  local coretune_fields peer=$1 w=$2
  coretune_fields="[.throughput.value, (.runs[0].user_s + .runs[0].sys_s) * 1e9 / $ITEMS,
    .runs[0].voluntary_ctx_switches, .runs[0].involuntary_ctx_switches] | @tsv"
  case $peer in
  go) launch "$GOPOOL" -items "$ITEMS" -workers "$w" | awk -v OFS='\t' '{print $1, $3, $5, $6}' ;;
  batch) launch "$BIN" bench spawn --pool coretune --batch --items "$ITEMS" --threads "$w" \
    --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  base) launch "$BASE_BIN" bench spawn --pool coretune --items "$ITEMS" --threads "$w" \
    --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  base-batch) launch "$BASE_BIN" bench spawn --pool coretune --batch --items "$ITEMS" \
    --threads "$w" --runs 1 --warmup 0 --json | jq -r "$coretune_fields" ;;
  *) launch "$BIN" bench spawn --pool "$peer" --items "$ITEMS" --threads "$w" \
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

# Runs ROUNDS interleaved rounds of every (workers, peer) and prints the Markdown table.
table() {
  local title=$1 dir
  dir=$(mktemp -d)
  echo
  echo "### $title ($(cut -d' ' -f1-3 /proc/loadavg) loadavg before)"
  local n=${#peers[@]}
  for ((round = 0; round < ROUNDS; round++)); do
    for w in "${workers[@]}"; do
      for ((k = 0; k < n; k++)); do
        local peer=${peers[$(((k + round) % n))]}
        run_peer "$peer" "$w" >>"$dir/$peer.$w"
      done
    done
  done
  echo
  echo "| pool | workers | ns/item (median of $ROUNDS) | min | max | max/min | ÷ coretune spawn | ÷ fastest | CPU ns/item (median) | vol. cs | invol. cs |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  for w in "${workers[@]}"; do
    local base fastest
    base=$(median "$dir/${peers[0]}.$w" 1)
    fastest=$(for peer in "${peers[@]}"; do median "$dir/$peer.$w" 1; done | sort -g | head -1)
    for peer in "${peers[@]}"; do
      cut -f1 "$dir/$peer.$w" | sort -g | awk -v name="$(label "$peer")" -v w="$w" \
        -v base="$base" -v fastest="$fastest" -v cpu="$(median "$dir/$peer.$w" 2)" \
        -v vol="$(median "$dir/$peer.$w" 3)" -v invol="$(median "$dir/$peer.$w" 4)" \
        '{a[NR]=$1} END {m=a[int((NR+1)/2)];
          printf "| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f× | %.2f× | %.1f | %d | %d |\n",
            name, w, m, a[1], a[NR], a[NR]/a[1], m/base, m/fastest, cpu, vol, invol}'
    done
  done
  echo
  echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
  rm -rf "$dir"
}

# Every condition of CONDITIONS, one table each.
tables() {
  for condition in "${conditions[@]}"; do
    case $condition in
    quiet) table "quiet" ;;
    contended)
      start_competitors
      table "contended: ${#competitors[@]} busy-looping processes, one per CPU"
      stop_competitors
      ;;
    quota)
      if make_quota_cgroup; then
        table "quota: a cgroup allowed one CPU's worth of time ($CGROUP)"
        echo "cgroup throttling over the table: $(grep -E 'nr_throttled|throttled_(time|usec)' "$CGROUP/cpu.stat" | tr '\n' ' ')"
        remove_quota_cgroup
      fi
      ;;
    *)
      echo "unknown condition '$condition' (quiet, contended, quota)" >&2
      exit 2
      ;;
    esac
  done
}

for section in "${sections[@]}"; do
  case $section in
  spawn)
    cargo build --release --locked -p coretune >&2
    BIN=${CARGO_TARGET_DIR:-target}/release/coretune
    read -r -a peers <<<"${PEERS:-coretune batch rayon tokio crossbeam go}"
    if [[ " ${peers[*]} " == *" go "* ]]; then
      if command -v go >/dev/null; then
        GOPOOL=$(mktemp -d)/gopool
        (cd scripts/bench-pool && GO111MODULE=off go build -o "$GOPOOL" gopool.go)
      else
        echo "(go not installed: no Go channel pool row; apt-get install golang-go)" >&2
        read -r -a peers <<<"${peers[*]/go/}"
      fi
    fi
    echo "== spawn: $ITEMS items, workers ${workers[*]}, $ROUNDS interleaved rounds, $(nproc) CPUs"
    tables
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
    echo "== ab: this checkout ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', modified')) against $BASE: $ITEMS items, workers ${workers[*]}, $ROUNDS interleaved rounds"
    tables
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
