"""The Python module against the command line: for the same arguments, a Python call returns
what `stepgraph COMMAND --json` prints; bad input raises with the located diagnostics.

    test_api.py BUILD_DIR        (PYTHONPATH=BUILD_DIR/python; run by ctest as test_python_api)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
sys.path.insert(0, os.path.join(BUILD, "python"))
import stepgraph  # noqa: E402

EXE = os.path.join(BUILD, "stepgraph")


def cli_json(*args, code=0):
    p = subprocess.run([EXE, *args, "--json"], capture_output=True, text=True)
    if p.returncode != code:
        raise AssertionError(f"stepgraph {' '.join(args)} --json: exit {p.returncode}, expected {code}\n{p.stderr}")
    return json.loads(p.stdout)


def drop_wall(x):
    """A simulation's own run time (wall_s) differs from run to run; everything else must not."""
    if isinstance(x, list):
        return [drop_wall(y) for y in x]
    return {k: v for k, v in x.items() if k != "wall_s"}


# A ring all-reduce whose all-gather circulates the wrong chunk (shared with torch_bridge.py).
BROKEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "broken_ring.sched")


class SameAsCommandLine(unittest.TestCase):
    def test_list(self):
        self.assertEqual(stepgraph.list(), cli_json("list"))

    def test_compile(self):
        g = stepgraph.compile("ring_allreduce", n=4, set={"size": "1MiB"})
        p = subprocess.run([EXE, "compile", "ring_allreduce", "-n", "4", "--set", "size=1MiB", "--format", "json"], capture_output=True,
                           text=True, check=True)
        self.assertEqual(g.json, json.loads(p.stdout))
        # The graph as objects: rank 0 of a ring sends to 1 and receives from 3, chunk by chunk.
        self.assertEqual(g.ranks, 4)
        self.assertEqual(g.params, {"size": 1048576})
        self.assertEqual(g.buffers["data"].chunks, 4)
        r0 = g.steps_of(0)
        self.assertTrue(all(s.rank == 0 for s in r0))
        sends = [s for s in r0 if s.kind == "send"]
        recvs = [s for s in r0 if s.kind == "recv"]
        self.assertEqual(len(sends), 6)
        self.assertEqual({s.peer for s in sends}, {1})
        self.assertEqual({s.peer for s in recvs}, {3})
        self.assertTrue(all(s.bytes == 262144 for s in sends))
        self.assertTrue(all(s.line > 0 and s.file.endswith("ring_allreduce.sched") for s in r0))
        for s in r0:
            for d in s.deps:
                self.assertEqual(g.steps[d].rank, 0)

    def test_check(self):
        self.assertEqual(stepgraph.check("ring_allreduce", n=[2, 3, 4]), cli_json("check", "ring_allreduce", "-n", "2,3,4"))
        self.assertEqual(stepgraph.check("dp_grid_allreduce", n=[4, 5]),
                         cli_json("check", "dp_grid_allreduce", "-n", "4,5", code=2))

    def test_verify(self):
        self.assertEqual(stepgraph.verify("ring_allreduce", n=4, set={"size": "64KiB"}),
                         cli_json("verify", "ring_allreduce", "-n", "4", "--set", "size=64KiB"))
        self.assertEqual(stepgraph.verify("binomial_bcast", n=[3, 5], engine="explicit"),
                         cli_json("verify", "binomial_bcast", "-n", "3,5", "--engine", "explicit"))

    def test_analyze(self):
        self.assertEqual(stepgraph.analyze("ring_allreduce", n=8, set={"size": "8MiB"}),
                         cli_json("analyze", "ring_allreduce", "-n", "8", "--set", "size=8MiB"))
        self.assertEqual(stepgraph.analyze("ring_allreduce", n=[4, 8], unit="data"),
                         cli_json("analyze", "ring_allreduce", "-n", "4,8", "--unit", "data"))

    def test_sim(self):
        self.assertEqual(drop_wall(stepgraph.sim("ring_allreduce", n=8, model="analytic", set={"size": "1MiB"})),
                         drop_wall(cli_json("sim", "ring_allreduce", "-n", "8", "--model", "analytic", "--set", "size=1MiB", "-q")))
        self.assertEqual(
            drop_wall(stepgraph.sim("ring_allreduce", n=[4, 8], platform="nodes:count=2,gpus=4", set={"size": "4MiB"})),
            drop_wall(cli_json("sim", "ring_allreduce", "-n", "4,8", "--platform", "nodes:count=2,gpus=4", "--set", "size=4MiB", "-q")))
        # Collectives costed once per shape: the same object as the CLI's, but for the runs' own times.
        memo = ["train_step", "-n", "32", "--set", "tp=4", "--set", "pp=4", "--set", "layers=8", "--set", "buckets=2",
                "--set", "microbatches=4", "--set", "seq=4096", "--platform", "dgx-h100:nodes=8,gpus=4"]

        def no_times(x):
            x = drop_wall(x)
            x["memo"] = drop_wall(x["memo"])
            x["collectives"] = [drop_wall(c) for c in x["collectives"]]
            return x
        got = stepgraph.sim("train_step", n=32, model="analytic", collectives="memo", platform="dgx-h100:nodes=8,gpus=4",
                            set={"tp": 4, "pp": 4, "layers": 8, "buckets": 2, "microbatches": 4, "seq": 4096})
        self.assertEqual(no_times(got), no_times(cli_json("sim", *memo, "--model", "analytic", "--collectives", "memo", "-q")))
        self.assertEqual(got["memo"]["shapes"], 3)
        with self.assertRaises(stepgraph.StepgraphError):
            stepgraph.sim("ring_allreduce", n=8, collectives="memo")  # (SimGrid)


class Defects(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".sched")
        with os.fdopen(fd, "w") as f, open(BROKEN) as src:
            f.write(src.read())

    def tearDown(self):
        os.unlink(self.path)

    def test_verify_finds_it_with_its_line(self):
        v = stepgraph.verify(self.path, n=4)
        self.assertEqual(v, cli_json("verify", self.path, "-n", "4", code=1))
        self.assertIn("wrong", " ".join(m["verdict"] for m in v["verdicts"]))
        self.assertIsNotNone(v["counterexample"])
        self.assertIn(self.path, json.dumps(v["counterexample"]))

    def test_bad_input_raises_located(self):
        with self.assertRaises(stepgraph.StepgraphError) as cm:
            stepgraph.verify(self.path, n=4, set={"size": "1MiB", "nope": "3"})
        e = cm.exception
        self.assertTrue(e.diagnostics, e)
        d = e.diagnostics[0]
        self.assertEqual(d["severity"], "error")
        self.assertIn("nope", d["message"])
        with self.assertRaises(stepgraph.StepgraphError) as cm:
            stepgraph.check("no_such_schedule", n=4)
        self.assertIn("neither a file nor a library schedule", str(cm.exception))
        # A syntax error: file, line and column, and the caret in the rendered text.
        bad = self.path + ".bad.sched"
        with open(bad, "w") as f:
            f.write("schedule s(size = 4) {\n  buffer x[N] bytes size;\n  send x[0] from 0 to;\n}\n")
        try:
            with self.assertRaises(stepgraph.StepgraphError) as cm:
                stepgraph.compile(bad, n=2)
            d = cm.exception.diagnostics[0]
            self.assertEqual((d["file"], d["line"]), (bad, 3))
            self.assertIn("^", cm.exception.rendered)
        finally:
            os.unlink(bad)
        with self.assertRaises(stepgraph.StepgraphError):
            stepgraph.verify("ring_allreduce", n=4, semantics="sometimes")
        with self.assertRaises(stepgraph.StepgraphError):
            stepgraph.compile("ring_allreduce", n=4, rank=9)
        with self.assertRaises(stepgraph.StepgraphError):
            stepgraph.check("ring_allreduce", n=[4, 0])
        with self.assertRaises(stepgraph.StepgraphError):
            stepgraph.verify("ring_allreduce", n=-2)
        # A platform that does not read: the place in the --platform string, before any point runs.
        with self.assertRaises(stepgraph.StepgraphError) as cm:
            stepgraph.sim("ring_allreduce", n=[4, 8], platform="ring:bw=1Gbps")
        d = cm.exception.diagnostics[0]
        self.assertEqual((d["file"], d["line"], d["col"]), ("--platform", 1, 1))
        self.assertIn("unknown platform 'ring'", d["message"])
        self.assertIn("^~~~", cm.exception.rendered)


if __name__ == "__main__":
    unittest.main(verbosity=2)
