#!/usr/bin/env bash
# The main job: installs dependencies, builds, and trains a real model on real data on a local
# cluster, printing its metrics: examples/fashion_mnist (a DNN on Debian's dataset-fashion-mnist,
# 3 epochs) with `shoal launch` -- 2 parameter servers, the chief and 1 worker as processes over
# gRPC on loopback -- then the test-set evaluation and an export.
# Extra arguments go to `shoal launch` (e.g. --workers 2, --set run.max_steps=200; see
# `build/shoal launch --help`). The model directory (MODEL_DIR, default /tmp/shoal/fashion_mnist)
# starts empty each run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh shoal
model_dir="${MODEL_DIR:-/tmp/shoal/fashion_mnist}"
rm -rf "$model_dir"
exec build/shoal launch examples/fashion_mnist/config.yaml --ps 2 --workers 1 \
  --model-dir "$model_dir" "$@"
