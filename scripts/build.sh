#!/usr/bin/env bash
# Configures and builds shoal into build/ (Release-with-debug-info, Ninja, ccache when present).
#   scripts/build.sh [ninja targets...]
# SHOAL_JOBS sets the parallelism (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${SHOAL_JOBS:-$(nproc)}"
# Let ccache hit across clones in different directories (CI builds a fresh clone each run).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [[ ! -f build/build.ninja ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
echo "building ${*:-everything} in build/ with $jobs jobs" >&2
ninja -C build --quiet -j "$jobs" "$@"
