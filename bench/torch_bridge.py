"""bench/torch_bridge.py: stepgraph.torch against the same algorithms written by hand in torch.

    mpiexec -n 4 /usr/bin/python3 bench/torch_bridge.py BUILD_DIR [--quick] [--iters K] [--what allreduce|attention]

Two rows per size, each timed in the same run, median of K iterations after warm-up, the
slowest rank's time per iteration:
  - ring all-reduce: sgt.allreduce("ring_allreduce", x) against a hand-written ring
    (reduce-scatter then all-gather, one dist.batch_isend_irecv pair per step), and
    dist.all_reduce (gloo's own) for scale;
  - zigzag ring attention (causal): sgt.attention("zigzag_ring_attention", q, k, v) against
    ring-flash-attention's zigzag loop (zhuzilin/ring-flash-attention, zigzag_ring_flash_attn.py),
    written fresh here with the same tile (matmul + logsumexp) and merge.
The ratio is bridge / hand: the goal is within 1.2 (bench/README.md keeps the table).
"""

import os
import statistics
import sys
import time

BUILD = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(BUILD, "python"))
QUICK = "--quick" in sys.argv
ITERS = int(sys.argv[sys.argv.index("--iters") + 1]) if "--iters" in sys.argv else (2 if QUICK else 10)
WHAT = sys.argv[sys.argv.index("--what") + 1] if "--what" in sys.argv else "all"  # allreduce, attention or all

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("bench torch_bridge: skipped (no torch for this Python)")
    sys.exit(77)

import stepgraph.torch as sgt  # noqa: E402
from stepgraph.torch import _merge_rows, _tile_attention  # noqa: E402 (the same tile and merge for both)

sgt.init_process_group()
rank, n = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


def timed(fn, iters=ITERS, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(iters):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        ts.append(t.item())
    return statistics.median(ts)


def hand_ring_allreduce(x: torch.Tensor):
    """Patarasuk & Yuan's ring, as people write it with batch_isend_irecv."""
    chunks = list(x.view(-1).chunk(n))
    right, left = (rank + 1) % n, (rank - 1) % n
    buf = torch.empty_like(chunks[0])
    for s in range(n - 1):  # reduce-scatter
        send_c, recv_c = (rank - s) % n, (rank - s - 1) % n
        ops = [dist.P2POp(dist.isend, chunks[send_c], right), dist.P2POp(dist.irecv, buf, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        chunks[recv_c].add_(buf)
    for s in range(n - 1):  # all-gather
        send_c, recv_c = (rank + 1 - s) % n, (rank - s) % n
        ops = [dist.P2POp(dist.isend, chunks[send_c], right), dist.P2POp(dist.irecv, chunks[recv_c], left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()


def hand_zigzag_attention(q, k, v):
    """ring-flash-attention's zigzag forward: this rank holds blocks r and 2N-1-r; at step s it
    holds the kv pair of rank (r - s) mod N; step 0 is causal on its own pair, then kv[:half]
    for an earlier pair (all of q), else q[half:] against the whole pair."""
    b, h, rows, d = q.shape
    half = rows // 2
    o = torch.zeros(b * h * rows, d + 1)
    o[:, d] = float("-inf")
    ov = o.view(b, h, rows, d + 1)
    kv = torch.stack([k, v]).contiguous()
    nxt = torch.empty_like(kv)
    right, left = (rank + 1) % n, (rank - 1) % n

    def merge(rows_sl, out, lse):
        tile = torch.cat([out, lse.unsqueeze(-1)], dim=-1)
        dst = ov[:, :, rows_sl].reshape(-1, d + 1)
        _merge_rows(dst, tile.reshape(-1, d + 1))
        ov[:, :, rows_sl] = dst.view(b, h, -1, d + 1)

    for s in range(n):
        reqs = []
        if s < n - 1:
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, kv, right), dist.P2POp(dist.irecv, nxt, left)])
        kk, vv = kv[0], kv[1]
        if s == 0:  # own pair: the two diagonals causal, the late block against the early one full
            out, lse = _tile_attention(q[:, :, :half], kk[:, :, :half], vv[:, :, :half], True)
            merge(slice(0, half), out, lse)
            out, lse = _tile_attention(q[:, :, half:], kk[:, :, :half], vv[:, :, :half], False)
            merge(slice(half, rows), out, lse)
            out, lse = _tile_attention(q[:, :, half:], kk[:, :, half:], vv[:, :, half:], True)
            merge(slice(half, rows), out, lse)
        elif s <= rank:  # an earlier rank's pair: its early block for both q blocks
            out, lse = _tile_attention(q, kk[:, :, :half], vv[:, :, :half], False)
            merge(slice(0, rows), out, lse)
        else:  # a later rank's pair: the late q block against both of its blocks
            out, lse = _tile_attention(q[:, :, half:], kk, vv, False)
            merge(slice(half, rows), out, lse)
        for r in reqs:
            r.wait()
        if s < n - 1:
            kv, nxt = nxt, kv
    return ov[..., :d]


rows_out = []
sizes = [1 << 20] if QUICK else [1 << 16, 1 << 20, 1 << 24]
for size in sizes if WHAT in ("all", "allreduce") else []:
    x = torch.ones(size // 4)
    t_bridge = timed(lambda: sgt.allreduce("ring_allreduce", x))
    t_hand = timed(lambda: hand_ring_allreduce(x))
    t_native = timed(lambda: dist.all_reduce(x))
    rows_out.append(("ring all-reduce", f"{size >> 10} KiB", t_bridge, t_hand, t_native))

seqs = [1024] if QUICK else [1024, 4096]
for seq in seqs if WHAT in ("all", "attention") else []:
    B, H, D = 1, 8, 64
    torch.manual_seed(3)
    q, k, v = (torch.randn(B, H, seq, D) for _ in range(3))
    rr = sgt.layout("zigzag_ring_attention", seq=seq, n=n)[rank]
    idx = torch.cat([torch.arange(a, b) for a, b in rr])
    ql, kl, vl = q[:, :, idx].contiguous(), k[:, :, idx].contiguous(), v[:, :, idx].contiguous()
    a = sgt.attention("zigzag_ring_attention", ql, kl, vl, causal=True)
    h = hand_zigzag_attention(ql, kl, vl)
    err = (a - h).abs().max().item()
    assert err < 1e-5, f"bridge and hand-written zigzag differ by {err}"
    t_bridge = timed(lambda: sgt.attention("zigzag_ring_attention", ql, kl, vl, causal=True))
    t_hand = timed(lambda: hand_zigzag_attention(ql, kl, vl))
    rows_out.append(("zigzag attention", f"seq {seq}, {H}x{D}", t_bridge, t_hand, float("nan")))

if rank == 0:
    print(f"stepgraph.torch vs hand-written torch, N = {n} (gloo, CPU, 1 thread per rank), median of {ITERS}, ms")
    print(f"{'what':18} {'size':16} {'bridge':>9} {'hand':>9} {'ratio':>6} {'dist':>9}")
    for what, size, tb, th, tn in rows_out:
        nat = "" if tn != tn else f"{tn * 1e3:9.3f}"
        print(f"{what:18} {size:16} {tb * 1e3:9.3f} {th * 1e3:9.3f} {tb / th:6.2f} {nat}")
    worst = max(tb / th for _, _, tb, th, _ in rows_out)
    print(f"worst ratio {worst:.2f} (goal <= 1.2)")
