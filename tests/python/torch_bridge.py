"""stepgraph.torch under a launcher: every library all-reduce on torch tensors equals
dist.all_reduce, a schedule with a defect is refused before anything is sent, and a hang names
what each rank waits on. Run by ctest (test_python_torch) as

    mpiexec -n 4 python3 torch_bridge.py BUILD_DIR          (Open MPI's variables)
    torch_bridge.py BUILD_DIR --torchrun 4                  (RANK / WORLD_SIZE, torchrun's)
"""

import os
import subprocess
import sys
import tempfile

BUILD = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(BUILD, "python"))

if len(sys.argv) > 3 and sys.argv[2] == "--torchrun":
    # torchrun's variables, set by hand: one process per rank, as torchrun starts them.
    n = int(sys.argv[3])
    port = str(29000 + os.getpid() % 1000)
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        for k in [k for k in env if k.startswith(("OMPI_", "PMI_", "SLURM_"))]:
            del env[k]
        procs.append(subprocess.Popen([sys.executable, __file__, BUILD], env=env))
    codes = [p.wait(timeout=600) for p in procs]
    sys.exit(max(codes))

try:
    import torch  # noqa: E402
    import torch.distributed as dist  # noqa: E402
except ImportError:
    print("stepgraph.torch: skipped (no torch for this Python: apt-get install python3-torch)")
    sys.exit(77)

import stepgraph  # noqa: E402
import stepgraph.torch as sgt  # noqa: E402

BROKEN = """\
# A ring all-reduce whose all-gather circulates the wrong chunk.
schedule broken_ring(size = 1MiB) {
  buffer data[N] bytes size / N;
  init data contrib;
  expect allreduce(data);
  for s in 0 .. N-1 {
    for r in 0 .. N {
      send data[(r - s) % N] from r to (r + 1) % N reduce;
    }
  }
  for s in 0 .. N-1 {
    for r in 0 .. N {
      send data[(r - s) % N] from r to (r + 1) % N;
    }
  }
}
"""

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print(f"rank {dist.get_rank()}: FAIL {what}", flush=True)


sgt.init_process_group()
rank, n = dist.get_rank(), dist.get_world_size()
launcher = sgt.launcher_env()[3]

# Every library all-reduce (a schedule whose postcondition is an all-reduce of one buffer and
# that builds at this N without compute steps), on an odd-sized tensor (the padding path) and on
# float64, against dist.all_reduce. Integer values: every summation order gives the same sum.
names = []
for e in stepgraph.list():
    try:
        g = stepgraph.compile(e["name"], n=n)
    except stepgraph.StepgraphError:
        continue  # not at this N (a `require`)
    ex = g.json["expect"]
    if len(ex) == 1 and ex[0]["kind"] == "allreduce" and not any(s.kind == "compute" for s in g.steps) and \
            ex[0]["group"] == 0 and g.json["groups"][0]["count"] == n:
        names.append(e["name"])
expect("ring_allreduce" in names and len(names) >= 5, f"library all-reduces found: {names}")
torch.manual_seed(1234 + rank)
for name in names:
    for numel, dtype in ((1000, torch.float32), (4096, torch.float64), (7, torch.float32)):
        x = torch.randint(-50, 50, (numel,)).to(dtype)
        ref = x.clone()
        dist.all_reduce(ref)
        stats = sgt.allreduce(name, x)
        expect(torch.equal(x, ref), f"{name} numel={numel} {dtype}: differs from dist.all_reduce by {(x - ref).abs().max()}")
        expect(stats.check.startswith("checked: ok"), f"{name}: {stats.check}")
if rank == 0:
    print(f"{launcher}, N = {n}: {len(names)} library all-reduces equal dist.all_reduce: {', '.join(names)}", flush=True)

# run() on a graph: a compiled ring on a 2-D tensor (one buffer, chunks in row-major order).
g = stepgraph.compile("ring_allreduce", n=n, set={"size": 4 * n * 16})
x = torch.arange(n * 16, dtype=torch.float32).reshape(n, 16) * (rank + 1)
sgt.run(g, {"data": x})
expect(torch.equal(x, torch.arange(n * 16, dtype=torch.float32).reshape(n, 16) * (n * (n + 1) // 2)), "run(graph) on a 2-D tensor")

# A defect: refused before anything is sent, with the verdict and the source line.
path = os.path.join(tempfile.gettempdir(), f"stepgraph_broken_{os.getppid()}_{rank}.sched")
with open(path, "w") as f:
    f.write(BROKEN)
x = torch.ones(1024)
try:
    sgt.run(path, {"data": x}, size=4096)
    expect(False, "the broken ring ran")
except stepgraph.DefectError as e:
    expect(e.verdict == "wrong-result", f"verdict {e.verdict!r}")
    expect(f"{path}:" in str(e), f"no source line in: {e}")
    expect(torch.equal(x, torch.ones(1024)), "the refused run touched the buffer")
    if rank == 0:
        print("refused:", str(e).splitlines()[0], flush=True)
os.unlink(path)

# A buffer too small is bad input, not a crash.
try:
    sgt.run("ring_allreduce", {"data": torch.zeros(3)}, size=4096)
    expect(False, "a short buffer ran")
except stepgraph.StepgraphError as e:
    expect("needs 4096 bytes" in str(e), str(e))

dist.barrier()
if failures:
    sys.exit(1)
if rank == 0:
    print("stepgraph.torch: ok", flush=True)
