#!/bin/sh
# 4 sockets x 8 cores x 2 threads, 4 NUMA nodes with non-default distances: the topology and its
# distance matrix, CPU sets across sockets and nodes, spread placement (hwloc-distrib's answer)
# and where its threads run (OpenMP, and pthreads placed one by one by the pinning library).
#@ sockets=4 cores=8 threads=2 nodes=4 mem=4096 dist="0,1,12 0,2,21 0,3,31 1,2,17 1,3,26 2,3,14" timeout=400
. /lib/vm/lib.sh

machine
for loc in numa:3 package:2.core:5 core:17 pu:63 'all ~numa:0' numa:1.pu:even; do
  both $loc
done
check "place spread" coretune place --json --policy spread --threads 8
check "hwloc-distrib --single 8" hwloc-distrib --single 8
check "run spread" coretune run --place spread --threads 8 -- where 1
check "pin spread" coretune run --place spread --threads 8 -- threads 8 300
# Memory policies (run --mem): the policy the kernel shows on the program's mappings and the
# nodes its pages are on (/proc/self/numa_maps of the program started with it).
check "mem bind" coretune run --mem bind:numa:2 -- grep -E 'heap|stack' /proc/self/numa_maps
check "mem interleave" coretune run --mem interleave:numa:1-2 -- grep -E 'heap|stack' /proc/self/numa_maps
check "mem near" coretune run --cpus numa:3 --mem bind -- grep -E 'heap|stack' /proc/self/numa_maps
# tune --mem: each configuration's runs start with its policy; each run leaves its numa_maps
# in a file named by its policy ({mem}), read back here.
check "tune mem" sh -c "coretune tune --threads 1 --place os --mem 'bind:numa:2,interleave:numa:1-2' --exhaustive --runs 1 --warmup 0 --quiet --out /tmp/tune-mem --shell -- \"grep -E 'heap|stack' /proc/self/numa_maps > '/tmp/maps-{mem}'\" >/dev/null && cd /tmp && grep -H . maps-*"
# tune --instances with --mem local: 4 copies at once, one per NUMA node (hwloc-distrib's split);
# each copy writes, from inside, the CPUs the kernel lets it use and its mappings' policy and
# pages ({instance} names its file).
check "tune instances" sh -c "coretune tune --instances 4 --threads 2 --place os --cpus all --mem local --exhaustive --runs 1 --warmup 0 --quiet --out /tmp/tune-inst --shell -- \"(grep Cpus_allowed_list /proc/self/status; grep -E 'heap|stack' /proc/self/numa_maps) > '/tmp/inst-{instance}'\" >/dev/null && cd /tmp && grep -H . inst-*"
# tune --mem on a built-in workload: membw's workers set the policy for their own threads before
# they first touch their arrays. Its big anonymous mappings (the 32 MiB arrays: 8192 pages and
# more), read from outside while the sweep runs, have their pages on node 2 only.
membw_pages() {
  coretune tune membw --mib 32 --threads 2 --place os --cpus all --mem bind:numa:2 --runs 4 --warmup 0 --quiet --out /tmp/tune-mem-membw >/dev/null &
  _m=$!
  : >/tmp/membw-maps
  while kill -0 "$_m" 2>/dev/null; do
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^anon=/ && substr($i, 6) + 0 >= 8192) print }' \
      "/proc/$_m/numa_maps" >>/tmp/membw-maps 2>/dev/null
    sleep 0.2
  done
  wait "$_m" || return 1
  sort -u /tmp/membw-maps
}
check "tune mem membw" membw_pages
