#!/usr/bin/env bash
# Builds coretune for Windows (x86_64-pc-windows-gnu) on Debian/Ubuntu and runs its tests under
# Wine: the project's copy of the recipe in the shared notes (windows-wine.md).
#
#   scripts/windows.sh build     target/x86_64-pc-windows-gnu/release/coretune.exe (make windows)
#   scripts/windows.sh test      the workspace's tests for Windows, run under Wine (make test-windows):
#                                build-tests, then run-tests
#   scripts/windows.sh build-tests   set-up and the tests' build only (target/windows/)
#   scripts/windows.sh run-tests     the tests under Wine, and coretune.exe checked from Linux
#   scripts/windows.sh env       prints the environment the other two use, for `eval`
#   scripts/windows.sh cargo ARGS...   any cargo command with that environment
#
# What it sets up, once (all of it is skipped when already there):
#   - Debian packages: rustc-web, cargo-web and rust-web-src (Debian's Rust 1.96 with its own
#     source: std for the Windows target is built from it with -Zbuild-std, since rustup cannot
#     add targets here and no other std source matches that compiler), gcc-mingw-w64-x86-64-posix
#     (the linker and C compiler), wine64 and wine (the runner), dpkg-dev (apt-get source);
#     installed with apt-get as root or with password-less sudo, or the exact command is printed;
#   - hwloc 2.9 for mingw: Debian's own hwloc source package (a deb-src entry for the release is
#     added when missing), cross-compiled as a static library into target/windows-deps/hwloc
#     (hwlocality links it statically: the .exe needs no hwloc DLL);
#   - a Wine prefix in target/windows-deps/wine (created once; about 700 MB) and, because Wine 8
#     lacks bcryptprimitives.dll's ProcessPrng (Rust's std >= 1.78 needs it), a stand-in DLL
#     built from the few lines below, copied beside every .exe cargo builds (Windows looks for
#     DLLs in the program's folder first), so that an .exe runs from its target folder under any
#     Wine prefix, a fresh one included. Real Windows has the DLL; the stand-in is not shipped.
#
# A user on Windows does not need any of this: see the README's Windows section (cargo with the
# x86_64-pc-windows-msvc or -gnu toolchain and hwloc from its official Windows build or vcpkg).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=x86_64-pc-windows-gnu
DEPS=$ROOT/target/windows-deps
HWLOC=$DEPS/hwloc
export WINEPREFIX=${WINEPREFIX:-$DEPS/wine}

packages=(rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64-posix wine64 wine dpkg-dev bzip2 make)

as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo "$@"
  else
    echo "windows: needs root for: $*" >&2
    echo "windows: run it yourself, then run this again" >&2
    exit 1
  fi
}

install_packages() {
  local missing=() p status
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return
  echo "windows: installing ${missing[*]}" >&2
  if [[ $(id -u) -ne 0 ]] && ! { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
    echo "windows: missing packages: ${missing[*]}. Run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >&2
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Debian's hwloc source, for the release this machine runs.
hwloc_source() {
  local dir=$DEPS/src
  if compgen -G "$dir/hwloc_*.orig.tar.bz2" >/dev/null; then
    return
  fi
  mkdir -p "$dir"
  if ! (cd "$dir" && apt-get source --download-only hwloc >/dev/null 2>&1); then
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "windows: adding a deb-src entry for $codename (Debian's hwloc source package)" >&2
    as_root tee /etc/apt/sources.list.d/coretune-deb-src.sources >/dev/null <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    as_root apt-get update -qq >&2
    (cd "$dir" && apt-get source --download-only hwloc >/dev/null)
  fi
}

build_hwloc() {
  [[ -f $HWLOC/lib/liblibhwloc.a && -f $HWLOC/lib/pkgconfig/hwloc.pc ]] && return
  hwloc_source
  local tarball build
  tarball=$(compgen -G "$DEPS/src/hwloc_*.orig.tar.bz2" | head -1)
  build=$(mktemp -d)
  echo "windows: cross-compiling $(basename "$tarball") for mingw (once; about a minute)" >&2
  tar -xjf "$tarball" -C "$build"
  if ! (
    cd "$build"/hwloc-*
    ./configure --host=x86_64-w64-mingw32 --prefix="$HWLOC" --enable-static --disable-shared \
      --disable-cairo --disable-libxml2 --disable-io --disable-opencl --disable-cuda \
      --disable-nvml --disable-rsmi --disable-levelzero --disable-gl --disable-libudev \
      --disable-pci --disable-plugin-dlopen --disable-plugin-ltdl
    # The library, its headers and hwloc.pc; hwloc's own tools are not needed.
    make -j"$(nproc)" -C hwloc
    make -C hwloc install
    make -C include install
    install -D -m 644 hwloc.pc "$HWLOC/lib/pkgconfig/hwloc.pc"
    # hwlocality-sys declares `#[link(name = "libhwloc")]` on Windows (the name of hwloc's MSVC
    # import library), which GNU ld looks for as liblibhwloc.a: the same archive. Its symbols are
    # resolved from libhwloc.a already (pkg-config's static `-lhwloc`), so nothing links twice.
    ln -sf libhwloc.a "$HWLOC/lib/liblibhwloc.a"
  ) >"$DEPS/hwloc-build.log" 2>&1; then
    tail -20 "$DEPS/hwloc-build.log" >&2
    echo "windows: building hwloc for mingw failed (log: $DEPS/hwloc-build.log)" >&2
    exit 1
  fi
  rm -rf "$build"
}

# The stand-in for Wine 8's missing bcryptprimitives.dll!ProcessPrng.
build_bcryptprimitives() {
  local dll=$DEPS/bcryptprimitives.dll
  [[ -f $dll ]] && return
  mkdir -p "$DEPS"
  cat >"$DEPS/bcryptprimitives.c" <<'C'
/* ProcessPrng, which Wine 8.0 lacks and Rust's std calls for random numbers: the system RNG. */
#include <windows.h>
#include <bcrypt.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
C
  x86_64-w64-mingw32-gcc -O2 -shared -o "$dll" "$DEPS/bcryptprimitives.c" -lbcrypt
}

wine_prefix() {
  [[ -f $WINEPREFIX/system.reg ]] && return
  echo "windows: creating the Wine prefix $WINEPREFIX (once)" >&2
  mkdir -p "$WINEPREFIX"
  WINEDEBUG=-all /usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1 || true
  # Windows 10 rather than Wine's default of 7: what coretune is for, and what the version
  # coretune records says.
  WINEDEBUG=-all /usr/lib/wine/wine64 reg add 'HKCU\Software\Wine' /v Version /d win10 /f \
    >/dev/null 2>&1 || true
  /usr/lib/wine/wineserver -w 2>/dev/null || true
}

# Puts the stand-in DLL beside every .exe of a target folder (default target/; the runner below
# does it per run).
place_dll() {
  local dir
  for dir in "${1:-$ROOT/target}/$TARGET"/{debug,release}{,/deps,/examples}; do
    [[ -d $dir ]] && cp -u "$DEPS/bcryptprimitives.dll" "$dir/"
  done
  return 0
}

environment() {
  cat <<EOF
export PATH=/usr/bin:\$PATH
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$ROOT/scripts/windows-runner.sh
export PKG_CONFIG_ALLOW_CROSS=1 PKG_CONFIG_PATH=$HWLOC/lib/pkgconfig
export WINEPREFIX=$WINEPREFIX WINEDEBUG=-all
export CORETUNE_WINDOWS_DEPS=$DEPS
# insta finds the workspace with \`cargo metadata\`, which a Windows test program cannot run.
export INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no
EOF
}

setup() {
  install_packages
  build_hwloc
  build_bcryptprimitives
  wine_prefix
}

# The workspace's tests built for Windows, in a target folder of their own (target/windows):
# one debug build, which the checks from Linux in run_tests also run (coretune.exe and the probe
# program, the one example the tests start; the pool's examples are built on Linux). The
# optimised pass and the benches (not built here) run on Linux; a second, release build for
# Windows took 7 of make test's minutes and checked nothing the debug one does not.
# What is left out on Windows, and why: the README. A folder of its own because make test builds
# this beside the Linux test pass (scripts/idle-lane.sh), whose cargo holds target/'s locks.
TESTS_TARGET_DIR=$ROOT/target/windows

# build_tests and run_tests each hold this lock while they run, so that in make test, where
# the build runs in the idle lane, run_tests waits for it (its set-up steps would otherwise race
# with the build's: two hwloc builds into one folder, two wineboots in one prefix).
lock_tests() {
  mkdir -p "$DEPS"
  exec {lock}>"$DEPS/tests.lock"
  flock "$lock"
}

build_tests() {
  lock_tests
  install_packages
  # The Wine prefix (45 s of wineboot, one CPU) is made while hwloc and the tests build.
  wine_prefix &
  local prefix=$!
  build_hwloc
  build_bcryptprimitives
  (
    eval "$(environment)"
    CARGO_TARGET_DIR=$TESTS_TARGET_DIR cargo build --locked -Zbuild-std=std,panic_abort \
      --target $TARGET --workspace --lib --bins --tests --example probe
  )
  wait "$prefix" || { echo "windows: creating the Wine prefix failed" >&2; exit 1; }
  [[ -f $WINEPREFIX/system.reg ]] || { echo "windows: no Wine prefix in $WINEPREFIX" >&2; exit 1; }
  place_dll "$TESTS_TARGET_DIR"
  echo "windows: built the tests in $TESTS_TARGET_DIR/$TARGET/debug" >&2
}

# Runs what build_tests built (building what is missing), under Wine; waits for a build_tests
# that is running.
run_tests() {
  lock_tests
  install_packages
  wine_prefix
  build_hwloc
  build_bcryptprimitives
  place_dll "$TESTS_TARGET_DIR"
  # One wineserver for every test process, kept up between them: by default it exits 3 s
  # after its last client, and a test started just then failed with "wine client error:0:
  # recvmsg: Connection reset by peer" (seen once in 119 doc tests). Ended on the way out.
  trap '/usr/lib/wine/wineserver -k 2>/dev/null || true' EXIT
  /usr/lib/wine/wineserver -p
  (
    eval "$(environment)"
    # Unit and integration tests; not the doc tests: their examples use no platform code
    # (the Linux pass runs them), and one Wine process each took 90 s.
    CARGO_TARGET_DIR=$TESTS_TARGET_DIR cargo test --locked -Zbuild-std=std,panic_abort \
      --target $TARGET --workspace --tests "$@"
  )
  # The coretune.exe just built, run under Wine by a Linux test (this machine's own
  # toolchain, not the cross one): topo against the Linux build's, run, bench, tune, watch.
  # Optimised, as make test's Linux pass builds it (so in make test it is built already).
  WINEPREFIX=$WINEPREFIX WINEDEBUG=-all \
    cargo test --locked --release -p coretune --test cli windows_wine:: -- --ignored
  /usr/lib/wine/wineserver -k 2>/dev/null || true
}

cmd=${1:-build}
shift || true
case $cmd in
  env)
    environment
    ;;
  build)
    setup
    (
      eval "$(environment)"
      cargo build --locked --release -Zbuild-std=std,panic_abort --target $TARGET -p coretune "$@"
    )
    place_dll
    echo "windows: built target/$TARGET/release/coretune.exe" >&2
    ;;
  build-tests)
    build_tests
    ;;
  run-tests)
    run_tests "$@"
    ;;
  test)
    build_tests
    run_tests "$@"
    ;;
  cargo)
    setup
    eval "$(environment)"
    cargo "$@"
    place_dll
    ;;
  *)
    echo "usage: scripts/windows.sh build|test|build-tests|run-tests|env|cargo ARGS..." >&2
    exit 2
    ;;
esac
