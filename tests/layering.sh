#!/usr/bin/env bash
# The layering rule (docs/architecture.md), checked on every source file and on the CMake link
# graph. A backend (sim/, verify/, exec/, exec/cuda/) knows only core/ and itself; nothing below
# cli/ includes cli/; core's own folders include only their own level and those under it.
#
#   tests/layering.sh SOURCE_DIR [LINKS_FILE]
#
# LINKS_FILE (written by tests/CMakeLists.txt at configure time) holds one line per library
# target: "TARGET: its direct link libraries". Exit 0 when every rule holds; else 1, with one
# line per broken rule (file:line: what it includes, and what that folder may include).
set -u
src=${1:?usage: layering.sh SOURCE_DIR [LINKS_FILE]}
links=${2:-}
cd "$src" || exit 2
bad=0

# The folders each folder may include (prefixes of the quoted include path).
allowed_for() {
  case "$1" in
    core/base/*) echo "core/base/" ;;
    core/dsl/*) echo "core/base/ core/dsl/" ;;
    core/graph/*) echo "core/base/ core/dsl/ core/graph/" ;;
    core/device/*) echo "core/base/ core/dsl/ core/graph/ core/device/" ;;
    core/io/*) echo "core/base/ core/dsl/ core/graph/ core/io/" ;;
    core/msccl/*) echo "core/base/ core/dsl/ core/graph/ core/msccl/" ;;
    core/pipeline.*) echo "core/base/ core/dsl/ core/graph/ core/io/ core/msccl/ core/pipeline.hpp" ;;
    core/interp/*) echo "core/base/ core/dsl/ core/graph/ core/io/ core/msccl/ core/pipeline.hpp core/interp/" ;;
    core/*) echo "core/" ;;
    sim/*) echo "core/ sim/" ;;
    verify/*) echo "core/ verify/" ;;
    exec/cuda/*) echo "core/ exec/cuda/" ;;
    exec/transport.*) echo "core/ exec/" ;;  # the one file of exec/ that opens exec/cuda
    exec/*) echo "core/ exec/" ;;
    api/*) echo "core/ sim/ verify/ api/" ;;
    python/*) echo "core/ sim/ verify/ api/" ;;
    bench/*) echo "core/ sim/ verify/ exec/ api/ bench/" ;;
    cli/*) echo "core/ sim/ verify/ exec/ api/ cli/" ;;
    *) echo "" ;;
  esac
}

while IFS= read -r f; do
  allowed=$(allowed_for "$f")
  [ -z "$allowed" ] && continue
  while IFS=: read -r line inc; do
    ok=0
    for a in $allowed; do
      case "$inc" in "$a"*) ok=1 ;; esac
    done
    # exec/ (but exec/transport.*) must not reach into exec/cuda/ although it is under exec/.
    case "$f:$inc" in exec/cuda/*) ;; exec/transport.*) ;; exec/*:exec/cuda/*) ok=0 ;; esac
    if [ $ok = 0 ]; then
      case "$f" in exec/cuda/* | exec/transport.*) extra="" ;; exec/*) extra=" (not exec/cuda/: only exec/transport.* opens it)" ;; *) extra="" ;; esac
      echo "$f:$line: includes \"$inc\"; it may include only: $allowed$extra"
      bad=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1:\2/' |
           grep -E ':(core|sim|verify|exec|api|python|cli|bench|tests)/')
done < <(find core sim verify exec api python cli bench -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)

# Link targets: a backend library links core (and its own dependencies), never another backend
# or the command line.
if [ -n "$links" ]; then
  while IFS= read -r l; do
    target=${l%%:*}
    libs=${l#*: }
    case "$target" in
      stepgraph_core) forbidden="stepgraph_sim stepgraph_verify stepgraph_exec stepgraph_transport stepgraph_cuda stepgraph_launch stepgraph_api" ;;
      stepgraph_sim) forbidden="stepgraph_verify stepgraph_exec stepgraph_transport stepgraph_cuda stepgraph_api" ;;
      stepgraph_verify) forbidden="stepgraph_sim stepgraph_exec stepgraph_transport stepgraph_cuda stepgraph_api" ;;
      stepgraph_api) forbidden="stepgraph_exec stepgraph_transport stepgraph_cuda stepgraph_launch" ;;
      stepgraph_exec) forbidden="stepgraph_sim stepgraph_verify stepgraph_cuda stepgraph_transport stepgraph_api" ;;
      stepgraph_cuda) forbidden="stepgraph_sim stepgraph_verify stepgraph_exec stepgraph_transport" ;;
      stepgraph_transport) forbidden="stepgraph_sim stepgraph_verify" ;;
      stepgraph_launch | stepgraph_attn_kernels) forbidden="stepgraph_core stepgraph_sim stepgraph_verify stepgraph_exec stepgraph_cuda" ;;
      *) forbidden="" ;;
    esac
    for x in $forbidden; do
      for y in ${libs//;/ }; do
        if [ "$y" = "$x" ]; then
          echo "CMake: $target links $x"
          bad=1
        fi
      done
    done
  done < "$links"
fi

if [ $bad = 0 ]; then echo "layering: every include and link follows docs/architecture.md"; fi
exit $bad
