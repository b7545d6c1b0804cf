#!/usr/bin/env bash
# Prints the path of the TensorFlow 2.15 virtualenv's python, creating or updating the virtualenv
# first when bench/compare/requirements-tf.txt changed since it was last installed (a stamp file
# holds the hash of the requirements it was built from), so repeated calls are instant and do no
# network access. Modelled on scripts/python-env.sh, with its own virtualenv: TF 2.15 needs
# numpy < 2, which the test virtualenv's TensorFlow does not accept.
#
#   py=$(bench/compare/tf-env.sh) && "$py" bench/compare/tf_estimator_ctr.py --help
#
# Environment: SHOAL_TF_VENV  where the virtualenv lives (default ~/.cache/shoal/venv-tf215)
#              SHOAL_PYTHON   the interpreter to build it from (default /usr/bin/python3 when
#                             present, else python3; TF 2.15 needs Python 3.9 to 3.11 and the
#                             venv module: Debian's python3 needs the python3-venv package)
# Installs are quiet; pip's output goes to <venv>.log and its tail is shown on failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requirements=$here/requirements-tf.txt
venv=${SHOAL_TF_VENV:-${HOME:-/tmp}/.cache/shoal/venv-tf215}
default_python=python3
[[ -x /usr/bin/python3 ]] && default_python=/usr/bin/python3
base_python=${SHOAL_PYTHON:-$default_python}
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
    echo "tf-env: installing TensorFlow 2.15 into $venv (about 600 MB; log: $log)" >&2
    if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c '' 2>/dev/null; then
      rm -rf "$venv"
      if ! "$base_python" -m venv "$venv" >"$log" 2>&1; then
        cat "$log" >&2
        echo "tf-env: '$base_python -m venv' failed (on Debian: apt-get install python3-venv)" >&2
        exit 1
      fi
    fi
    rm -f "$stamp"
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r "$requirements" >>"$log" 2>&1; then
      tail -n 30 "$log" >&2
      echo "tf-env: pip install failed; see $log" >&2
      exit 1
    fi
    echo "$want" >"$stamp"
  fi
  exec 9>&-
fi
echo "$venv/bin/python"
