#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over every non-test source, using build/compile_commands.json.
# Fails on any finding. Run after scripts/build.sh has configured build/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${SHOAL_JOBS:-$(nproc)}"
mapfile -t files < <(git ls-files -co --exclude-standard -- 'shoal/*.cc' | grep -v '_test\.cc$' | sort -u)
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 4 clang-tidy -p build --quiet 2> >(grep -v -E '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter|^$' >&2)
