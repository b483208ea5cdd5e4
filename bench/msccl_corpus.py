#!/usr/bin/env python3
"""Checks, verifies and simulates every MSCCL XML file under the folders given, and prints a
Markdown table (docs/msccl.md, "The corpus"): name, coll, ngpus, proto, steps, the check's and
verify's verdicts, verify's time, and the analytic simulation's time at two sizes on GPU nodes.

  bench/msccl_corpus.py build/stepgraph DIR...      (DIR: RCCL's tools/msccl-algorithms, …)
"""
import json, math, os, re, subprocess, sys, time

def run(args, timeout=600):
    t0 = time.time()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return -1, "", "timeout", time.time() - t0

def attrs(path):
    with open(path, errors="replace") as f:
        head = f.read(4096)
    m = re.search(r"<algo\b([^>]*)>", head)
    a = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1))) if m else {}
    return a

def main():
    sg, dirs = sys.argv[1], sys.argv[2:]
    files = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d) if f.endswith(".xml"))
    print("| file | coll | ngpus | proto | inplace/outofplace | steps | check | verify (bounded) | verify s | sim 1 MiB | sim 64 MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for f in files:
        a = attrs(f)
        n = int(a.get("ngpus", "0") or 0)
        nch = int(a.get("nchunksperloop", "1") or 1)
        modes = []
        if a.get("inplace") == "1": modes.append("1")
        if a.get("outofplace", "0" if a.get("inplace") == "1" else "1") == "1": modes.append("0")
        row = []
        for mode in modes or ["1"]:
            rc, out, err, _ = run([sg, "check", f, "-n", str(n), "--set", "inplace=" + mode, "--json"])
            try:
                c = json.loads(out)[0]
                check = c["result"] + ("" if c["result"] != "wrong-result" else " (%d chunks)" % c["chunks_wrong"])
                steps = c.get("steps", "")
            except Exception:
                check, steps = "error: " + (err.strip().splitlines() or ["?"])[0][:80], ""
            rc, out, err, secs = run([sg, "verify", f, "-n", str(n), "--set", "inplace=" + mode, "--json"])
            try:
                v = json.loads(out)
                verdict = ", ".join(m["verdict"] for m in v["verdicts"]) or v.get("error", "")[:60]
            except Exception:
                verdict = "error"
            sims = []
            nodes = max(1, math.ceil(n / 8))
            gpus = min(n, 8)
            for size in (1 << 20, 64 << 20):
                s = max(nch, size - size % nch)
                rc, out, err, _ = run([sg, "sim", f, "-n", str(n), "--set", "inplace=" + mode, "--set", "size=%d" % s, "--model", "analytic",
                                       "--platform", "nodes:count=%d,gpus=%d" % (nodes, gpus), "--json"])
                try:
                    j = json.loads(out)
                    if (j.get("check") or {}).get("state") == "defect":
                        sims.append("refused (%s)" % j["check"]["verdict"])  # sim checks first (issue 28)
                    else:
                        sims.append("%.1f us" % (j["time_s"] * 1e6) if j.get("time_s") is not None else "deadlock")
                except Exception:
                    sims.append("-")
            row.append((mode, steps, check, verdict, secs, sims))
        for mode, steps, check, verdict, secs, sims in row:
            print("| %s | %s | %d | %s | %s | %s | %s | %s | %.2f | %s | %s |" % (
                os.path.relpath(f, os.path.commonpath(dirs) if len(dirs) > 1 else dirs[0]), a.get("coll", "?"), n, a.get("proto", "?"),
                "in place" if mode == "1" else "out of place", steps, check, verdict, secs, sims[0], sims[1]))
            sys.stdout.flush()

if __name__ == "__main__":
    main()
