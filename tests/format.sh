#!/usr/bin/env bash
# Every C++ and CUDA source as .clang-format writes it. Skipped (exit 77) where clang-format 14,
# the version the style was applied with (Debian 12's), is not installed: other versions format
# some constructs differently.
set -u
cd "${1:?usage: format.sh SOURCE_DIR}" || exit 2
command -v clang-format >/dev/null || { echo "format: skipped (no clang-format)"; exit 77; }
clang-format --version | grep -q 'version 14\.' || { echo "format: skipped ($(clang-format --version); the style is clang-format 14's)"; exit 77; }
bad=$(find core sim verify exec api python cli bench tests -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
      xargs -0 clang-format --style=file --dry-run 2>&1 | grep -o '^[^:]*:[0-9]*:[0-9]*: warning' | cut -d: -f1 | sort -u)
if [ -n "$bad" ]; then
  echo "format: these files differ from .clang-format (run clang-format -i on them):"
  echo "$bad"
  exit 1
fi
echo "format: every source follows .clang-format"
