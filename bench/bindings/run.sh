#!/usr/bin/env bash
# pybind11 against nanobind for shoal's bindings (docs/python.md, "pybind11, not nanobind";
# docs/benchmarks.md): the same four functions (a no-op, a float32 array sum without copy,
# strings converted one by one, a C++ loop calling a Python callable with the GIL taken per call)
# built with scikit-build-core into one virtualenv each, then timed pinned to one core.
#   bench/bindings/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/shoal-bindings.XXXXXX")
trap 'rm -rf "$work"' EXIT
for lib in pb nb; do
  dep=pybind11
  [[ $lib == nb ]] && dep=nanobind
  python3 -m venv "$work/venv-$lib"
  "$work/venv-$lib/bin/pip" install --quiet scikit-build-core "$dep" numpy
  cp -r "$here/$lib" "$work/src-$lib"
  start=$(date +%s.%N)
  "$work/venv-$lib/bin/pip" install --quiet --no-build-isolation "$work/src-$lib"
  echo "$dep: build $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"
  taskset -c 0 "$work/venv-$lib/bin/python" "$here/bench.py" "${lib}mod"
done
