#!/usr/bin/env python3
"""The card's own attention, for bench/gpu_run.sh: PyTorch's scaled_dot_product_attention on the
shapes stepgraph's tiles and ring attention run, timed with CUDA events, as TFLOP/s in the count
stepgraph's exec prints (FlashAttention's: 4*batch*heads*seq^2*dim, halved for a causal mask, the
backward 2.5 times the forward, so fwd+bwd is 3.5 times).

Each of PyTorch's backends is tried on its own (flash, cuDNN, memory-efficient) and the default
dispatch beside them; a backend the installed build or the card lacks prints why in its row.
Prints markdown rows. Needs a CUDA build of PyTorch >= 2.3 (torch.nn.attention.sdpa_kernel).

    python3 bench/sdpa_anchor.py [--quick]
"""
import contextlib
import sys
import time

import torch
import torch.nn.functional as F

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # older PyTorch: the default dispatch only
    SDPBackend = None


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / 1e3 / iters


def row(label, backend, batch, heads, seq, dim, causal, dtype, iters):
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    go = torch.randn(batch, heads, seq, dim, device="cuda", dtype=dtype)
    fwd_flops = 4.0 * batch * heads * seq * seq * dim / (2 if causal else 1)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        o.backward(go)

    name = "default" if backend is None else backend.name.lower().replace("_attention", "")
    ctx = sdpa_kernel([backend]) if backend is not None else contextlib.nullcontext()
    try:
        with ctx:
            tf = timed(fwd, iters, 2)
            tfb = timed(fwd_bwd, iters, 2)
        print(f"| {label} | {name} | {batch}x{heads}x{seq}x{dim} | {str(dtype).replace('torch.', '')} | "
              f"{'causal' if causal else 'full'} | {fwd_flops / tf / 1e12:.1f} | {3.5 * fwd_flops / tfb / 1e12:.1f} |",
              flush=True)
    except Exception as e:  # a backend this build or card does not have
        msg = str(e).strip().splitlines()[0][:90] if str(e).strip() else type(e).__name__
        print(f"| {label} | {name} | {batch}x{heads}x{seq}x{dim} | {str(dtype).replace('torch.', '')} | "
              f"{'causal' if causal else 'full'} | - | - | ({msg}) |", flush=True)
    del q, k, v, go
    torch.cuda.empty_cache()


def main():
    quick = "--quick" in sys.argv
    if not torch.cuda.is_available():
        print("sdpa_anchor: no CUDA device for PyTorch: nothing measured")
        return 0
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}, cuDNN {torch.backends.cudnn.version()}")
    print("\n| shape | backend | batch x heads x seq x dim | dtype | mask | fwd TFLOP/s | fwd+bwd TFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    backends = [None]
    if SDPBackend is not None:
        backends += [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    t0 = time.time()
    # The tile bench_gpu times (32 planes of 4096 rows, dim 128), then the whole sequence exec's
    # ring attention covers (seq 32K, 32 heads): what a ring over one GPU should approach.
    shapes = [("tile", 1, 32, 4096, 128)] + ([] if quick else [("whole 32K", 1, 32, 32768, 128)])
    for label, b, h, s, d in shapes:
        for causal in (True, False):
            for be in backends:
                row(label, be, b, h, s, d, causal, torch.bfloat16, 5 if s > 8192 else 20)
    print(f"\nsdpa_anchor: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
