#!/usr/bin/env bash
# clang-format over every C++ file in the repo.
#   scripts/format.sh           rewrite files in place
#   scripts/format.sh --check   fail (listing the files) if any file is not formatted
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.h' '*.cc' | sort -u)
if ((${#files[@]} == 0)); then exit 0; fi
if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if ((${#bad[@]})); then
    echo "not clang-formatted (run scripts/format.sh): ${bad[*]}" >&2
    exit 1
  fi
else
  clang-format -i "${files[@]}"
fi
