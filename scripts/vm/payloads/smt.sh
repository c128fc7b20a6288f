#!/bin/sh
# 2 sockets x 4 cores x 2 threads, 2 NUMA nodes: topology, CPU sets, placement and its
# enforcement (run, run --pid, per-thread pinning, bench, watch), memory placement, the rules
# daemon, then a cgroup-v2 cpuset and quota.
#@ sockets=2 cores=4 threads=2 nodes=2 mem=2048 timeout=300
. /lib/vm/lib.sh

machine
for loc in package:1 numa:0 numa:1.core:1-2 core:5 pu:3 core:odd l3:1 'all ~pu:0' 'package:0 ~core:1'; do
  both $loc
done

# Threads land where planned: one OpenMP place per thread, bound close.
for p in spread:6 cores:4 compact:5; do
  check "place ${p%:*}" coretune place --json --policy "${p%:*}" --threads "${p#*:}"
  check "run ${p%:*}" coretune run --place "${p%:*}" --threads "${p#*:}" -- where 1
done
# A CPU set applies to every thread, as hwloc-bind's does.
check "run core:3" coretune run --cpus core:3 --threads 3 -- where 0.5
check "hwloc-bind core:3" env OMP_NUM_THREADS=3 hwloc-bind core:3 -- where 0.5
both core:3

# Rebinding a running program and all its threads.
rebind() {
  OMP_NUM_THREADS=4 where -s 1 > /tmp/where.out &
  pid=$!
  sleep 1
  coretune run --cpus numa:1.core:2-3 --pid "$pid" || return
  hwloc-bind --get --pid "$pid" > /tmp/hwloc-get.out
  kill -USR1 "$pid"
  wait "$pid"
  cat /tmp/where.out
}
check "run --pid" rebind
check "run --pid hwloc-bind --get" cat /tmp/hwloc-get.out
both numa:1.core:2-3

# Per-thread pinning of a program coretune did not write (pthreads, no OpenMP: only the preloaded
# library can place its threads one by one): thread k in creation order on place k, wrapping
# around past the last place; with --bind core each on its PU's whole core; and re-pinning the
# threads of a running program one by one.
check "pin spread" env CORETUNE_PIN_DEBUG=1 coretune run --place spread --threads 6 -- threads 6 300
check "pin cores 9" coretune run --place cores --threads 4 -- threads 9 300
check "place cores 4 core" coretune place --json --policy cores --threads 4 --bind core
check "pin cores core" coretune run --place cores --threads 4 --bind core -- threads 4 300
repin() {
  OMP_NUM_THREADS=4 where -s 1 > /tmp/where.out &
  pid=$!
  sleep 1
  coretune run --pid "$pid" --place spread --threads 4 || return
  kill -USR1 "$pid"
  wait "$pid"
  cat /tmp/where.out
}
check "run --pid --place" repin

# Pool workers' first victims on this machine: nearest first (SMT sibling, then the same node).
check "place compact 16" coretune place --json --policy compact --threads 16

# Built-in workloads place their own workers: each worker's CPUs match the plan.
for p in compact spread cores; do
  check "place $p 4" coretune place --json --policy $p --threads 4
  check "bench $p" coretune bench raymesh --threads 4 --place $p --runs 1 --warmup 0 --rays 4000 --json
done

# watch on a program pinned to two CPUs.
check watch coretune watch --json --interval 50 -- coretune run --cpus 4-5 --threads 2 -- where 1.5

# Memory placement: each membw worker first-touches its own part of the arrays, so with one worker
# per node (spread) the pages split over both nodes and with both on node 0 (compact) they stay
# there. The largest sample of /proc/PID/numa_maps during the run, summed per node, in pages.
numa_pages() {
  coretune bench membw --threads 2 --place "$1" --runs 2 --warmup 0 --mib 32 --json > /tmp/membw.json &
  pid=$!
  best=""
  while kill -0 "$pid" 2>/dev/null; do
    sample=$(awk '/anon=/ { for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), kv, "="); n[kv[1]] += kv[2]; t += kv[2] } }
      END { printf "%d", t; for (k in n) printf " N%s=%d", k, n[k] }' "/proc/$pid/numa_maps" 2>/dev/null)
    [ "${sample%% *}" -gt "${best%% *}" ] 2>/dev/null || [ -z "$best" ] && best=$sample
    sleep 0.1
  done
  wait "$pid"
  echo "$best"
}
check "numa_maps spread" numa_pages spread
check "numa_maps compact" numa_pages compact

# The rules daemon as root, on the kernel's process-event connector: a program started after it
# gets one core of node 1 per thread, in creation order (the threads it has when the daemon gets
# to it, and any it creates later).
rules_daemon() {
  mkdir -p /etc/coretune
  printf '[[rule]]\nname = "where: node 1, a core each"\nexe = "where"\ncpus = "numa:1"\npolicy = "cores"\n' \
    > /etc/coretune/rules.toml
  coretune rules watch /etc/coretune/rules.toml > /tmp/rules.out 2> /tmp/rules.err &
  daemon=$!
  i=0
  while ! grep -q 'watching process starts' /tmp/rules.err; do
    i=$((i + 1))
    [ $i -lt 300 ] || { echo "rules watch did not start" >&2; kill $daemon; return 1; }
    sleep 0.1
  done
  OMP_NUM_THREADS=4 where -s 1 > /tmp/where.out &
  pid=$!
  sleep 2
  kill -USR1 "$pid"
  wait "$pid"
  kill -TERM "$daemon"
  wait "$daemon"
  cat /tmp/where.out
}
check "rules watch" rules_daemon
check "rules watch log" cat /tmp/rules.out
check "rules watch stderr" cat /tmp/rules.err
check "place cores numa:1" coretune place --json --policy cores --cpus numa:1 --threads 8

# A cgroup-v2 cpuset (CPUs 4-11, across both nodes) and a quota of 2.5 CPUs.
mkdir -p /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
echo "+cpuset +cpu" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/box
echo 4-11 > /sys/fs/cgroup/box/cpuset.cpus
echo "250000 100000" > /sys/fs/cgroup/box/cpu.max
sh -c '
  echo $$ > /sys/fs/cgroup/box/cgroup.procs
  . /lib/vm/lib.sh
  check "cgroup topo" coretune topo --json
  check "cgroup cpus all" coretune cpus --to hwloc all
  check "cgroup hwloc-calc all" hwloc-calc all
  check "cgroup place" coretune place --json --policy spread --threads 4
  check "cgroup run" coretune run --place spread --threads 4 -- where 0.5
'
# tune --launcher mpirun (where the host has Open MPI, vm.sh puts it in the guest): 2 ranks × 4
# OpenMP threads of tests/mpi.rs's ranks program, each thread saying from inside where it may
# run. mpirun needs a loopback, a host name and, with no ssh here, its single-node launcher.
if command -v mpirun >/dev/null; then
  ifconfig lo 127.0.0.1 up
  hostname guest
  check "tune mpirun" env OMPI_MCA_plm=isolated coretune tune --launcher mpirun --instances 2 --threads 4 --place spread --cpus all --runs 1 --warmup 0 --quiet --show-output --out /tmp/mpi -- ranks
fi
