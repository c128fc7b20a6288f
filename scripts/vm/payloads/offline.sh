#!/bin/sh
# 2 sockets x 4 cores x 2 threads, 2 NUMA nodes, with CPUs taken offline inside the guest: first
# CPU 3 (CPU 2 keeps no SMT sibling), then CPU 0 too. Core numbering, CPU sets and placement
# against what the kernel says; the topology as XML for the corpus.
#@ sockets=2 cores=4 threads=2 nodes=2 mem=2048 append="cpu0_hotplug" timeout=300
. /lib/vm/lib.sh

# Every logical core index, from core:0 to one past the last.
cores() {
  for i in 0 1 2 3 4 5 6 7 8; do
    check "$1 cpus core:$i" coretune cpus --to list core:$i
  done
}

echo 0 > /sys/devices/system/cpu/cpu3/online
facts "cpu3 kernel"
check "cpu3 topo" coretune topo --json
check "cpu3 topo text" coretune topo --full
check "cpu3 xml" lstopo-no-graphics --of xml
check "cpu3 hwloc-calc core:1" hwloc-calc core:1
cores cpu3
check "cpu3 place cores" coretune place --json --policy cores --threads 8
check "cpu3 run cores" coretune run --place cores --threads 8 -- where 1

echo 0 > /sys/devices/system/cpu/cpu0/online
facts "cpu0 kernel"
check "cpu0 topo" coretune topo --json
check "cpu0 xml" lstopo-no-graphics --of xml
check "cpu0 cpus all" coretune cpus --to hwloc all
check "cpu0 hwloc-calc all" hwloc-calc all
check "cpu0 cpus numa:0" coretune cpus --to hwloc numa:0
check "cpu0 hwloc-calc numa:0" hwloc-calc numa:0
check "cpu0 cpus 0" coretune cpus 0
cores cpu0
check "cpu0 place compact" coretune place --json --policy compact --threads 4
check "cpu0 run compact" coretune run --place compact --threads 4 -- where 1
