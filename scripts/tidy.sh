#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over every non-test source, using build/compile_commands.json.
# Fails on any finding. Results are cached per file under ~/.cache/shoal/tidy, keyed by the file,
# every shoal header and .clang-tidy, so an unchanged tree costs nothing on a reused machine.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${SHOAL_JOBS:-$(nproc)}"
cache="${SHOAL_TIDY_CACHE:-$HOME/.cache/shoal/tidy}"
mkdir -p "$cache"
headers_key=$(cat .clang-tidy $(git ls-files -co --exclude-standard -- 'shoal/*.h' | sort) | sha256sum | cut -c1-16)
mapfile -t files < <(git ls-files -co --exclude-standard -- 'shoal/*.cc' | grep -v '_test\.cc$' | sort -u)
todo=()
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue
  key="$headers_key-$(sha256sum "$f" | cut -c1-16)"
  [[ -f "$cache/$key" ]] || todo+=("$f:$key")
done
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
