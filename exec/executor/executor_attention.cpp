// A rank's attention tiles: each `compute attn` / `attn_bwd` step runs one tile per q chunk of
// its operand range, on the host or, in device mode, on the device on the current lane. Where a
// role's items are declared in another layout than the kernels' (a buffer's `layout`, e.g. bshd
// or sbh2d), the items move into the kernels' layout around the tile, as pitched row blocks
// (cudaMemcpy2D's shape on a GPU: batch × heads blocks an item); an O declared without its lse
// is written through from the O|lse rows exec keeps beside it.
#include <cstring>
#include <string>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

namespace {

// Bytes of one item of role k (q, kv, O, dQ, dKV) in the kernels' layout.
uint64_t kernel_bytes(const AttentionLayout& a, int k) {
  switch (k) {
    case 0: return a.q_bytes;
    case 1: return a.kv_bytes;
    case 2: return a.o_kernel_bytes;
    case 3: return a.dq_bytes;
    default: return a.dkv_bytes;
  }
}

const ItemLayout& role_layout(const AttentionLayout& a, int k) {
  switch (k) {
    case 0: return a.lq;
    case 1: return a.lkv;
    case 2: return a.lo;
    case 3: return a.ldq;
    default: return a.ldkv;
  }
}

}  // namespace

// The scratch items of the roles that are relaid, and the O|lse rows beside every shadowed
// buffer, once after plan_attention (device memory too in device mode).
bool Executor::Impl::setup_attention_memory(Diagnostics& diags) {
  att_shadow.assign(g.buffers.size(), AttnMemory{});
  if (!att.active) return true;
  auto make = [&](AttnMemory& m, uint64_t bytes, const std::string& what) {
    m.host.assign(bytes, 0);
    if (!dev) return true;
    size_t from = diags.size();
    m.dev = dev->allocate(bytes, diags);
    if (!m.dev) diags.locate_from(from, Loc{}, "device memory for " + what + " on " + dev->name() + ": ");
    return m.dev != nullptr;
  };
  for (int k = 0; k < 5; ++k)
    if (!role_layout(att, k).kernel && !make(att_scratch[static_cast<size_t>(k)], kernel_bytes(att, k), "an attention item's relayout"))
      return false;
  for (uint32_t b = 0; b < g.buffers.size(); ++b)
    if (att.shadowed[b] &&
        !make(att_shadow[b], uint64_t{g.buffers[b].chunks} * att.o_kernel_bytes, "the lse rows beside " + g.buffers[b].name))
      return false;
  return true;
}

// One item of role k between its chunk layout and the kernels' (to_kernel: chunk → kernel).
void Executor::Impl::relayout(int role, bool to_kernel, unsigned char* dst, const unsigned char* src) {
  std::vector<RowBlock> blocks = role_blocks(att, role, to_kernel);
  if (!dev) {
    relayout_host(blocks, dst, src);
    return;
  }
  for (const RowBlock& r : blocks)
    if (!dev_ok(dev->copy_2d(dst + r.dst, r.dpitch, src + r.src, r.spitch, r.width, r.rows, dev_diags), "an attention item's relayout",
                nullptr))
      return;
}

void Executor::Impl::attention_tile(const ComputeInfo& ci) {
  const Range& rq = g.ranges[ci.reads_off];
  const Range& rkv = g.ranges[ci.reads_off + 1];
  const Range& w0 = g.ranges[ci.writes_off];
  const bool bwd = ci.kind == ComputeKind::AttnBwd, causal = ci.mask == Mask::Causal;
  auto at = [&](const Range& r) { return dev ? dptr(r) : ptr(r); };
  auto scratch = [&](int k) { return dev ? att_scratch[static_cast<size_t>(k)].dev : att_scratch[static_cast<size_t>(k)].host.data(); };
  // In place where a role is in the kernels' layout; else through its scratch item.
  unsigned char* kv = at(rkv);
  if (att.split_kv) {  // K and V apart: the kernels' kv item is K then V
    relayout(5, true, scratch(1), kv);
    relayout(6, true, scratch(1) + att.kv_bytes / 2, at(g.ranges[ci.reads_off + ci.reads_cnt - 1]));
    kv = scratch(1);
  } else if (!att.lkv.kernel) {
    relayout(1, true, scratch(1), kv), kv = scratch(1);
  }
  unsigned char* dkv_user = bwd ? at(g.ranges[ci.writes_off + 1]) : nullptr;
  unsigned char* dv_user = bwd && att.split_kv ? at(g.ranges[ci.writes_off + 2]) : nullptr;
  unsigned char* dkv = dkv_user;
  if (dv_user) {
    relayout(7, true, scratch(4), dkv_user);
    relayout(8, true, scratch(4) + att.dkv_bytes / 2, dv_user);
    dkv = scratch(4);
  } else if (bwd && !att.ldkv.kernel) {
    relayout(4, true, scratch(4), dkv_user), dkv = scratch(4);
  }
  const uint64_t qb = g.buffers[rq.buf].chunk_bytes, ob = g.buffers[w0.buf].chunk_bytes;
  const int out_role = bwd ? 3 : 2;
  const bool shadowed = !bwd && att.shadowed[w0.buf];
  for (uint32_t k = 0; k < rq.cnt && !failed(); ++k) {
    unsigned char* q = at(rq) + uint64_t{k} * qb;
    if (!att.lq.kernel) relayout(0, true, scratch(0), q), q = scratch(0);
    unsigned char* out_user = at(w0) + uint64_t{k} * ob;
    unsigned char* out = out_user;
    if (shadowed) {
      AttnMemory& sh = att_shadow[w0.buf];
      out = (dev ? sh.dev : sh.host.data()) + uint64_t{w0.lo + k} * att.o_kernel_bytes;
    } else if (!role_layout(att, out_role).kernel) {
      relayout(out_role, true, scratch(out_role), out_user), out = scratch(out_role);
    }
    if (dev) {  // device mode: the device's kernels on the device buffers
      DeviceOps::AttentionTile t;
      t.q = q, t.kv = kv, t.out0 = out, t.out1 = dkv;
      t.batch = att.tile.batch, t.heads = att.tile.heads, t.rows_q = att.tile.rows_q, t.rows_k = att.tile.rows_k, t.dim = att.dim;
      t.bf16 = att.bf16, t.backward = bwd, t.causal = causal, t.scale = att.scale;
      if (!dev_ok(dev->attention_tile(t, dev_diags), "an attention tile", &rq)) return;
    } else {
      run_attention_tile(att, bwd, causal, q, kv, out, dkv);
    }
    if (out != out_user) relayout(out_role, false, out_user, out);
  }
  if (dv_user) {
    relayout(7, false, dkv_user, dkv);
    relayout(8, false, dv_user, dkv + att.dkv_bytes / 2);
  } else if (dkv != dkv_user) {
    relayout(4, false, dkv_user, dkv);
  }
}

}  // namespace sg::exec
