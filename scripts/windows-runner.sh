#!/usr/bin/env bash
# cargo's runner for x86_64-pc-windows-gnu (scripts/windows.sh sets it): runs a Windows .exe under
# Wine, with the bcryptprimitives.dll stand-in beside it (Wine 8 lacks ProcessPrng, which Rust's
# std needs; Windows looks for DLLs in the program's folder first).
set -euo pipefail
exe=$1
deps=${CORETUNE_WINDOWS_DEPS:?scripts/windows.sh sets CORETUNE_WINDOWS_DEPS}
dir=$(dirname "$exe")
[[ -f $dir/bcryptprimitives.dll ]] || cp "$deps/bcryptprimitives.dll" "$dir/"
# Not passed on: the test programs look it up (assert_cmd's cargo_bin) and would try to start
# this script from inside Wine as if it were a Windows program.
unset CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER
exec /usr/lib/wine/wine64 "$@"
