#!/usr/bin/env bash
# Measures the rules daemon (`coretune rules watch`) against BENCHMARKS.md's targets and prints
# a Markdown table. Needs root (the process-event connector, other processes' affinity).
#
#   scripts/bench-rules.sh            the full run (about 2 minutes)
#   scripts/bench-rules.sh --quick    a few seconds: checks the script works, numbers meaningless
#
# What it measures:
#   1. exec → applied with the connector: N matching programs (a copy of `sleep`) started 20 ms
#      apart; the daemon logs, per process, `latency_ms` = its clock at the moment the CPU set is
#      in force − the kernel's timestamp of the exec event (both CLOCK_MONOTONIC). Median, p99,
#      max.
#   2. the same with `--poll --interval 100`: `latency_ms` is measured from the process's start
#      time in /proc (10 ms resolution), so it includes the fork → exec gap (tiny here).
#   3. the daemon's CPU time (utime + stime of /proc/PID/stat) while STARTS short processes
#      start evenly over DURATION seconds (half of them matching a rule), as % of one CPU; and
#      over IDLE seconds with nothing starting.
# Sizes: N (200), STARTS (1000), DURATION (60), IDLE (10); --quick sets 20, 50, 3, 1.
set -euo pipefail

cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "bench-rules.sh: needs root (the process-event connector and other processes)" >&2
    exit 2
fi
N=${N:-200} STARTS=${STARTS:-1000} DURATION=${DURATION:-60} IDLE=${IDLE:-10}
if [ "${1:-}" = --quick ]; then
    N=20 STARTS=50 DURATION=3 IDLE=1
fi
if [ -z "${CORETUNE:-}" ]; then
    cargo build --release -p coretune >&2
    CORETUNE=${CARGO_TARGET_DIR:-target}/release/coretune
fi
DIR=$(mktemp -d)
DAEMON=
cleanup() {
    [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
cp "$(type -P sleep)" "$DIR/ct-bench-match"
cp "$(type -P true)" "$DIR/ct-bench-short"
cp "$(type -P true)" "$DIR/ct-bench-other"
cat >"$DIR/rules.toml" <<RULES
[[rule]]
name = "bench"
exe = ["ct-bench-match", "ct-bench-short"]
cpus = "all ~pu:0"
RULES
chmod 644 "$DIR/rules.toml"
TICKS=$(getconf CLK_TCK)

# start_daemon LOG ARGS...: the daemon in the background, waiting until it watches.
start_daemon() {
    local log=$1
    shift
    "$CORETUNE" rules watch "$DIR/rules.toml" "$@" >"$log" 2>"$log.err" &
    DAEMON=$!
    until grep -q 'watching process starts' "$log.err" 2>/dev/null; do sleep 0.05; done
    sed 's/^/  /' "$log.err" >&2
}

stop_daemon() {
    kill "$DAEMON"
    wait "$DAEMON" || true
    DAEMON=
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# latency LOG: median, p99 and max of latency_ms over the exec/poll lines of the bench rule.
latency() {
    grep -o '"latency_ms":[0-9.]*' "$1" | cut -d: -f2 | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "| - | - | - | 0 |"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            p = v[int(NR * 0.99 + 0.999)]
            printf "| %.3f | %.3f | %.3f | %d |\n", m, p, v[NR], NR
        }'
}

# starts COUNT: COUNT matching programs, 20 ms apart, each alive 0.2 s.
starts() {
    local i pids=()
    for ((i = 0; i < $1; i++)); do
        "$DIR/ct-bench-match" 0.2 &
        pids+=($!)
        sleep 0.02
    done
    wait "${pids[@]}"
}

echo "loadavg before: $(cat /proc/loadavg)" >&2
echo "| event source | median ms | p99 ms | max ms | processes |"
echo "|---|---|---|---|---|"
start_daemon "$DIR/conn.jsonl"
starts "$N"
sleep 0.5
stop_daemon
echo "| connector (exec → applied) $(latency "$DIR/conn.jsonl")"
start_daemon "$DIR/poll.jsonl" --poll --interval 100
starts "$N"
sleep 0.5
stop_daemon
echo "| polling every 100 ms (start → applied) $(latency "$DIR/poll.jsonl")"

echo
echo "| daemon CPU | ticks | seconds | % of one CPU |"
echo "|---|---|---|---|"
start_daemon "$DIR/cpu.jsonl"
before=$(cpu_ticks "$DAEMON")
gap=$(awk -v s="$DURATION" -v n="$STARTS" 'BEGIN { printf "%.4f", s / n }')
t0=$(date +%s.%N)
for ((i = 0; i < STARTS; i++)); do
    if ((i % 2)); then "$DIR/ct-bench-short"; else "$DIR/ct-bench-other"; fi
    sleep "$gap"
done
t1=$(date +%s.%N)
after=$(cpu_ticks "$DAEMON")
awk -v t="$((after - before))" -v a="$t0" -v b="$t1" -v hz="$TICKS" -v n="$STARTS" \
    'BEGIN { s = b - a; printf "| %d short processes | %d | %.1f | %.2f |\n", n, t, s, 100 * t / hz / s }'
before=$(cpu_ticks "$DAEMON")
sleep "$IDLE"
after=$(cpu_ticks "$DAEMON")
awk -v t="$((after - before))" -v s="$IDLE" -v hz="$TICKS" \
    'BEGIN { printf "| idle | %d | %.1f | %.2f |\n", t, s, 100 * t / hz / s }'
stop_daemon
echo "loadavg after: $(cat /proc/loadavg)" >&2
