#!/usr/bin/env bash
# The main job: installs dependencies, builds, and trains a real model on real data, printing its
# metrics: examples/fashion_mnist (a DNN on Debian's dataset-fashion-mnist, 3 epochs, then the
# test-set evaluation and an export), through the Estimator and in-process parameter servers.
# Extra arguments go to `shoal train` (e.g. --set run.max_steps=200; see `build/shoal train --help`).
# The model directory (MODEL_DIR, default /tmp/shoal/fashion_mnist) starts empty each run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh shoal
model_dir="${MODEL_DIR:-/tmp/shoal/fashion_mnist}"
rm -rf "$model_dir"
exec build/shoal train examples/fashion_mnist/config.yaml --model-dir "$model_dir" "$@"
