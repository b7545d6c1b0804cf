#!/usr/bin/env bash
# shoal against TensorFlow's Estimator and PyTorch on the same CTR data and model, and against
# PyTorch on a Fashion-MNIST MLP (issue 6). One command:
#
#   bench/compare/run.sh [--rows N] [--runs R] [--quick] [-- compare.py options]
#
#   --rows N   training rows of the generated CTR data (default 1,000,000; 1/5 as many more
#              are generated as the held-out file)
#   --runs R   rounds; every peer runs once per round and the report gives medians (default 3)
#   --quick    50,000 rows, 1 round, 1 Fashion-MNIST epoch: to check the harness, not to quote
#   after --    passed to bench/compare/compare.py, e.g. --peers shoal,torch --torch-threads 2
#
# Installs what it needs: Debian's python3-torch and python3-pandas (scripts/install-deps.sh
# --compare), TensorFlow 2.15 in its own virtualenv (bench/compare/tf-env.sh, ~600 MB the first
# time). SHOAL_BIN names the shoal binary (default build/shoal, built by scripts/build.sh when
# missing); SHOAL_COMPARE_WORK the directory for data, runs and logs (default
# /tmp/shoal-compare; the data is reused when its shape matches). Prints the report and leaves it,
# with every run's JSON line and logs, in WORK/out-<time>/ (the path is printed).
set -euo pipefail
cd "$(dirname "$0")/../.."

rows=1000000
runs=3
quick=0
extra=()
while (($#)); do
  case "$1" in
    --rows) rows="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if ((quick)); then
  rows=50000
  runs=1
  extra=(--mnist-epochs 1 "${extra[@]}")
fi

scripts/install-deps.sh --compare
# Debian's OpenBLAS misdetects AMD EPYC guests without a core type: its AVX-512 kernels
# (SkylakeX, the fastest there) where the CPU has AVX-512, else its AVX2 + FMA ones (Haswell).
if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  else export OPENBLAS_CORETYPE=Haswell; fi
fi
tf_python="$(bench/compare/tf-env.sh)"
if [[ -z "${SHOAL_BIN:-}" ]]; then
  [[ -x build/shoal ]] || scripts/build.sh shoal
  bin=build/shoal
else
  bin="$SHOAL_BIN"
fi
[[ -x "$bin" ]] || { echo "run.sh: $bin is not an executable shoal binary" >&2; exit 1; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

work="${SHOAL_COMPARE_WORK:-/tmp/shoal-compare}"
out="$work/out-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
{
  echo "date: $(date -u)"
  echo "command: bench/compare/run.sh --rows $rows --runs $runs${extra[*]:+ -- ${extra[*]}}"
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "shoal: $bin (sha256 $(sha256sum "$bin" | cut -c1-16), modified $(date -u -r "$bin" '+%F %T UTC')); checkout at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "tensorflow python: $("$tf_python" -c 'import sys, numpy, tensorflow as tf; print(sys.version.split()[0], "tensorflow", tf.__version__, "numpy", numpy.__version__)' 2>/dev/null)"
  echo "torch python: $(/usr/bin/python3 -c 'import sys, numpy, pandas, torch; print(sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__, "pandas", pandas.__version__)')"
  echo "openblas: $(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo '?'), OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE}"
} | tee "$out/versions.txt" >&2

/usr/bin/python3 bench/compare/compare.py --rows "$rows" --runs "$runs" --shoal-bin "$bin" \
  --tf-python "$tf_python" --work "$work" --out "$out" "${extra[@]}"
/usr/bin/python3 bench/compare/report.py "$out" | tee "$out/report.md"
echo "runs, logs and report: $out" >&2
