#!/usr/bin/env bash
# The accuracy benchmark (issue 29): every table of manifest.tsv predicted by `stepgraph sim
# --nccl-tests` on the platform the manifest names (a preset as shipped), and one Markdown row per
# table: the geometric-mean error on time below 1 MiB and from 1 MiB up (signed: the bias) and the
# mean |error|, with ASTRA-sim's published 9.7-20.6 % (its HGX-H100 validation) for scale.
#   bash bench/nccl_accuracy/run.sh [build/stepgraph] [analytic|simgrid]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sg="${1:-$here/../../build/stepgraph}"
model="${2:-analytic}"
echo "| table | platform | forced | below 1 MiB: geomean / mean abs | from 1 MiB: geomean / mean abs | source |"
echo "|---|---|---|---|---|---|"
while IFS=$'\t' read -r file platform ranks coll env notes; do
  case "$file" in ''|\#*) continue ;; esac
  args=(sim --nccl-tests "$here/tables/$file" --platform "$platform" --model "$model" --json)
  [ "$ranks" != "-" ] && args+=(-n "$ranks")
  [ "$coll" != "-" ] && args+=(--nccl-collective "$coll")
  envs=()
  [ "$env" != "-" ] && envs=($env)
  out=$(env -u NCCL_ALGO -u NCCL_PROTO "${envs[@]}" "$sg" "${args[@]}" 2>/dev/null || true)
  python3 - "$file" "$platform" "$env" "$notes" "$out" <<'PY'
import json, sys
file, platform, env, notes, out = sys.argv[1:6]
def cell(a):
    return "-" if not a else "%+.1f%% / %.1f%%" % (100 * a["geomean_error"], 100 * a["mean_abs_error"])
try:
    j = json.loads(out)
    print("| %s | `%s` | %s | %s | %s | %s |" % (file, platform, env if env != "-" else "", cell(j.get("below_1MiB")), cell(j.get("from_1MiB")), notes))
except Exception:
    print("| %s | `%s` | %s | failed | failed | %s |" % (file, platform, env if env != "-" else "", notes))
PY
done < "$here/manifest.tsv"
echo
echo "ASTRA-sim's own validation on HGX-H100 reports 9.7-20.6 % error; the targets of issue 29: 20 % below 1 MiB, 10 % from 1 MiB up."
