// A rank's local work: copy, reduce and compute steps (a generic compute burns its flops and
// writes the values the interpreter says it leaves; an attention tile computes the real tile),
// on the host or, in device mode, on the device on the current lane; and the reductions of
// received data (the online-softmax merge for partial attention outputs).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include "exec/executor/executor_impl.hpp"
#include "exec/executor/kernels.hpp"
#include "exec/executor/values.hpp"

namespace sg::exec {

// A copy, reduce or compute step's work (in device mode on the device, on the current lane).
void Executor::Impl::local_work(StepId s) {
  cur_step = s;
  Range r = g.range(s);
  switch (g.kind(s)) {
    case StepKind::Copy: {
      Range src = g.copy_source(s);
      if (dev) dev_ok(dev->copy(dptr(r), dptr(src), std::min(bytes(r), bytes(src)), dev_diags), "a device copy", &r);
      else std::memmove(ptr(r), ptr(src), std::min(bytes(r), bytes(src)));
      return;
    }
    case StepKind::Reduce: {
      Range src = g.copy_source(s);
      reduce_range(r, flag_op(g.flags(s)), dev ? dptr(r) : ptr(r), dev ? dptr(src) : ptr(src), elems(src));
      return;
    }
    case StepKind::Compute: {
      auto t0 = Clock::now();
      const ComputeInfo& ci = g.compute(s);
      if (ci.kind != ComputeKind::Generic && att.active) {
        if (do_compute) attention_tile(ci);
        compute_s += std::chrono::duration<double>(Clock::now() - t0).count();
        return;
      }
      if (do_compute) {
        volatile double sink = burn_flops(ci.flops);
        (void)sink;
      }
      // What the interpreter says a generic compute leaves: d(rank, chunk) in every chunk it
      // writes (the step's own new data), here as numbers.
      for (uint32_t i = 0; i < ci.writes_cnt && write_values; ++i) {
        const Range& w = g.ranges[ci.writes_off + i];
        const BufferInfo& bi = g.buffers[w.buf];
        // With lanes the copy up is enqueued, not done: the values go from a buffer of their
        // own that lives until the run ends, never from the mirror a later step rewrites.
        unsigned char* base = bufs[w.buf]->p + uint64_t{w.lo} * bi.chunk_bytes;
        if (lanes) base = lane_values.emplace_back(bytes(w)).data();
        for (uint32_t c = w.lo; c < w.lo + w.cnt; ++c) {
          unsigned char* p = base + uint64_t{c - w.lo} * bi.chunk_bytes;
          for (uint64_t e = 0; e < bi.chunk_elems; ++e) store_any(bi.dtype, p, e, contrib_value(w.buf, me, c, e));
        }
        if (lanes) dev_ok(dev->to_device(dptr(w), base, bytes(w), dev_diags), "a copy to the device", &w);
        else up(w, true);
      }
      compute_s += std::chrono::duration<double>(Clock::now() - t0).count();
      return;
    }
    default: return;
  }
}

// dst op= src over range r (src laid out like r): on the host, or in device mode on the device
// (dst, src device pointers). Chunks whose size is not a multiple of the element size end in
// padding bytes: their elements are reduced chunk by chunk.
void Executor::Impl::reduce_range(const Range& r, ReduceOp rop, unsigned char* dst, const unsigned char* src, uint64_t max_elems) {
  const BufferInfo& bi = g.buffers[r.buf];
  DType t = bi.dtype;
  if (att.active && att.merge[r.buf]) {  // partial attention outputs: the online-softmax merge
    uint64_t n = std::min(bytes(r), max_elems == UINT64_MAX ? UINT64_MAX : max_elems * dtype_size(t));
    if (dev) dev_ok(dev->attention_merge(dst, src, n / ((att.dim + uint64_t{1}) * 4), att.dim, dev_diags), "a merge", &r);
    else merge_rows(att, dst, src, n);
    return;
  }
  auto leaf = [&](unsigned char* d, const unsigned char* x, uint64_t n) {
    if (!dev) {
      reduce_into(t, rop, d, x, n);
      return true;
    }
    return dev_ok(dev->reduce(t, rop, d, x, n, dev_diags), "a reduction", &r);
  };
  if (bi.chunk_bytes % dtype_size(t) == 0) {
    leaf(dst, src, std::min(elems(r), max_elems));
    return;
  }
  for (uint32_t k = 0; k < r.cnt; ++k)
    if (!leaf(dst + k * bi.chunk_bytes, src + k * bi.chunk_bytes, bi.chunk_elems)) return;
}

}  // namespace sg::exec
