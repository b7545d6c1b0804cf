#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over every non-test source, using build/compile_commands.json.
# Fails on any finding. Results are cached per file under ~/.cache/shoal/tidy, keyed by the file,
# the repository headers it includes (directly or not) and .clang-tidy (scripts/tidy_keys.py), so
# an unchanged tree costs nothing on a reused machine and a changed header re-checks only the
# sources that include it.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${SHOAL_JOBS:-$(nproc)}"
cache="${SHOAL_TIDY_CACHE:-$HOME/.cache/shoal/tidy}"
mkdir -p "$cache"
mapfile -t files < <(git ls-files -co --exclude-standard -- 'shoal/*.cc' | grep -v '_test\.cc$' | sort -u)
todo=()
while IFS= read -r entry; do
  [[ -f "$cache/${entry##*:}" ]] || todo+=("$entry")
done < <(for f in "${files[@]}"; do [[ -f "$f" ]] && echo "$f"; done | python3 scripts/tidy_keys.py)
echo "clang-tidy: ${#todo[@]} of ${#files[@]} files to check (others cached)"
((${#todo[@]})) || exit 0
check_one() {
  local f="${1%%:*}" key="${1##*:}" out
  if out=$(clang-tidy -p build --quiet "$f" 2>&1); then
    touch "$2/$key"
  else
    printf '%s\n' "$out" | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated' >&2
    return 1
  fi
}
export -f check_one
printf '%s\n' "${todo[@]}" | xargs -P "$jobs" -I{} bash -c 'check_one "$1" "$2"' _ {} "$cache"
