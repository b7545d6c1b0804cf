#!/usr/bin/env bash
# Prints the path of the TensorFlow 2.15 virtualenv's python, creating or updating it first when
# bench/compare/requirements-tf.txt changed (scripts/python-env.sh does the work, with its own
# virtualenv: TF 2.15 needs numpy < 2, which the test virtualenv's TensorFlow does not accept).
#
#   py=$(bench/compare/tf-env.sh) && "$py" bench/compare/tf_estimator_ctr.py --help
#
# Environment: SHOAL_TF_VENV  where the virtualenv lives (default ~/.cache/shoal/venv-tf215)
#              SHOAL_PYTHON   the interpreter to build it from (default /usr/bin/python3 when
#                             present, else python3: TF 2.15 needs Python 3.9 to 3.11)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
default_python=python3
[[ -x /usr/bin/python3 ]] && default_python=/usr/bin/python3
SHOAL_VENV=${SHOAL_TF_VENV:-${HOME:-/tmp}/.cache/shoal/venv-tf215} \
  SHOAL_PYTHON=${SHOAL_PYTHON:-$default_python} \
  SHOAL_REQUIREMENTS=$here/requirements-tf.txt \
  exec "$here/../../scripts/python-env.sh"
