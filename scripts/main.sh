#!/usr/bin/env bash
# The main job: installs dependencies, builds, and trains a real model on real data, printing its
# metrics. Today: an MLP (784-256-10) on Fashion-MNIST (Debian's dataset-fashion-mnist), 3 epochs.
# Extra arguments go to `shoal quickstart` (see `build/shoal quickstart --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh shoal
exec build/shoal quickstart "$@"
