#!/usr/bin/env bash
# cargo's runner for x86_64-pc-windows-gnu (scripts/windows.sh sets it): runs a Windows .exe under
# Wine, with the bcryptprimitives.dll stand-in beside it (Wine 8 lacks ProcessPrng, which Rust's
# std needs; Windows looks for DLLs in the program's folder first).
set -euo pipefail
exe=$1
deps=${CORETUNE_WINDOWS_DEPS:?scripts/windows.sh sets CORETUNE_WINDOWS_DEPS}
dir=$(dirname "$exe")
[[ -f $dir/bcryptprimitives.dll ]] || cp "$deps/bcryptprimitives.dll" "$dir/"
exec /usr/lib/wine/wine64 "$@"
