#!/bin/bash
# Stops the cluster scripts/slurm/local-start.sh DIR started: slurmd, slurmctld and munged, by
# the pid files in DIR (TERM, then KILL after 10 s).
#
#   scripts/slurm/local-stop.sh DIR
D=${1:?usage: local-stop.sh DIR}
for n in slurmd slurmctld munged; do
  p=$(cat "$D/$n.pid" 2>/dev/null) || continue
  kill "$p" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && kill -9 "$p"
  rm -f "$D/$n.pid"
done
exit 0
