#!/bin/bash
# The MSCCL front end and export held against an independent oracle (bench/msccl_chunksim.py,
# written from RCCL's and msccl-tools' sources):
#  1. every library collective stepgraph exports (compile --format msccl) at N = 8 and 16 is one
#     the oracle runs to its postcondition, and stepgraph's own import checks it ok too;
#  2. on msccl-tools' files in tests/msccl/generated/, the oracle and `stepgraph check` agree.
# Usage: msccl_oracle.sh SOURCE_DIR STEPGRAPH_BIN. Exit 77 (skipped) without python3.
set -u
src=$1 bin=$2
command -v python3 >/dev/null 2>&1 || { echo "python3 is not installed: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 exported=0
for n in 8 16; do
  for s in $("$bin" list | awk '{print $1}'); do
    "$bin" compile "$s" -n $n --set size=64KiB --format msccl -o "$tmp/$s.xml" 2>/dev/null || continue
    exported=$((exported + 1))
    oracle=$(python3 "$src/bench/msccl_chunksim.py" "$tmp/$s.xml" | cut -f3)
    bytes=$(grep -o "size is [0-9]*" "$tmp/$s.xml" | grep -o "[0-9]*")
    ours=$("$bin" check "$tmp/$s.xml" --set size="$bytes" -q 2>/dev/null; echo "rc=$?")
    if [ "$oracle" != "OK" ] || [ "${ours##*rc=}" != "0" ]; then
      echo "FAIL $s N=$n: oracle '$oracle', stepgraph check ${ours##*rc=}"
      fail=1
    fi
  done
done
echo "$exported exports checked by the oracle"
[ "$exported" -ge 30 ] || { echo "FAIL: only $exported library collectives exported"; fail=1; }
for f in "$src"/tests/msccl/generated/*.xml; do
  oracle=$(python3 "$src/bench/msccl_chunksim.py" "$f" | cut -f3)
  "$bin" check "$f" >/dev/null 2>&1
  rc=$?
  want=1; [ "$oracle" = "OK" ] && want=0
  if [ "$rc" != "$want" ]; then
    echo "FAIL $(basename "$f"): oracle '$oracle', stepgraph check exit $rc"
    fail=1
  fi
done
[ $fail = 0 ] && echo "the oracle and stepgraph agree"
exit $fail
