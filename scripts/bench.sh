#!/usr/bin/env bash
# Builds and runs the Google Benchmark programs on one core; figures go to docs/benchmarks.md by
# hand, with the machine and the date. Not part of scripts/test.sh: speed is measured here only.
#   scripts/bench.sh                    all benchmarks
#   scripts/bench.sh embedding_bench    one program (extra args go to it, e.g. --benchmark_filter=)
#   scripts/bench.sh cluster_throughput bench/cluster_throughput.sh (extra args: [--pinned] ROWS RUNS)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
# A fresh configure picks up OpenBLAS for gemm_bench if it was just installed.
if [[ -f build/CMakeCache.txt ]] && ! grep -q 'OPENBLAS_LIBRARY:FILEPATH=/' build/CMakeCache.txt; then
  cmake -S . -B build >/dev/null
fi
all=(crc32c_bench gemm_bench nn_bench optim_bench embedding_bench text_parse_bench example_bench
     feature_bench pipeline_bench ps_rpc_bench cluster_throughput)
if (($#)); then progs=("$1"); shift; else progs=("${all[@]}"); fi
# cluster_throughput is a script (bench/cluster_throughput.sh) that runs the shoal binary.
scripts/build.sh "${progs[@]/#cluster_throughput/shoal}"
# One thread everywhere; Debian's OpenBLAS misdetects AMD EPYC guests without a core type:
# SkylakeX (its AVX-512 kernels, the fastest of those tried) where the CPU has AVX-512, else
# Haswell (AVX2 + FMA), since the AVX-512 kernels would fault there.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  if grep -qw avx512f /proc/cpuinfo; then OPENBLAS_CORETYPE=SkylakeX; else OPENBLAS_CORETYPE=Haswell; fi
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_CORETYPE
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores, $(date -u +%F)"
for p in "${progs[@]}"; do
  echo "== $p"
  if [[ $p == cluster_throughput ]]; then
    SHOAL_BIN=build/shoal bench/cluster_throughput.sh "$@"
    continue
  fi
  # Single-core figures are pinned to core 0; the pipeline's own threads get every core, as do
  # the gRPC client and servers of ps_rpc_bench (a PS and a worker on one machine).
  pin=(taskset -c 0)
  [[ $p == pipeline_bench || $p == ps_rpc_bench ]] && pin=()
  "${pin[@]}" "build/bench/$p" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true "$@"
done
