#!/usr/bin/env bash
# The Python package against the CLI on the CTR example (issue 19's target: the Python path at
# >= 95% of the CLI's examples/s). Both train the same wide & deep (examples/ctr/config.yaml and
# its twin examples/ctr/main.py: 3 epochs of 3 parts, shuffle buffer 20000), evaluate part 3 and
# export, in one process each; each is timed as a whole process (Python's start-up and imports
# included), alternating, RUNS times.
#   bench/python_overhead.sh [ROWS] [RUNS]      defaults: 1000000 rows (4 parts, as examples/ctr/run.sh), 3 runs
# Prints one line per run and the medians; results go in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${1:-1000000}"
runs="${2:-3}"
scripts/build.sh shoal >/dev/null
py=$(scripts/python-package.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/shoal-pybench.XXXXXX")
trap 'rm -rf "$work"' EXIT
build/shoal gen-data ctr --rows "$rows" --files 4 --max-vocabulary 1000 --seed 1 \
  --out "$work/data" >/dev/null
examples=$(( rows / 4 * 3 * 3 ))
cli=()
python=()
for ((i = 1; i <= runs; i++)); do
  rm -rf "$work/cli" "$work/py"
  start=$(date +%s.%N)
  build/shoal train examples/ctr/config.yaml --model-dir "$work/cli" \
    --set "input.train.files=[$work/data/part-00000.txt,$work/data/part-00001.txt,$work/data/part-00002.txt]" \
    --set "input.eval.files=[$work/data/part-00003.txt]" >"$work/cli.log" 2>&1
  end=$(date +%s.%N)
  c=$(python3 -c "print(f'{$examples / ($end - $start):.0f}')")
  auc_c=$(python3 -c "import json; print(round(json.load(open('$work/cli/summary.json'))['metrics']['auc'], 4))")
  start=$(date +%s.%N)
  "$py" examples/ctr/main.py "$work/data" "$work/py" >"$work/py.log" 2>&1
  end=$(date +%s.%N)
  p=$(python3 -c "print(f'{$examples / ($end - $start):.0f}')")
  auc_p=$(python3 -c "import json; print(round(json.loads(open('$work/py.log').read().strip().splitlines()[-1])['auc'], 4))")
  echo "run $i: cli $c ex/s (auc $auc_c), python $p ex/s (auc $auc_p)"
  cli+=("$c")
  python+=("$p")
done
python3 - "${cli[*]}" "${python[*]}" <<'PY'
import statistics, sys
cli = [float(x) for x in sys.argv[1].split()]
py = [float(x) for x in sys.argv[2].split()]
mc, mp = statistics.median(cli), statistics.median(py)
print(f"median: cli {mc:.0f} ex/s, python {mp:.0f} ex/s: python at {100 * mp / mc:.1f}% of the cli")
PY
