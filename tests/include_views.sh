#!/usr/bin/env bash
# The include views (cmake/IncludeViews.cmake) refuse at compile time what a layer may not
# include: each case preprocesses one include with the include path of one layer and expects it
# to be found, or to be missing ("No such file" naming it).
#
#   tests/include_views.sh CXX VIEWS_DIR   (VIEWS_DIR: the build's include_views folder)
set -u
cxx=${1:?usage: include_views.sh CXX VIEWS_DIR}
views=${2:?usage: include_views.sh CXX VIEWS_DIR}
fail=0
cases=0
# Away from the sources: a quoted include is looked for beside the including file first, which
# for standard input is the working folder.
cd "$(mktemp -d)" || exit 1
trap 'rmdir "$PWD"' EXIT

# try LAYERS HEADER: preprocess `#include "HEADER"` with the views LAYERS (comma-separated).
try() {
  local flags=() v
  IFS=, read -r -a layers <<<"$1"
  for v in "${layers[@]}"; do flags+=("-I$views/$v"); done
  printf '#include "%s"\n' "$2" | "$cxx" -std=c++20 -E -x c++ - -o /dev/null "${flags[@]}" 2>&1
}

# sees LAYERS HEADER: the header is found (whatever else it needs outside our folders).
sees() {
  cases=$((cases + 1))
  if try "$1" "$2" | grep -q "$2: No such file"; then
    echo "NOT FOUND: $2 with the views $1 (it should be)"
    fail=1
  fi
}

# refuses LAYERS HEADER: the header is not found.
refuses() {
  cases=$((cases + 1))
  if ! try "$1" "$2" | grep -q "$2: No such file"; then
    echo "NOT REFUSED: $2 with the views $1"
    fail=1
  fi
}

# core's layers, bottom up
sees core_base core/base/loc.hpp
refuses core_base core/dsl/ast.hpp
sees core_dsl core/dsl/ast.hpp
refuses core_dsl core/graph/step_graph.hpp
sees core_graph core/graph/step_graph.hpp
refuses core_graph core/interp/value.hpp
refuses core_graph core/pipeline.hpp
refuses core_graph core/msccl/program.hpp
refuses core_io core/msccl/program.hpp
refuses core_msccl core/io/writers.hpp
sees core_pipeline core/pipeline.hpp
refuses core_pipeline core/interp/run_check.hpp
sees core_interp core/interp/run_check.hpp
# the backends know core/ and themselves, never each other
sees sim,core core/interp/value.hpp
refuses sim,core verify/verdict.hpp
refuses sim,core exec/executor/executor.hpp
refuses sim,core api/api.hpp
refuses verify,core sim/sim.hpp
refuses verify,core exec/executor/values.hpp
refuses exec,core sim/sim.hpp
refuses exec,core exec/cuda/cuda_ops.hpp
refuses exec_cuda,core exec/executor/executor.hpp
refuses exec_cuda,core verify/verdict.hpp
# the library face: core, sim and verify, never exec or the command line
sees api,core,sim,verify sim/sim.hpp
refuses api,core,sim,verify exec/executor/executor.hpp
refuses api,core,sim,verify cli/commands.hpp
refuses cli,api,core,sim,verify,exec tests/test_util.hpp

echo "include views: $cases cases, $([ $fail = 0 ] && echo "all as the layers say" || echo "FAILED")"
exit $fail
