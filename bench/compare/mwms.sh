#!/usr/bin/env bash
# shoal's `run.strategy: all_reduce` against TensorFlow 2.15's MultiWorkerMirroredStrategy (Keras
# model.fit) on the same CTR rows, 2 trainers each over loopback (issue 21). One command:
#
#   bench/compare/mwms.sh [--rows N] [--rounds R] [-- mwms.py options]
#
#   --rows N    training rows of `shoal gen-data ctr --seed 1` (default 200,000, in 4 files, and a
#               held-out file of N/4 rows)
#   --rounds R  rounds of TF then shoal, back to back (default 2); the report gives every round
#
# The models: bench/compare/tf_mwms_ctr.py (the Keras wide & deep of the TensorFlowOnSpark story:
# linear over DenseFeatures with FTRL, DenseFeatures -> BatchNormalization -> Dense(128, relu) ->
# Dense(1) with Adagrad) and bench/compare/shoal_ctr_wide_deep_128.yaml. Both are evaluated on the
# held-out file by the exact AUC of their predictions (bench/compare/ctr_model.py).
# TensorFlow 2.15 comes from its virtualenv (bench/compare/tf-env.sh, ~600 MB the first time).
# SHOAL_BIN names the shoal binary (default build/shoal); SHOAL_COMPARE_WORK the directory for data
# and runs (default: a new temporary directory, printed). Nothing is pinned: each side's two
# processes need both cores. The load average is printed at the start and the end.
set -euo pipefail
cd "$(dirname "$0")/../.."

rows=200000
rounds=2
extra=()
while (($#)); do
  case "$1" in
    --rows) rows="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "mwms.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

tf_python="$(bench/compare/tf-env.sh)"
bin="${SHOAL_BIN:-build/shoal}"
[[ -x "$bin" ]] || { echo "mwms.sh: $bin is not an executable shoal binary (cmake --build build --target shoal)" >&2; exit 1; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
work="${SHOAL_COMPARE_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/shoal-mwms.XXXXXX")}"
mkdir -p "$work"

echo "date: $(date -u '+%F %T UTC'); checkout $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) vCPU"
echo "shoal: $bin (sha256 $(sha256sum "$bin" | cut -c1-16))"
echo "tensorflow: $("$tf_python" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null)"
echo "command: bench/compare/mwms.sh --rows $rows --rounds $rounds${extra[*]:+ -- ${extra[*]}}"
echo "uptime at start: $(uptime)"
"$tf_python" bench/compare/mwms.py --shoal-bin "$bin" --tf-python "$tf_python" --work "$work" \
  --rows "$rows" --rounds "$rounds" "${extra[@]}"
echo "uptime at end: $(uptime)"
echo "runs and logs: $work" >&2
