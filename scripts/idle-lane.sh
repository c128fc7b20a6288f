#!/usr/bin/env bash
# Runs FOREGROUND while LANE runs beside it on CPU time that nothing else wants, then waits for
# LANE: make test's way to use the CPUs its test pass leaves idle (the tests sleep, wait for
# servers and guests) for work that times nothing — the Windows build, the loom models, the fuzz
# smoke run — without slowing the tests or disturbing what they measure.
#
#   scripts/idle-lane.sh LOG 'LANE COMMAND' FOREGROUND COMMAND...
#
# LANE runs with the lowest CPU and I/O priority there is: in a cgroup of its own in the cgroup
# v1 `cpu` hierarchy marked `cpu.idle` (its group is scheduled only when no other group wants a
# CPU, whatever session or cgroup the tests' processes are in) when that hierarchy is writable
# (root), and as SCHED_IDLE with the idle I/O class in any case. (SCHED_IDLE alone yields only to
# tasks of its own scheduling group: with autogroups, a test's program in a session or cpu
# cgroup of its own would share the CPUs with it half and half.) Its output goes to LOG and is
# printed when it ends; it is stopped when FOREGROUND fails or this script is interrupted. The
# exit status is FOREGROUND's if that failed, else LANE's.
set -uo pipefail

if [[ $# -lt 3 ]]; then
  echo "usage: scripts/idle-lane.sh LOG 'LANE COMMAND' FOREGROUND COMMAND..." >&2
  exit 2
fi
log=$1 lane_cmd=$2
shift 2
mkdir -p "$(dirname "$log")"

group=
v1=/sys/fs/cgroup/cpu
if [[ -w $v1/cgroup.procs && -d $v1 ]] && mkdir "$v1/coretune-idle-lane-$$" 2>/dev/null; then
  group=$v1/coretune-idle-lane-$$
  if ! echo 1 >"$group/cpu.idle" 2>/dev/null; then
    # Kernels before 5.15 have no cpu.idle: the smallest weight instead.
    echo 2 >"$group/cpu.shares"
  fi
fi

# The lane in a process group of its own (job control), so that it is stopped whole.
set -m
(
  [[ -n $group ]] && echo "$BASHPID" >"$group/cgroup.procs"
  exec chrt --idle 0 ionice -c3 bash -c "$lane_cmd"
) >"$log" 2>&1 &
lane=$!
set +m
echo "idle lane: '$lane_cmd' beside the tests (lowest CPU priority${group:+, cgroup $group}; log $log)" >&2

# Ends the lane's process group: TERM, and KILL what is left after 5 s. SIGPIPE ignored first:
# when make test is stopped, whatever read this script's output may be gone already, and a
# message written to it must not end this script before the lane is.
stop_lane() {
  trap '' PIPE
  kill -TERM -- "-$lane" 2>/dev/null
  local i
  for i in $(seq 50); do
    kill -0 -- "-$lane" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$lane" 2>/dev/null
  wait "$lane" 2>/dev/null
}
remove_group() {
  [[ -n $group ]] || return 0
  # Anything still in it is gone once the lane is; the folder goes too.
  local pid
  for pid in $(cat "$group/cgroup.procs" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$group" 2>/dev/null && return 0; sleep 0.2; done
  echo "idle lane: could not remove $group" >&2
}
trap 'stop_lane; remove_group; exit 130' INT TERM

"$@"
status=$?
if [[ $status -ne 0 ]]; then
  echo "idle lane: the tests failed (status $status): stopping the lane" >&2
  stop_lane
  remove_group
  exit "$status"
fi
echo "idle lane: the tests passed; waiting for '$lane_cmd'" >&2
wait "$lane"
lane_status=$?
remove_group
cat "$log"
if [[ $lane_status -ne 0 ]]; then
  echo "idle lane: '$lane_cmd' failed (status $lane_status; its output above, and in $log)" >&2
fi
exit "$lane_status"
