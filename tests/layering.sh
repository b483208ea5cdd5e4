#!/usr/bin/env bash
# The layering rule (docs/architecture.md), checked on every source file and on the CMake link
# graph, as allow lists: a file's folder must have a rule, each include of ours must be one its
# rule allows, and each library target's links of ours must be those docs/architecture.md's
# target table gives it. A backend (sim/, verify/, exec/, exec/cuda/) knows only core/ and itself;
# nothing below cli/ includes cli/; core's own folders include only their own level and those
# under it.
#
#   tests/layering.sh SOURCE_DIR LINKS_FILE
#
# LINKS_FILE (written by tests/CMakeLists.txt at configure time) holds one line per library
# target: "TARGET: its direct link libraries"; a missing one is an error. Exit 0 when every rule
# holds; else 1, with one line per broken rule (file:line: what it includes, and what that folder
# may include). tests/layering_escapes.sh injects each kind of escape and expects this to fail.
#
# What counts as an include of ours: a quoted include naming one of our folders, or one that,
# resolved against the including file's folder ("../verify/verify.hpp"), lands on a file of one
# (checked as that file: a standalone program's "harness.h" beside it is bench/hand/'s); an angle
# include of our folders (<sim/sim.hpp>) is refused outright (the project's own headers are
# quoted). Every file under our folders is scanned, whatever its suffix, but data (schedules,
# seeds, dictionaries, Python, CMake and shell files) is skipped by name.
set -u
src=${1:?usage: layering.sh SOURCE_DIR LINKS_FILE}
links=${2:-}
cd "$src" || exit 2
bad=0
ours='core|sim|verify|exec|api|python|cli|bench|fuzz|tests'

# The folders each folder may include (prefixes of the include path, from the root). Empty: the
# folder has no rule, which is itself an error (a new folder must be added here and to
# docs/architecture.md).
allowed_for() {  # sets `allowed`
  case "$1" in
    core/base/*) allowed="core/base/" ;;
    core/dsl/*) allowed="core/base/ core/dsl/" ;;
    core/graph/*) allowed="core/base/ core/dsl/ core/graph/" ;;
    core/device/*) allowed="core/base/ core/dsl/ core/graph/ core/device/" ;;
    core/io/*) allowed="core/base/ core/dsl/ core/graph/ core/io/" ;;
    core/msccl/*) allowed="core/base/ core/dsl/ core/graph/ core/msccl/" ;;
    core/pipeline.*) allowed="core/base/ core/dsl/ core/graph/ core/io/ core/msccl/ core/pipeline.hpp" ;;
    core/interp/*) allowed="core/base/ core/dsl/ core/graph/ core/io/ core/msccl/ core/pipeline.hpp core/interp/" ;;
    core/*/*) allowed="" ;;  # a core/ folder without a rule
    core/*) allowed="core/" ;;
    sim/*) allowed="core/ sim/" ;;
    verify/*) allowed="core/ verify/" ;;
    exec/cuda/*) allowed="core/ exec/cuda/" ;;
    exec/transport.*) allowed="core/ exec/" ;;  # the one file of exec/ that opens exec/cuda
    exec/*) allowed="core/ exec/" ;;
    api/*) allowed="core/ sim/ verify/ api/" ;;
    python/*) allowed="core/ sim/ verify/ api/" ;;
    bench/*) allowed="core/ sim/ verify/ exec/ api/ bench/" ;;
    fuzz/*) allowed="core/ sim/ verify/ fuzz/" ;;
    cli/*) allowed="core/ sim/ verify/ exec/ api/ cli/" ;;
    tests/*) allowed="core/ sim/ verify/ exec/ api/ cli/ bench/ tests/" ;;
    *) allowed="" ;;
  esac
}

# Data, not code: never includes anything.
is_data() {
  case "$1" in
    *.cpp | *.hpp | *.h | *.c | *.cc | *.cu | *.cuh) return 1 ;;
    *.sched | *.xml | *.json | *.txt | *.md | *.py | *.sh | *.dict | *.cmake | */CMakeLists.txt | *.golden | *.err | *.out | *.csv | \
      *.in | *.svg | *.png | *.gp | *.toml | *.cfg | *.ini | *.yaml | *.yml | *.pyc | *.typed) return 0 ;;
    fuzz/seeds/* | fuzz/regressions/* | fuzz/compat/* | tests/golden/* | tests/cases/* | tests/data/* | python/stepgraph/*) return 0 ;;
  esac
  # Anything else that is not text (a binary seed) has no includes either.
  grep -Iq . "$1" 2>/dev/null || return 0
  return 1
}

while IFS= read -r f; do
  is_data "$f" && continue
  allowed_for "$f"
  if [ -z "$allowed" ]; then
    echo "$f: no layering rule for its folder (add one to tests/layering.sh and docs/architecture.md)"
    bad=1
    continue
  fi
  dir=${f%/*}
  while IFS= read -r hit; do
    line=${hit%%:*}
    rest=${hit#*:}
    rest=${rest#*include}
    rest=${rest#"${rest%%[![:space:]]*}"}  # what follows `include`: <…> or "…" (a comment after may hold either)
    case "$rest" in
      '<'*)
        inc=${rest#*<}
        inc=${inc%%>*}
        case "$inc" in
          core/* | sim/* | verify/* | exec/* | api/* | python/* | cli/* | bench/* | fuzz/* | tests/*)
            echo "$f:$line: includes <$inc> with angle brackets; our own headers are included with quotes, from the root"
            bad=1
            ;;
        esac
        continue
        ;;
    esac
    inc=${rest#*\"}
    inc=${inc%%\"*}
    case "$inc" in
      core/* | sim/* | verify/* | exec/* | api/* | python/* | cli/* | bench/* | fuzz/* | tests/*) ;;
      *)
        # Relative to the including file: ours if it resolves into one of our folders.
        resolved=$(realpath -m --relative-to=. "$dir/$inc" 2>/dev/null) || continue
        [[ "$resolved" =~ ^($ours)/ ]] && [ -e "$resolved" ] || continue  # (another library's header)
        inc=$resolved  # (checked as what it is: "../verify/verify.hpp" from sim/ is verify/verify.hpp)
        ;;
    esac
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
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$f")
done < <(find core sim verify exec api python cli bench fuzz -type f 2>/dev/null | sort)

# A source folder of ours that the scan above does not know (a new top-level folder).
while IFS= read -r f; do
  echo "$f: a source file in a folder tests/layering.sh does not scan (add the folder to it and to docs/architecture.md)"
  bad=1
done < <(find . -path ./build -prune -o -path ./.git -prune -o -path ./tests -prune -o -path ./schedules -prune -o -path ./docs -prune -o \
  -path './build-*' -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' -o -name '*.c' -o -name '*.cu' -o \
  -name '*.cuh' \) -print | sed 's|^\./||' | grep -vE "^($ours)/" | sort)

# Link targets: each library target's direct links of ours are those docs/architecture.md's
# target table lists for it (an allow list); a target the table does not list is an error.
links_of_doc() {  # TARGET -> the stepgraph_* names in its row's "links" column
  awk -F'|' -v t="\`$1\`" 'index($2, t) > 0 { print $4 }' docs/architecture.md | grep -oE 'stepgraph_[a-z_]+' | sort -u
}
if [ -z "$links" ] || [ ! -r "$links" ]; then
  echo "layering: the links file ${links:-(none given)} is missing: CMake writes it at configure time (tests/CMakeLists.txt)"
  bad=1
else
  while IFS= read -r l; do
    [ -z "$l" ] && continue
    target=${l%%:*}
    libs=${l#*: }
    if ! grep -q "^| \`$target\`" docs/architecture.md; then
      echo "CMake: $target is not in docs/architecture.md's target table"
      bad=1
      continue
    fi
    allowed_links=$(links_of_doc "$target")
    for y in ${libs//;/ }; do
      case "$y" in stepgraph_warnings | stepgraph_* | _stepgraph) ;; *) continue ;; esac
      [ "$y" = stepgraph_warnings ] && continue
      if ! grep -qx "$y" <<<"$allowed_links"; then
        echo "CMake: $target links $y; docs/architecture.md allows it only: $(echo $allowed_links)"
        bad=1
      fi
    done
  done <"$links"
fi

if [ $bad = 0 ]; then echo "layering: every include and link follows docs/architecture.md"; fi
exit $bad
