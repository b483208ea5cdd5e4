#!/usr/bin/env bash
# tests/layering.sh cannot be fooled: in a scratch copy of the sources, each kind of escape that
# once passed it (issue 33's list) is injected alone, and the check must fail naming it; the copy
# as it is must pass.
#
#   tests/layering_escapes.sh SOURCE_DIR LINKS_FILE
set -u
src=$(cd "${1:?usage: layering_escapes.sh SOURCE_DIR LINKS_FILE}" && pwd)
links=$(realpath "${2:?usage: layering_escapes.sh SOURCE_DIR LINKS_FILE}")
check="$src/tests/layering.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail=0

fresh() {  # a clean copy of what the check reads
  rm -rf "$scratch/src"
  mkdir -p "$scratch/src/docs"
  for d in core sim verify exec api python cli bench fuzz; do cp -r "$src/$d" "$scratch/src/$d"; done
  cp "$src/docs/architecture.md" "$scratch/src/docs/"
  cp "$links" "$scratch/links.txt"
}

# expect NAME PATTERN [LINKS]: the check fails, printing PATTERN.
expect() {
  local name=$1 pattern=$2 l=${3-$scratch/links.txt} out
  out=$(bash "$check" "$scratch/src" "$l" 2>&1)
  if [ $? = 0 ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "NOT CAUGHT: $name (wanted a failure naming \"$pattern\"); the check said:"
    echo "$out" | head -5
    fail=1
  else
    echo "caught: $name"
  fi
}

fresh
if ! bash "$check" "$scratch/src" "$scratch/links.txt" >/dev/null; then
  echo "the untouched copy fails the check"
  bash "$check" "$scratch/src" "$scratch/links.txt" | head
  exit 1
fi

printf '#include "../verify/verify.hpp"\n' >"$scratch/src/sim/escape.cpp"
expect "a relative include across layers" 'sim/escape.cpp:1: includes "verify/verify.hpp"'
fresh
printf '#include <sim/sim.hpp>\n' >"$scratch/src/sim/escape.cpp"
expect "an angle include of our own folder" 'sim/escape.cpp:1: includes <sim/sim.hpp> with angle brackets'
fresh
printf '#include "exec/executor/executor.hpp"  // for Executor<T>\n' >"$scratch/src/sim/escape.cpp"
expect "a comment with an angle bracket after the include" 'sim/escape.cpp:1: includes "exec/executor/executor.hpp"'
fresh
printf '#include "exec/executor/executor.hpp"\n' >"$scratch/src/sim/escape.h"
expect "a .h file" 'sim/escape.h:1: includes "exec/executor/executor.hpp"'
fresh
printf '#include "exec/executor/executor.hpp"\n' >"$scratch/src/fuzz/escape.cpp"
expect "fuzz/" 'fuzz/escape.cpp:1: includes "exec/executor/executor.hpp"'
fresh
mkdir -p "$scratch/src/core/newfolder"
printf '#include "sim/sim.hpp"\n' >"$scratch/src/core/newfolder/a.cpp"
expect "a new core/ subfolder" 'core/newfolder/a.cpp: no layering rule for its folder'
fresh
mkdir -p "$scratch/src/newtop"
printf 'int x;\n' >"$scratch/src/newtop/a.cpp"
expect "a new top-level source folder" 'newtop/a.cpp: a source file in a folder'
fresh
sed -i 's/^stepgraph_sim: stepgraph_core;/stepgraph_sim: stepgraph_core;stepgraph_verify;/' "$scratch/links.txt"
expect "an extra link (sim on verify)" 'CMake: stepgraph_sim links stepgraph_verify'
fresh
sed -i 's/^stepgraph_api: stepgraph_core;/stepgraph_api: stepgraph_core;stepgraph_exec;/' "$scratch/links.txt"
expect "an extra link (api on exec)" 'CMake: stepgraph_api links stepgraph_exec'
fresh
printf 'stepgraph_newlib: stepgraph_core\n' >>"$scratch/links.txt"
expect "a library target the table does not list" 'CMake: stepgraph_newlib is not in'
fresh
expect "a missing links file" 'the links file' "$scratch/no-such-links.txt"
fresh
expect "no links file given" 'the links file' ""

[ $fail = 0 ] && echo "layering escapes: every one caught"
exit $fail
