# Sourced by the benchmark scripts: a cgroup allowed one CPU's worth of time (cpu.max
# "100000 100000" on cgroup v2, cpu.cfs_quota_us = cpu.cfs_period_us on v1), and how a command
# is started in it. make_quota_cgroup sets CGROUP (or says why not and fails);
# remove_quota_cgroup removes it; launch runs "$@" inside it when one is set.

CGROUP=
make_quota_cgroup() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "(not root: no quota condition; run as root to create the cgroup)" >&2
    return 1
  fi
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    CGROUP=/sys/fs/cgroup/coretune-bench-$$
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
      echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    mkdir "$CGROUP"
    echo "100000 100000" >"$CGROUP/cpu.max"
  elif [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    CGROUP=/sys/fs/cgroup/cpu/coretune-bench-$$
    mkdir "$CGROUP"
    echo 100000 >"$CGROUP/cpu.cfs_period_us"
    echo 100000 >"$CGROUP/cpu.cfs_quota_us"
  else
    echo "(no cgroup cpu controller found: no quota condition)" >&2
    return 1
  fi
}

remove_quota_cgroup() {
  if [ -n "$CGROUP" ]; then
    rmdir "$CGROUP" 2>/dev/null || true
    CGROUP=
  fi
}

# Runs "$@", inside the quota cgroup when one is set.
launch() {
  if [ -n "$CGROUP" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$CGROUP" "$@"
  else
    "$@"
  fi
}
