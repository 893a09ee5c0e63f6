#!/usr/bin/env bash
# Checks that every line of C++ changed since the project adopted .clang-format is formatted by it (untouched
# code is left as it was). Prints the changes clang-format wants and exits 1 when there are any.
# Usage: scripts/check_format.sh [--fix]   (--fix: formats those lines in place)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base="$(git log --diff-filter=A --format=%H -- .clang-format | tail -n 1)"
if [[ -z "$base" ]] || ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  if ! git cat-file -e "HEAD~1^{commit}" 2>/dev/null; then
    echo "[format] this clone has no history to compare with (shallow): nothing checked" >&2
    exit 0
  fi
  echo "[format] the commit that added .clang-format is not in this clone (shallow?): checking the last commit only" >&2
  base="HEAD~1"
fi
paths=('src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'bench/*.h' 'fuzz/*.cpp' 'fuzz/*.h')
# -M: a moved file counts only its changed lines. clang-format-diff formats the changed line ranges of the diff.
diff_of_changes() { git diff -M -U0 --no-color "$base" -- "${paths[@]}"; }
if [[ "${1:-}" == "--fix" ]]; then
  diff_of_changes | clang-format-diff -p1 -i
  exit 0
fi
wanted="$(diff_of_changes | clang-format-diff -p1)"
if [[ -n "$wanted" ]]; then
  printf '%s\n' "$wanted"
  echo "[format] the lines above, changed since $(git rev-parse --short "$base"), are not as .clang-format wants:" \
    "run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "[format] every line changed since $(git rev-parse --short "$base") is formatted" >&2
