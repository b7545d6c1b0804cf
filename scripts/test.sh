#!/usr/bin/env bash
# Runs every check CI runs, on a fresh machine too: installs dependencies, checks formatting and
# layering, builds, runs clang-tidy and all tests (ctest), then the multi-threaded tests again
# under ThreadSanitizer. The first run also installs the Python test packages (TensorFlow as the
# tf.train.Example peer) into ~/.cache/shoal/venv.
#   scripts/test.sh            everything
#   SHOAL_SKIP_TSAN=1 scripts/test.sh   skip the ThreadSanitizer pass (faster local loop)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
jobs="${SHOAL_JOBS:-$(nproc)}"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1  # ccache hits across clones (see build.sh)

scripts/install-deps.sh

echo "== format"
scripts/format.sh --check

echo "== build"
scripts/build.sh

echo "== clang-tidy"
scripts/tidy.sh

# Every test runs under a fresh TMPDIR: tests write only inside their own temporary directories
# (gtest's TempDir, pytest's tmp_path, mktemp all follow TMPDIR), so nothing that an earlier run
# or an example left in /tmp can make a test pass. Kept when a check fails, for its files.
test_tmp=$(mktemp -d "${TMPDIR:-/tmp}/shoal-test.XXXXXX")
export TMPDIR="$test_tmp"
trap 'echo "test files kept in $test_tmp" >&2' ERR
echo "== tests (TMPDIR=$TMPDIR)"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600

if [[ -z "${SHOAL_SKIP_TSAN:-}" ]]; then
  echo "== tests under ThreadSanitizer (label: concurrency)"
  if [[ ! -f build-tsan/build.ninja ]]; then
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHOAL_SANITIZE=thread \
      -DSHOAL_BUILD_BENCH=OFF >/dev/null
  fi
  # Build only the test binaries that carry the concurrency label.
  targets=$(ctest --test-dir build -N -L concurrency | sed -n 's/^ *Test *#[0-9]*: //p')
  if [[ -n "$targets" ]]; then
    ninja -C build-tsan --quiet -j "$jobs" $targets
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L concurrency --timeout 600
  fi
fi
if [[ -z "${SHOAL_SKIP_FUZZ:-}" ]]; then
  echo "== fuzzing (30 s per target; SHOAL_SKIP_FUZZ=1 skips)"
  scripts/fuzz.sh 30
fi
rm -rf "$test_tmp"
echo "== all checks passed in $(( $(date +%s) - start ))s"
