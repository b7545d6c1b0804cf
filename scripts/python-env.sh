#!/usr/bin/env bash
# Prints the path of the test virtualenv's python, creating or updating the virtualenv first when
# scripts/requirements-test.txt changed since it was last installed (a stamp file holds the hash
# of the requirements it was built from), so repeated calls are instant and do no network access.
#
#   py=$(scripts/python-env.sh) && "$py" -m pytest -q shoal/data/example_compat_test.py
#
# Environment: SHOAL_VENV  where the virtualenv lives (default ~/.cache/shoal/venv)
#              SHOAL_PYTHON the interpreter to build it from (default python3; needs the venv
#                           module: Debian's python3 needs the python3-venv package)
#              SHOAL_REQUIREMENTS the requirements file (default scripts/requirements-test.txt;
#                           bench/compare/tf-env.sh uses this script for TensorFlow 2.15, the
#                           Spark tests for scripts/requirements-spark.txt in venv-spark)
# Installs are quiet; pip's output goes to <venv>.log and its tail is shown on failure. Concurrent
# callers (ctest -j) are serialised with flock.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
requirements=${SHOAL_REQUIREMENTS:-$root/scripts/requirements-test.txt}
venv=${SHOAL_VENV:-${HOME:-/tmp}/.cache/shoal/venv}
base_python=${SHOAL_PYTHON:-python3}
stamp=$venv/.requirements.sha256
want=$(sha256sum "$requirements" | cut -d' ' -f1)

up_to_date() {
  [[ -x $venv/bin/python && -f $stamp && "$(cat "$stamp")" == "$want" ]] &&
    "$venv/bin/python" -c '' 2>/dev/null
}

if ! up_to_date; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
  if ! up_to_date; then  # another caller may have finished while we waited
    log=$venv.log
    echo "python-env: installing test requirements into $venv (log: $log)" >&2
    if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c '' 2>/dev/null; then
      rm -rf "$venv"
      if ! "$base_python" -m venv "$venv" >"$log" 2>&1; then
        cat "$log" >&2
        echo "python-env: '$base_python -m venv' failed (on Debian: apt-get install python3-venv)" >&2
        exit 1
      fi
    fi
    rm -f "$stamp"
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r "$requirements" >>"$log" 2>&1; then
      tail -n 30 "$log" >&2
      echo "python-env: pip install failed; see $log" >&2
      exit 1
    fi
    echo "$want" >"$stamp"
  fi
  exec 9>&-
fi
echo "$venv/bin/python"
