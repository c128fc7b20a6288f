#!/usr/bin/env bash
# Makes sure the system packages coretune builds and tests against are present.
#
#   scripts/setup.sh          build needs: libhwloc-dev, libudev-dev, pkg-config
#   scripts/setup.sh --test   also what the tests use: hwloc-nox (hwloc-calc, hwloc-distrib and
#                             hwloc-gather-topology, the reference answers), gcc with libgomp
#                             (the OpenMP placement check), hyperfine (the timing cross-check),
#                             chromium (renders report.html headless in the browser test),
#                             slurmctld, slurmd, slurm-client and munge (the one-node Slurm
#                             cluster of the `tune --slurm` tests, scripts/slurm/),
#                             likwid (likwid-pin, the reference for per-thread pinning), libomp-dev
#                             (LLVM's OpenMP runtime), golang-go (builds Go programs with and
#                             without cgo for the pinning library's reach check),
#                             qemu-system-x86, busybox-static and cpio (the VM tests' guests:
#                             scripts/vm/vm.sh; it fetches Debian's kernel itself),
#                             sysbench (a benchmark that prints its own events/s, for tune
#                             --metric), nginx-light, wrk, redis-server and redis-tools (real
#                             servers and load generators for the server runs), openmpi-bin
#                             and libopenmpi-dev (mpirun and mpicc, for tune --launcher mpirun),
#                             numactl (the apply lines of memory policies are run as pasted),
#                             systemd (only its systemd-analyze: `verify` reads the apply lines'
#                             unit settings; nothing needs systemd running), time (/usr/bin/time:
#                             coretune's own peak memory while a program logs gigabytes)
#
# Installs what is missing with apt-get when running as root or with password-less sudo;
# otherwise stops and prints the exact command to run. Does nothing when all is present.
set -euo pipefail

packages=(libhwloc-dev libudev-dev pkg-config)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(hwloc-nox gcc libgomp1 hyperfine chromium likwid libomp-dev golang-go slurmctld slurmd slurm-client munge qemu-system-x86 busybox-static cpio sysbench nginx-light wrk redis-server redis-tools openmpi-bin libopenmpi-dev numactl systemd time)
fi

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
else
  # Not Debian/Ubuntu: check what the build actually needs and say it in that platform's terms.
  if ! pkg-config --exists 'hwloc >= 2.8' 2>/dev/null; then
    echo "coretune needs hwloc >= 2.8 with its development files and pkg-config" >&2
    echo "(Fedora: dnf install hwloc-devel systemd-devel pkgconf; Arch: pacman -S hwloc pkgconf)" >&2
    exit 1
  fi
  exit 0
fi

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "setup: missing packages: ${missing[*]}. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

if ! pkg-config --exists 'hwloc >= 2.8'; then
  echo "setup: libhwloc is older than 2.8 ($(pkg-config --modversion hwloc)); coretune needs 2.8+" >&2
  exit 1
fi
