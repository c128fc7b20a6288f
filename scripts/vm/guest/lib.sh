# Helpers for payloads (sourced as /lib/vm/lib.sh in the guest).
#
#   check NAME CMD...   runs CMD and prints one JSON line:
#                       {"check":NAME,"rc":STATUS,"s":SECONDS,"out":STDOUT,"err":STDERR}
#                       (killed after CHECK_TIMEOUT seconds, 60 unless set: rc 137, and STDERR
#                       says what its processes were doing)
#   facts NAME          a check of what the kernel says: online CPUs, each online CPU's package,
#                       core siblings and NUMA node, and the NUMA nodes' CPU lists
#   machine             the checks every machine gets: facts "kernel", "topo" (coretune topo
#                       --json) and "hwloc-counts" (hwloc-calc -N TYPE all, as "TYPE COUNT" lines)
#   both LOCATION...    coretune cpus and hwloc-calc on one location: checks "cpus LOCATION" and
#                       "hwloc-calc LOCATION", both printing an hwloc bitmap
#
# The host test (crates/cli/tests/vm.rs) reads these lines between VM-BEGIN and VM-DONE; adding a
# check is a `check` line here and an assertion there.

# stdin as a JSON string.
json_str() {
  awk 'BEGIN { ORS = ""; print "\""; for (i = 1; i < 32; i++) ctl[sprintf("%c", i)] = sprintf("\\u%04x", i) }
    {
      gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r")
      line = $0
      if (line ~ /[\001-\037]/) {
        line = ""
        for (i = 1; i <= length($0); i++) { c = substr($0, i, 1); line = line ((c in ctl) ? ctl[c] : c) }
      }
      print line "\\n"
    }
    END { print "\"" }'
}

# The processes whose parent is PID (busybox has no pgrep here).
children() {
  awk -v p="$1" '{ sub(/.*\) /, ""); if ($2 == p) { split(FILENAME, f, "/"); print f[3] } }' \
    /proc/[0-9]*/stat 2>/dev/null
}

# PID and every process under it, children first.
kill_tree() {
  for _c in $(children "$1"); do kill_tree "$_c"; done
  kill -KILL "$1" 2>/dev/null
}

# What a check still running at its timeout was doing: its processes and their threads' states
# and kernel wait channels.
stuck() {
  for _p in $(children "$1"); do stuck "$_p"; done
  for _t in /proc/"$1"/task/*; do
    echo "  pid $1 tid ${_t##*/} $(cut -d' ' -f2,3 "$_t/stat" 2>/dev/null) wchan $(cat "$_t/wchan" 2>/dev/null)"
  done
}

check() {
  _name=$1
  shift
  _t0=$(cut -d' ' -f1 /proc/uptime)
  # In the background with a watchdog: a check that hangs is killed after CHECK_TIMEOUT seconds
  # (default 60), saying what it was doing, and the payload goes on.
  "$@" >/tmp/.check.out 2>/tmp/.check.err &
  _pid=$!
  (
    sleep "${CHECK_TIMEOUT:-60}"
    { echo "check killed after ${CHECK_TIMEOUT:-60} s; its processes:"; stuck "$_pid"; } >>/tmp/.check.err
    kill_tree "$_pid"
  ) &
  _dog=$!
  wait "$_pid"
  _rc=$?
  kill_tree "$_dog"
  wait "$_dog" 2>/dev/null
  _s=$(awk -v t0="$_t0" '{ printf "%.2f", $1 - t0 }' /proc/uptime)
  printf '{"check":"%s","rc":%d,"s":%s,"out":%s,"err":%s}\n' "$_name" "$_rc" "$_s" \
    "$(json_str </tmp/.check.out)" "$(json_str </tmp/.check.err)"
}

# One line per online CPU: "cpu N PACKAGE THREAD_SIBLINGS NODE", then per NUMA node
# "node N CPULIST distances D0 D1 ...".
kernel_facts() {
  echo "online $(cat /sys/devices/system/cpu/online)"
  for d in /sys/devices/system/cpu/cpu[0-9]*; do
    [ -f "$d/topology/thread_siblings_list" ] || continue
    [ "$(cat "$d/online" 2>/dev/null || echo 1)" = 1 ] || continue
    node=$(ls -d "$d"/node[0-9]* 2>/dev/null | head -1)
    echo "cpu ${d##*/cpu} $(cat "$d/topology/physical_package_id") $(cat "$d/topology/thread_siblings_list") ${node##*/node}"
  done
  for n in /sys/devices/system/node/node[0-9]*; do
    echo "node ${n##*/node} $(cat "$n/cpulist") distances $(cat "$n/distance")"
  done
}

facts() {
  check "$1" kernel_facts
}

machine() {
  facts kernel
  check topo coretune topo --json
  check hwloc-counts sh -c 'for t in package numa l3cache core pu; do echo "$t $(hwloc-calc -N $t all)"; done'
}

both() {
  check "cpus $*" coretune cpus --to hwloc "$@"
  check "hwloc-calc $*" hwloc-calc "$@"
}
