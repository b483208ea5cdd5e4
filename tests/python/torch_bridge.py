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
import time

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

BROKEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "broken_ring.sched")  # shared with test_api.py
LATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "late_collective.sched")

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
    # NCCL's issue order (the stream order, one batch per group), run on gloo.
    x = torch.randint(-50, 50, (1000,)).float()
    ref = x.clone()
    dist.all_reduce(ref)
    sgt.allreduce(name, x, ordered=True)
    expect(torch.equal(x, ref), f"{name} in the stream order: differs from dist.all_reduce")
if rank == 0:
    print(f"{launcher}, N = {n}: {len(names)} library all-reduces equal dist.all_reduce: {', '.join(names)}", flush=True)

# run() on a graph: a compiled ring on a 2-D tensor (one buffer, chunks in row-major order).
g = stepgraph.compile("ring_allreduce", n=n, set={"size": 4 * n * 16})
x = torch.arange(n * 16, dtype=torch.float32).reshape(n, 16) * (rank + 1)
sgt.run(g, {"data": x})
expect(torch.equal(x, torch.arange(n * 16, dtype=torch.float32).reshape(n, 16) * (n * (n + 1) // 2)), "run(graph) on a 2-D tensor")

# Ring attention, forward and backward, on this rank's rows (layout()), against full attention on
# one rank with autograd's gradients.
B, H, S, D = 1, 4, 16 * n, 8  # Ulysses splits the heads over the ranks: H a multiple of N
torch.manual_seed(7)  # the same q, k, v, dO on every rank
q, k, v = (torch.randn(B, H, S, D) for _ in range(3))
dout_full = torch.randn(B, H, S, D)


def full_attention(q, k, v, causal):
    s = q @ k.transpose(-1, -2) / D ** 0.5
    if causal:
        s = s.masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, -1) @ v


# Every library schedule whose postcondition is attention, with its backward beside it.
library = {e["name"] for e in stepgraph.list()}
attn_names = []
for name in sorted(library):
    if name + "_bwd" not in library:
        continue
    try:
        ex = stepgraph.compile(name, n=n, set={"seq": S, "heads": H, "dim": D}).json["expect"]
    except stepgraph.StepgraphError:
        continue  # not at this N
    if any(e["kind"] == "attention" for e in ex):
        attn_names.append(name)
expect(len(attn_names) >= 11, f"attention schedules found: {attn_names}")
worst = 0.0
for name in attn_names:
    for causal in (True, False):
        rows = sgt.layout(name, seq=S, n=n)[rank]
        idx = torch.cat([torch.arange(a, b) for a, b in rows])
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        ref = full_attention(qq, kk, vv, causal)
        ref.backward(dout_full)
        out, lse = sgt.attention(name, q[:, :, idx], k[:, :, idx], v[:, :, idx], causal=causal, return_lse=True)
        err = (out - ref.detach()[:, :, idx]).abs().max().item()
        expect(err < 1e-5, f"{name} causal={causal}: output differs from full attention by {err:.2e}")
        out2 = sgt.attention(name, q[:, :, idx], k[:, :, idx], v[:, :, idx], causal=causal, ordered=True)
        expect((out2 - out).abs().max().item() < 1e-6, f"{name} causal={causal}: the stream order gives another output")
        dq, dk, dv = sgt.attention_backward(name + "_bwd", q[:, :, idx], k[:, :, idx], v[:, :, idx], out, lse, dout_full[:, :, idx],
                                            causal=causal)
        gerr = max((dq - qq.grad[:, :, idx]).abs().max().item(), (dk - kk.grad[:, :, idx]).abs().max().item(),
                   (dv - vv.grad[:, :, idx]).abs().max().item())
        expect(gerr < 1e-4, f"{name}_bwd causal={causal}: gradients differ from autograd's by {gerr:.2e}")
        worst = max(worst, err, gerr)
if rank == 0:
    print(f"attention: {len(attn_names)} schedules x 2 masks, forward and backward, within {worst:.1e} of full attention: "
          f"{', '.join(attn_names)}", flush=True)

# A DP x TP step (N = 4: mp = 2 tensor-parallel pairs, dp = 2): tp_forward all-gathers the
# activation shards in each mp group and runs the GEMM (a kernel given by the caller), then
# dp_grid_allreduce sums the gradient over each dp group; the same step by hand with
# torch.distributed subgroups must give the same tensors.
if n % 2 == 0:
    mp, dp = 2, n // 2
    t_idx, d_idx = rank % mp, rank // mp
    torch.manual_seed(99)
    W = torch.randn(16, 16)  # the layer's weight, the same everywhere
    torch.manual_seed(500 + rank)
    shard = torch.randint(-3, 4, (4, 16)).float()  # this rank's rows of the layer input
    act = torch.zeros(mp, 4, 16)
    act[t_idx] = shard
    out = torch.zeros(4 * mp, 16 // mp)

    def gemm(step, reads, writes):  # the column slice t of act_full @ W
        writes[0].copy_((reads[0].view(mp * 4, 16) @ W[:, t_idx * (16 // mp):(t_idx + 1) * (16 // mp)]).reshape(-1))

    size = act.numel() * 4
    sgt.run("tp_forward", {"act": act, "out": out}, kernels={"gemm": gemm}, size=size, mp=mp)
    grad = (out.sum() * torch.arange(16, dtype=torch.float32)).repeat(dp)  # a stand-in gradient from the output
    sgt.run("dp_grid_allreduce", {"grad": grad}, size=grad.numel() * 4, mp=mp)
    # By hand.
    mp_groups = [dist.new_group(list(range(d * mp, (d + 1) * mp))) for d in range(dp)]
    dp_groups = [dist.new_group(list(range(t, n, mp))) for t in range(mp)]
    parts = [torch.zeros(4, 16) for _ in range(mp)]
    dist.all_gather(parts, shard, group=mp_groups[d_idx])
    out_ref = torch.cat(parts) @ W[:, t_idx * (16 // mp):(t_idx + 1) * (16 // mp)]
    grad_ref = (out_ref.sum() * torch.arange(16, dtype=torch.float32)).repeat(dp)
    dist.all_reduce(grad_ref, group=dp_groups[t_idx])
    expect(torch.allclose(out, out_ref), "tp_forward differs from all_gather + GEMM by hand")
    expect(torch.allclose(grad, grad_ref), "dp_grid_allreduce differs from the dp groups' all_reduce by hand")
    if rank == 0:
        print(f"DP x TP step (dp = {dp}, tp = {mp}): tp_forward + dp_grid_allreduce equal the hand-written step", flush=True)

# Two all-reduces on one group, the first held up on rank 0 (late_collective.sched): every rank
# runs them in program order, whatever became ready first.
if n >= 2:
    a = torch.arange(256, dtype=torch.float32) + rank
    b = torch.arange(512, dtype=torch.float32) * (rank + 1)
    a_ref, b_ref = a.clone(), b.clone()
    dist.all_reduce(a_ref)
    dist.all_reduce(b_ref)
    late = {"slow": lambda s, reads, writes: time.sleep(0.5), "use": lambda s, reads, writes: None}
    sgt.run(LATE, {"a": a, "b": b, "tok": torch.zeros(1)}, kernels=late, ordered=False)
    expect(torch.equal(a, a_ref) and torch.equal(b, b_ref), "late_collective: the all-reduces differ from dist.all_reduce")
    if rank == 0:
        print("two all-reduces on one group, the first held up on one rank: in program order on every rank", flush=True)

# A graph changed after it was built is not what was checked: refused.
g2 = stepgraph.compile("ring_allreduce", n=n, set={"size": 4 * n * 16})
g2.steps_of(rank)[0].peer = rank  # (a user's "transformation")
try:
    sgt.run(g2, {"data": torch.zeros(n * 16)})
    expect(False, "a changed graph ran")
except stepgraph.StepgraphError as e:
    expect("changed after stepgraph.compile" in str(e), str(e))

# A defect: refused before anything is sent, with the verdict and the source line.
path = os.path.join(tempfile.gettempdir(), f"stepgraph_broken_{os.getppid()}_{rank}.sched")
with open(path, "w") as f, open(BROKEN) as src:
    f.write(src.read())
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
