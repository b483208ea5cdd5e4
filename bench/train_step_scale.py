#!/usr/bin/env python3
"""The scale table of `sim train_step` (issue 32, item 5): wall time and peak memory against N, the
log-log slope against the first N (1.00 = linear in N, the baseline), and rank 0's simulated step
time broken down into compute, communication exposed per parallelism, and idle (the pipeline's
bubble, and waits for other ranks).

    python3 bench/train_step_scale.py [--stepgraph build/stepgraph] [--collectives memo] [N ...]   (default 128 256 512)
    python3 bench/train_step_scale.py --compare [--simgrid] [--set K=V ...] [N ...]   memo against the expansion, in this run

--compare runs every N both ways and prints the ratios of wall time and peak memory (the
expansion, every message an event, is the baseline) and the step times' relative difference;
with --simgrid, SimGrid's engine on the expansion too (the reference where it can run), and memo's
step time against it. --set passes the schedule's parameters (smaller layers and micro-batches
let SimGrid run at larger N).

Each N runs `stepgraph sim train_step -n N --platform dgx-h100:nodes=N/8 --set tp=8 --set pp=16
--set cp=1 --model analytic --json --top 64` (with `--collectives memo` when given: each collective
instance costed from its algorithm alone, once per shape) in its own process (peak: its maximum resident set,
from wait4). The breakdown's statements are told apart by their source line: a collective over
TPG is tensor parallelism, over DPG data parallelism; the isends and receives on tags 0 and 1
are the pipeline's, on tags 2-4 the context-parallel ring's (schedules/train_step.sched).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kind_of(line):
    if "over TPG" in line:
        return "tp"
    if "over DPG" in line:
        return "dp"
    if "cnext" in line or "cprev" in line:
        return "cp"
    if " tag 0" in line or " tag 1" in line:
        return "pp"
    return "other"


MAX_MEMORY = None  # --max-memory, passed through


SETS = []  # --set, passed through


def run(stepgraph, n, collectives, model="analytic"):
    """Runs one N; returns its JSON, wall seconds and peak resident KiB (wait4's, this child's own)."""
    cmd = [stepgraph, "sim", "train_step", "-n", str(n), "--platform", "dgx-h100:nodes=%d" % (n // 8), "--set", "tp=8", "--set", "pp=16",
           "--set", "cp=1", "--model", model, "--json", "--top", "64", "--collectives", collectives]
    for kv in SETS:
        cmd += ["--set", kv]
    if MAX_MEMORY:
        cmd += ["--max-memory", MAX_MEMORY]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit("stepgraph failed at N = %d (exit %d): %s" % (n, p.returncode, err.read().decode()[-2000:]))
        return json.loads(out.read()), wall, usage.ru_maxrss


def compare(a):
    print("sim train_step (tp 8, pp 16, cp 1%s), analytic engine, dgx-h100 nodes of 8: collectives costed once per shape (memo) "
          "against expanded (the baseline), both measured here\n" % "".join(", " + kv for kv in SETS))
    sg = a.simgrid
    print("| N | expanded wall s | memo wall s | wall ratio | expanded peak GiB | memo peak GiB | peak ratio | expanded step s | memo step s | "
          "step difference |" + (" SimGrid wall s | SimGrid step s | memo against SimGrid |" if sg else ""))
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if sg else ""))
    for n in a.ranks:
        je, we, pe = run(a.stepgraph, n, "expand")
        jm, wm, pm = run(a.stepgraph, n, "memo")
        diff = (jm["time_s"] - je["time_s"]) / je["time_s"]
        row = "| %s | %.1f | %.1f | %.1fx | %.2f | %.2f | %.1fx | %.6f | %.6f | %+.2e |" % (
            "{:,}".format(n), we, wm, we / wm, pe / 1048576.0, pm / 1048576.0, pe / pm, je["time_s"], jm["time_s"], diff)
        if sg:
            js, ws, _ = run(a.stepgraph, n, "expand", "simgrid")
            row += " %.1f | %.6f | %+.2e |" % (ws, js["time_s"], (jm["time_s"] - js["time_s"]) / js["time_s"])
        print(row, flush=True)
        print("N = %d done" % n, file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stepgraph", default=os.path.join(ROOT, "build", "stepgraph"))
    ap.add_argument("--collectives", default="expand", choices=["expand", "memo"])
    ap.add_argument("--compare", action="store_true", help="memo against the expansion, both in this run")
    ap.add_argument("--max-memory", help="passed to stepgraph sim (its refusal limit; default 80 %% of available memory)")
    ap.add_argument("--simgrid", action="store_true", help="with --compare: SimGrid's engine on the expansion too")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE, a train_step parameter (passed to stepgraph sim)")
    ap.add_argument("ranks", nargs="*", type=int, default=[128, 256, 512])
    a = ap.parse_args()
    global MAX_MEMORY, SETS
    MAX_MEMORY = a.max_memory
    SETS = a.set
    if a.compare:
        compare(a)
        return
    lines = open(os.path.join(ROOT, "schedules", "train_step.sched")).read().split("\n")
    rows = []
    for n in a.ranks:
        j, wall, peak_kib = run(a.stepgraph, n, a.collectives)
        b = j["breakdown"]
        parts = {"tp": 0.0, "dp": 0.0, "pp": 0.0, "cp": 0.0, "other": 0.0}
        for e in b["exposed_by_statement"]:
            line = int(e["source"].split(":")[-2])
            parts[kind_of(lines[line - 1])] += e["seconds"]
        listed = sum(parts.values())
        parts["other"] += max(0.0, b["exposed_comm_s"] - listed)  # beyond --top
        rows.append((n, wall, peak_kib, j["messages"], j["time_s"], b, parts))
        print("N = %d done: %.1f s" % (n, wall), file=sys.stderr)

    print("sim train_step (tp 8, pp 16, cp 1, Llama-3-405B-like defaults), analytic engine, dgx-h100 nodes of 8, collectives: %s\n" %
          a.collectives)
    print("| N | messages | wall s | peak GiB | slope (wall) | slope (peak) | step s | compute | exposed TP | exposed DP | exposed PP | exposed CP | exposed other | idle |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    n0, w0, m0 = rows[0][0], rows[0][1], rows[0][2]
    for n, wall, peak, msgs, step, b, parts in rows:
        sw = "%.2f" % (math.log(wall / w0) / math.log(n / n0)) if n != n0 else "(base)"
        sm = "%.2f" % (math.log(peak / m0) / math.log(n / n0)) if n != n0 and m0 else "(base)"
        print("| %s | %s | %.1f | %.2f | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |" %
              ("{:,}".format(n), "{:,}".format(msgs), wall, peak / 1048576.0, sw, sm, step, b["compute_s"], parts["tp"], parts["dp"],
               parts["pp"], parts["cp"], parts["other"], b["idle_s"]))
    print("\nslope: log(wall or peak ratio) / log(N ratio) against the first N; 1.00 = linear in N. "
          "Step-time parts are rank 0's, in seconds; they add up to the step time.")


if __name__ == "__main__":
    main()
