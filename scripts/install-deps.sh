#!/usr/bin/env bash
# Installs what shoal needs on Debian 12, idempotently and quietly.
#   scripts/install-deps.sh            build + test dependencies (C++ libraries, tools, data set)
#   scripts/install-deps.sh --bench    also what the benchmarks compare against (OpenBLAS)
#   scripts/install-deps.sh --compare  also the PyTorch peer of bench/compare (Debian's
#                                      python3-torch, and python3-pandas to pre-parse its input)
# Only missing packages are installed; a machine that has them all does no network access.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config python3 python3-venv
  # the Python package's extension (pip install ./python): Python.h; scikit-build-core, pybind11
  # and numpy come from PyPI (scripts/requirements-python.txt)
  python3-dev
  clang-format clang-tidy
  # scripts/fuzz.sh: clang-14 and its runtimes (libFuzzer, ASan, UBSan: libclang-rt-14-dev)
  clang libclang-rt-14-dev
  libabsl-dev libeigen3-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev zlib1g-dev
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # shoal/collective: the all-reduce ring (Gloo over TCP; no CMake config, found by find_library)
  libgloo-dev
  # shoal/nn/gemm.h: libxsmm's JIT kernels for the dense layers' small matrix products
  libxsmm-dev
  # and oneDNN's sgemm, used for them on CPUs without AVX-512
  libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  # tests only: the HDFS minicluster (scripts/hdfs-minicluster.sh) and, with pyspark from PyPI,
  # the Spark standalone cluster (scripts/spark-cluster.sh)
  openjdk-17-jdk-headless maven
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libopenblas-dev)
fi
if [[ "${1:-}" == "--compare" ]]; then
  # OpenBLAS: without it Debian's torch runs its Linear layers on the reference BLAS (libblas3),
  # about 20x slower on this machine (5.7 against 125 GFLOP/s on a 128x784x256 product)
  packages+=(python3-torch python3-pandas libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
