#!/usr/bin/env bash
# Builds and installs the shoal Python package (python/: `pip install ./python`) into the
# package's test virtualenv, ~/.cache/shoal/venv-python (scripts/requirements-python.txt), and
# prints that virtualenv's python. Incremental: scikit-build-core keeps its CMake build in
# build-python/, and ccache shares objects with build/ (same flags), so a second run with no
# change takes seconds.
#   py=$(scripts/python-package.sh) && "$py" -c 'import shoal.compat.v1 as tf'
# SHOAL_JOBS sets the build parallelism (default: all cores). Build output goes to
# build-python/pip.log, shown on failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SHOAL_VENV="${HOME:-/tmp}/.cache/shoal/venv-python"
export SHOAL_REQUIREMENTS="$root/scripts/requirements-python.txt"
py=$("$root/scripts/python-env.sh")
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
export CMAKE_BUILD_PARALLEL_LEVEL="${SHOAL_JOBS:-$(nproc)}"
mkdir -p "$root/build-python"
log="$root/build-python/pip.log"
# One install at a time (ctest -j may start several package tests).
exec 8>"$root/build-python/.lock"
flock 8
if ! "$py" -m pip install --no-build-isolation --no-deps --disable-pip-version-check \
  "$root/python" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "python-package: pip install ./python failed; see $log" >&2
  exit 1
fi
echo "$py"
