#!/usr/bin/env bash
# How the error of context-parallel attention grows with the ring size: runs an attention
# schedule forward and backward under `mpiexec -n N` for each N, with fp32 and with bf16 inputs,
# and prints `stepgraph exec --check`'s max |output − reference| (full attention computed on one
# rank from the same inputs, in double precision) as a markdown table.
#
#   bench/attention_error.sh                          # ring_attention, N = 1 2 4 8 16
#   bench/attention_error.sh zigzag_ring_attention "1 2 4 8" --set seq=4096
#
# Arguments: the forward schedule (its _bwd twin is run too), the list of N, then extra
# `stepgraph exec` options. Defaults: seq = 2048, heads = 4, dim = 64, causal.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${STEPGRAPH:-$here/build/stepgraph}
schedule=${1:-ring_attention}
ns=${2:-"1 2 4 8 16"}
shift $(( $# > 2 ? 2 : $# ))
# The defaults for what the extra options do not set (exec refuses a --set given twice).
sizes=()
for kv in seq=2048 heads=4 dim=64; do
  [[ " $* " == *" --set ${kv%%=*}="* ]] || sizes+=(--set "$kv")
done
sizes+=("$@")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# The value of "key" in exec's JSON row, or "-".
field() { sed -n "s/^ *\"$1\": \([^,]*\),\{0,1\}$/\1/p" <<<"$2" | head -n 1 | grep . || echo -; }
num() { [[ $1 == - ]] && echo - || printf '%.2e' "$1"; }

run() {  # schedule N elem
  timeout 600 mpiexec -n "$2" "$bin" exec "$1" "${sizes[@]}" --set "elem=$3" --check --iters 1 --warmup 0 --json 2>/dev/null || true
}

printf '%s, %s\n\n' "$schedule" "${sizes[*]}"
printf '| N | fp32: O | fp32: dQ | fp32: dKV | bf16: O | bf16: dQ | bf16: dKV |\n|---|---|---|---|---|---|---|\n'
for n in $ns; do
  line="| $n"
  for elem in 4 2; do
    f=$(run "$schedule" "$n" "$elem")
    b=$(run "${schedule}_bwd" "$n" "$elem")
    [[ $(field wrong "$f") == 0 ]] || f=""
    [[ $(field wrong "$b") == 0 ]] || b=""
    line+=" | $(num "$(field max_abs_err "$f")") | $(num "$(field max_abs_err_dq "$b")") | $(num "$(field max_abs_err_dkv "$b")")"
  done
  echo "$line |"
done
echo
echo "max |got - reference| over every element; '-': the run was refused (a require) or had wrong elements"
