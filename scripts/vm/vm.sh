#!/usr/bin/env bash
# Simulated multi-socket machines for live tests: a QEMU guest (TCG) with a chosen CPU/NUMA
# topology boots Debian's kernel with a busybox initramfs holding coretune, hwloc's tools and the
# test programs, runs a payload and powers off. Adapted from the project's verified recipe.
#
#   scripts/vm/vm.sh kernel            fetch Debian's kernel (.deb unpacked, nothing installed),
#                                      cached in $KERNEL_DIR (default $WORK/kernel); prints the
#                                      vmlinuz path
#   scripts/vm/vm.sh initrd [FILE.sh]  build $WORK/initrd.cpio.gz: busybox, coretune ($CORETUNE)
#                                      and the pinning library beside it,
#                                      hwloc's tools, the programs in programs/ and the pin
#                                      tests' threads.c (gcc -fopenmp),
#                                      every payload in payloads/ and the FILEs given
#   scripts/vm/vm.sh boot NAME         boot payload NAME's topology, run it, power off; the console
#                                      goes to stdout and $WORK/NAME.log
#   scripts/vm/vm.sh run NAME|FILE.sh  kernel + initrd + boot in one go
#   scripts/vm/vm.sh shell [NAME|FILE.sh]  boot that payload's topology (default: smt's) with a
#                                      shell on the console instead of running it; the payload is
#                                      /payloads/NAME.sh in the guest. `exit` powers off, Ctrl-A X
#                                      quits QEMU
#
# A payload is a busybox sh script in payloads/ (or any FILE.sh) whose `#@` line gives the
# topology as shell assignments: sockets, cores (per socket), threads (per core), nodes (NUMA
# nodes, CPUs split evenly in CPU order), mem (MiB, split evenly), dist ("A,B,VAL ..." NUMA
# distances, mirrored), append (extra kernel arguments), timeout (seconds). It sources
# /lib/vm/lib.sh for `check NAME CMD...`, which prints one JSON line per check.
#
# Environment: WORK (default target/vm in the repository), CORETUNE (default
# target/release/coretune), KERNEL (a vmlinuz to use instead of fetching one), TIMEOUT (overrides
# the payload's), ACCEL (default tcg, one host thread for all vCPUs; KVM is not used: on some
# hosts it cannot boot a stock kernel), CPU (default max,vendor=GenuineIntel: SMT under TCG needs an Intel vendor), VERBOSE
# (set: the kernel's boot messages on the console too).
#
# The guest prints `VM-BEGIN` before the payload and `VM-DONE rc=N` after it; every console line
# is prefixed with the host time since boot. A guest that has not printed VM-BEGIN after
# BOOT_TIMEOUT seconds (default 150), or is still running after the timeout, is killed and the
# script exits with status 124.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
WORK=${WORK:-$repo/target/vm}
CORETUNE=${CORETUNE:-$repo/target/release/coretune}
mkdir -p "$WORK"

die() { echo "vm.sh: $*" >&2; exit 2; }

# Debian's kernel image: `apt-get download` of the package linux-image-amd64 depends on, then only
# ./boot/vmlinuz-* out of it. Cached; the .deb is not kept.
kernel() {
  if [[ -n "${KERNEL:-}" ]]; then
    [[ -f "$KERNEL" ]] || die "KERNEL=$KERNEL: no such file"
    echo "$KERNEL"; return
  fi
  local dir=${KERNEL_DIR:-$WORK/kernel} cached
  cached=$(ls "$dir"/vmlinuz-* 2>/dev/null | head -1 || true)
  if [[ -n "$cached" ]]; then echo "$cached"; return; fi
  command -v apt-get >/dev/null || die "no apt-get to fetch Debian's kernel: set KERNEL=/path/to/vmlinuz"
  local tmp; tmp=$(mktemp -d "$WORK/kernel.XXXXXX")
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [[ -z "$pkg" ]] || ! (cd "$tmp" && apt-get download -q "$pkg" >&2 2>/dev/null); then
    # The package lists may be missing or name a version the mirror no longer has.
    if [[ $(id -u) -eq 0 ]]; then
      apt-get update -qq >&2
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo apt-get update -qq >&2
    fi
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    [[ -n "$pkg" ]] || die "apt-cache knows no linux-image-amd64 (run apt-get update)"
    (cd "$tmp" && apt-get download -q "$pkg" >&2) || die "apt-get download $pkg failed"
  fi
  dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
  mkdir -p "$dir"
  mv "$tmp"/boot/vmlinuz-* "$dir"/
  rm -rf "$tmp"
  ls "$dir"/vmlinuz-* | head -1
}

# Copies a dynamically linked program and the libraries ldd lists, keeping their paths.
copy_with_libs() {
  local root=$1 src=$2 name=${3:-$(basename "$2")} bin lib
  bin=$(readlink -f "$src")
  install -D -m755 "$bin" "$root/bin/$name"
  ldd "$bin" 2>/dev/null | awk '/=> \//{print $3} /^[ \t]*\//{print $1}' | while read -r lib; do
    [[ -e "$root$lib" ]] || install -D -m755 "$(readlink -f "$lib")" "$root$lib"
  done
}

# Where a payload name or file is.
payload_file() {
  local p=$1
  if [[ -f "$p" ]]; then echo "$p"
  elif [[ -f "$here/payloads/$p.sh" ]]; then echo "$here/payloads/$p.sh"
  else die "no payload '$p' (payloads: $(cd "$here/payloads" && ls *.sh | sed 's/\.sh$//' | tr '\n' ' '))"
  fi
}

initrd() {
  [[ -x "$CORETUNE" ]] || die "$CORETUNE is not built (cargo build --release -p coretune, or set CORETUNE)"
  local busybox
  busybox=$(command -v busybox || true)
  [[ -n "$busybox" ]] || die "busybox is missing (apt-get install busybox-static)"
  local root=$WORK/root
  rm -rf "$root"
  mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,etc,lib/vm,payloads,usr/bin,usr/sbin}
  cp "$busybox" "$root/bin/busybox"
  local a
  for a in $("$busybox" --list); do [[ -e "$root/bin/$a" ]] || ln -s busybox "$root/bin/$a"; done
  copy_with_libs "$root" "$CORETUNE" coretune
  # The per-thread pinning library, where coretune looks for it: next to the binary.
  local pinlib; pinlib=$(dirname "$CORETUNE")/libcoretune_pin.so
  if [[ -f "$pinlib" ]]; then
    copy_with_libs "$root" "$pinlib"
  else
    echo "vm.sh: note: no $pinlib (cargo build --release -p coretune-pin): the guest has none" >&2
  fi
  for a in hwloc-calc hwloc-bind hwloc-distrib hwloc-info lstopo-no-graphics; do
    copy_with_libs "$root" "$(command -v "$a" || die "$a is missing (apt-get install hwloc-nox)")"
  done
  local src out
  mkdir -p "$WORK/programs"
  # Ours, and the pthreads program of the host's per-thread pinning tests (tests/pin.rs).
  for src in "$here"/programs/*.c "$repo"/crates/cli/tests/data/pin/threads.c; do
    out=$WORK/programs/$(basename "$src" .c)
    if [[ ! -x "$out" || "$src" -nt "$out" ]]; then
      gcc -O2 -Wall -Werror -fopenmp -pthread -o "$out" "$src" ||
        die "gcc -fopenmp $src failed (apt-get install gcc libgomp1)"
    fi
    copy_with_libs "$root" "$out"
  done
  # Open MPI (tune --launcher mpirun): mpirun and orted, the components it loads (with their
  # libraries) at the paths it was built for, its help texts and settings, and tests/mpi.rs's
  # ranks program built with mpicc -fopenmp. Left out where Open MPI is not installed.
  if command -v mpicc >/dev/null && command -v orterun >/dev/null; then
    copy_with_libs "$root" "$(command -v orterun)" mpirun
    copy_with_libs "$root" "$(command -v orted)" orted
    local lib plugin
    for plugin in /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
      [[ -e "$plugin" ]] || continue
      install -D -m755 "$plugin" "$root$plugin"
      ldd "$plugin" 2>/dev/null | awk '/=> \//{print $3}' | while read -r lib; do
        [[ -e "$root$lib" ]] || install -D -m755 "$(readlink -f "$lib")" "$root$lib"
      done
    done
    mkdir -p "$root/usr/share" "$root/etc"
    cp -r /usr/share/openmpi "$root/usr/share/"
    [[ -d /usr/share/pmix ]] && cp -r /usr/share/pmix "$root/usr/share/"
    cp -r /etc/openmpi "$root/etc/"
    out=$WORK/programs/ranks
    src=$repo/crates/cli/tests/data/mpi/ranks.c
    if [[ ! -x "$out" || "$src" -nt "$out" ]]; then
      mpicc -O2 -Wall -Werror -fopenmp -o "$out" "$src" || die "mpicc -fopenmp $src failed"
    fi
    copy_with_libs "$root" "$out"
  else
    echo "vm.sh: note: no Open MPI here (apt-get install openmpi-bin libopenmpi-dev): the guest has none" >&2
  fi
  cp "$here"/guest/init "$root/init"
  cp "$here"/guest/lib.sh "$root/lib/vm/lib.sh"
  cp "$here"/payloads/*.sh "$root/payloads/"
  local f
  for f in "$@"; do cp "$f" "$root/payloads/$(basename "$f" .sh).sh"; done
  chmod +x "$root/init" "$root"/payloads/*.sh
  # Root's files in the guest whoever builds it (rules watch refuses a rules file in a folder
  # another user owns).
  (cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet | gzip -1) > "$WORK/initrd.cpio.gz.tmp"
  mv "$WORK/initrd.cpio.gz.tmp" "$WORK/initrd.cpio.gz"
  echo "$WORK/initrd.cpio.gz"
}

# boot PAYLOAD [shell]: reads the payload's `#@` topology line and boots it.
boot() {
  local file name shell=${2:-}
  file=$(payload_file "$1")
  name=$(basename "$file" .sh)
  [[ -f "$WORK/initrd.cpio.gz" ]] || die "no initrd: run '$0 initrd' first"
  local sockets=1 cores=1 threads=1 nodes=1 mem=1024 dist="" append="" timeout=300
  eval "$(sed -n 's/^#@ //p' "$file")"
  local ncpu=$((sockets * cores * threads))
  (( ncpu % nodes == 0 )) || die "$name: $ncpu CPUs do not split evenly over $nodes nodes"
  local per=$((ncpu / nodes)) memper=$((mem / nodes)) numa=() i d
  for ((i = 0; i < nodes; i++)); do
    numa+=(-object "memory-backend-ram,id=m$i,size=${memper}M"
           -numa "node,nodeid=$i,cpus=$((i * per))-$((i * per + per - 1)),memdev=m$i")
  done
  for d in $dist; do
    IFS=, read -r a b v <<<"$d"
    numa+=(-numa "dist,src=$a,dst=$b,val=$v")
  done
  # Single-threaded TCG: with a host thread per vCPU (thread=multi), QEMU 7.2 guests stalled for
  # good now and then during `bench membw` (RCU: "kthread starved", a vCPU stuck at an int3 of
  # the kernel's code patching); measured on a loaded 2-CPU host, 1 run in 5 to 10 hung, with
  # -cpu ...,-monitor and lapic=notscdeadline too. One thread: none in 25 runs, and it boots
  # faster where the host has 2 CPUs anyway.
  local accel=${ACCEL:-tcg}
  [[ "$accel" == tcg ]] && accel="tcg,thread=single"
  local kernel; kernel=$(kernel)
  local quiet="quiet loglevel=1"
  [[ -n "${VERBOSE:-}" ]] && quiet=""
  # No lockup detectors (a busy host stalls vCPUs) and no mitigations (slow under TCG). The TSC is
  # left to the clocksource watchdog: under load TCG's TSC runs fast against the guest's timers.
  local cmdline="console=ttyS0 $quiet panic=-1 oops=panic no_timer_check nowatchdog"
  cmdline+=" mitigations=off $append"
  local serial=(-serial stdio) input=/dev/null
  if [[ -n "$shell" ]]; then
    cmdline+=" vm.shell=1"; serial=(-serial mon:stdio); input=/dev/stdin
  else
    cmdline+=" vm.payload=$name"
  fi
  local log=$WORK/$name.log pidfile=$WORK/$name.pid t0=${EPOCHREALTIME/./} rc=0
  local limit=${TIMEOUT:-$timeout} boot_limit=${BOOT_TIMEOUT:-150}
  [[ -n "$shell" ]] && limit=${TIMEOUT:-0}  # a shell: no time limit
  echo "vm.sh: $name: $sockets sockets x $cores cores x $threads threads, $nodes NUMA nodes," \
    "${mem} MiB, ${dist:+distances $dist, }timeout $([[ $limit == 0 ]] && echo none || echo "${limit}s")" \
    "(${boot_limit}s to boot)" >&2
  rm -f "$pidfile" "$log"
  # A guest that has not reached VM-BEGIN after boot_limit seconds is stuck booting: kill it then
  # rather than at the payload's timeout.
  (
    sleep "$boot_limit"
    if ! grep -q 'VM-BEGIN' "$log" 2>/dev/null && [[ -s "$pidfile" ]]; then
      echo "vm.sh: $name: no VM-BEGIN after ${boot_limit}s: killing the guest" >&2
      kill "$(cat "$pidfile")" 2>/dev/null
    fi
  ) </dev/null >/dev/null 2>&1 &
  local watchdog=$!
  set +e
  # --foreground: QEMU stays in the caller's process group, so that whoever ends the caller's
  # group (make test ends the VM tests so, Ctrl-C included) ends the guest too; by default
  # timeout makes a group of its own, and a guest outlived an interrupted run until its limit.
  timeout --foreground --kill-after=10 "$limit" qemu-system-x86_64 -accel "$accel" -machine q35 \
    -cpu "${CPU:-max,vendor=GenuineIntel}" -m "$((memper * nodes))" \
    -smp "$ncpu,sockets=$sockets,cores=$cores,threads=$threads" "${numa[@]}" \
    -kernel "$kernel" -initrd "$WORK/initrd.cpio.gz" -append "$cmdline" \
    -nographic -nodefaults "${serial[@]}" -no-reboot -pidfile "$pidfile" <"$input" 2>&1 |
    while IFS= read -r l; do
      e=$(( ${EPOCHREALTIME/./} - t0 ))
      printf '[%4d.%02d] %s\n' $((e / 1000000)) $((e % 1000000 / 10000)) "${l%$'\r'}"
    done | tee "$log"
  rc=${PIPESTATUS[0]}
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  set -e
  local e=$(( ${EPOCHREALTIME/./} - t0 )) why=""
  if ! grep -q 'VM-BEGIN' "$log"; then why=" (did not boot)"
  elif ! grep -q 'VM-DONE' "$log"; then why=" (killed at the ${limit}s timeout)"
  fi
  printf 'vm.sh: %s: host wall %d.%02d s, qemu status %s%s\n' "$name" $((e / 1000000)) \
    $((e % 1000000 / 10000)) "$rc" "$why" | tee -a "$log" >&2
  [[ -z "$why" ]] || return 124
  return "$rc"
}

main() {
  local cmd=${1:-} p extra
  shift || true
  case $cmd in
    kernel) kernel ;;
    initrd) initrd "$@" >/dev/null && echo "$WORK/initrd.cpio.gz" ;;
    boot) [[ $# -eq 1 ]] || die "usage: vm.sh boot NAME"; boot "$1" ;;
    run|shell)
      p=${1:-smt}
      extra=()
      [[ -f "$p" ]] && extra=("$p")
      kernel >/dev/null
      initrd "${extra[@]}" >/dev/null
      boot "$p" "$([[ $cmd == shell ]] && echo shell)"
      ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
  esac
}

# One line, read whole before it runs: editing this file while a guest runs cannot derail it.
main "$@"; exit $?
