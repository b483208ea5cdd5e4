// What the buffers start with and what they should end with: this rank's initial values from the
// init rules, fill_inputs (numbers for items and contributions, real q / kv for attention), the
// check against the postcondition, the attention outputs for the attention check, and the copies
// of every buffer between the device and the host mirrors around them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/interp/postcondition.hpp"
#include "exec/executor/executor_impl.hpp"
#include "exec/executor/values.hpp"

namespace sg::exec {

// This rank's initial value of chunk c of buffer b, from the init rules (apply_inits' rules,
// for one rank): d(me, c), x(c), or undefined.
Value Executor::Impl::initial_value(uint32_t b, uint32_t c) const {
  Value v;
  for (const InitRule& r : g.inits) {
    const Range& rg = r.range;
    if (rg.buf != b || c < rg.lo || c >= rg.lo + rg.cnt) continue;
    switch (r.kind) {
      case InitKind::Contrib:
        if (g.groups[r.group].index_of(me) >= 0) v = Value::contrib(b, me, c);
        break;
      case InitKind::Owned: {
        const GroupInfo& gr = g.groups[r.group];
        uint32_t per = gr.count ? rg.cnt / gr.count : 0;
        int64_t k = gr.index_of(me);
        if (k >= 0 && per && c >= rg.lo + static_cast<uint32_t>(k) * per && c < rg.lo + (static_cast<uint32_t>(k) + 1) * per)
          v = Value::item(b, c);
        break;
      }
      case InitKind::OnRank:
        if (r.rank == me) v = Value::item(b, c);
        break;
    }
  }
  return v;
}

bool Executor::Impl::fill_inputs() {
  cur_step = kNoStep;  // (a failed copy here is no step's)
  for (uint32_t b = 0; b < g.buffers.size(); ++b) {
    const BufferInfo& bi = g.buffers[b];
    std::memset(bufs[b]->p, 0, bufs[b]->size);
    bool merge = att.active && att.merge[b];
    if (merge) clear_merge_rows(att, bufs[b]->p, uint64_t{bi.chunks} * bi.chunk_bytes);  // empty outputs: lse = -inf
    if (att.active && att.shadowed[b]) {  // an O without its lse: the rows kept beside it start empty
      AttnMemory& sh = att_shadow[b];
      clear_merge_rows(att, sh.host.data(), sh.host.size());
      if (dev) dev_ok(dev->to_device(sh.dev, sh.host.data(), sh.host.size(), dev_diags), "a copy to the device", nullptr);
    }
    for (uint32_t c = 0; c < bi.chunks; ++c) {
      Value v = initial_value(b, c);
      if (!v.defined) continue;
      unsigned char* p = bufs[b]->p + uint64_t{c} * bi.chunk_bytes;
      if (att.active && (b == att.q.buf || b == att.kv.buf || (att.split_kv && b == att.v.buf))) {
        // Attention inputs: real q / kv (or the backward's bundle; K or V apart) for the item the chunk holds.
        const Range& in = b == att.q.buf ? att.q : b == att.kv.buf ? att.kv : att.v;
        int64_t item = v.single_item(b);
        if (item >= in.lo && item < int64_t{in.lo} + in.cnt) {
          auto rel = static_cast<uint32_t>(item - in.lo);
          if (att.split_kv && b != att.q.buf) fill_attention_half(att, b == att.v.buf, rel, p);
          else fill_attention_item(att, b == att.q.buf, rel, p);
          continue;
        }
      }
      double x = 0;
      for (uint64_t e = 0; e < bi.chunk_elems; ++e)
        if (evaluate(v, ReduceOp::Sum, e, x)) store_any(bi.dtype, p, e, x);
    }
  }
  up_all();  // device mode: the inputs are filled on the host mirrors, then copied over
  return !dev_failure;
}

CheckResult Executor::Impl::compare_expected() const {
  CheckResult r;
  if (!initial) {
    initial = std::make_unique<MachineState>(g);
    initial->apply_inits(g);
  }
  for_each_expected(g, *initial, [&](const Expectation&, uint32_t rank, uint32_t buf, uint32_t chunk, const Value& want) {
    if (rank != me) return;
    const BufferInfo& bi = g.buffers[buf];
    const unsigned char* p = bufs[buf]->p + uint64_t{chunk} * bi.chunk_bytes;
    double x = 0;
    for (uint64_t e = 0; e < bi.chunk_elems; ++e) {
      if (!evaluate(want, op, e, x)) {
        r.unchecked += bi.chunk_elems - e;
        return;
      }
      double got = load_any(bi.dtype, p, e);
      if (bi.dtype == DType::I8 || bi.dtype == DType::U8 || bi.dtype == DType::F16 || bi.dtype == DType::BF16) {
        // the expected value in the type itself (wrapping bytes, a half's rounding)
        unsigned char tmp[8];
        store_any(bi.dtype, tmp, 0, x);
        x = load_any(bi.dtype, tmp, 0);
      }
      ++r.checked;
      bool same = got == x || (std::fabs(x) >= 16777216.0 && std::fabs(got - x) <= 1e-6 * std::fabs(x));
      if (!same) {
        if (r.wrong == 0)
          r.first = "rank " + std::to_string(me) + " " + g.chunk_name(buf, chunk) + " element " + std::to_string(e) + ": expected " +
                    std::to_string(x) + ", got " + std::to_string(got);
        ++r.wrong;
      }
    }
  });
  return r;
}

// This rank's output items for the attention check: the O (or dQ) chunk beside each q item it
// started with, and with a backward the dKV chunk beside each kv item (the postcondition's
// owners, core/interp/postcondition.cpp), each in the kernels' layout (relaid where its role is
// declared otherwise; an O without its lse gets the lse exec kept beside it).
std::vector<AttentionOutput> Executor::Impl::attention_outputs() {
  std::vector<AttentionOutput> out;
  att_items.clear();
  auto add = [&](const Range& in, const Range& res, uint32_t role) {
    const int kind = att.backward ? (role == 0 ? 3 : 4) : 2;
    const ItemLayout& L = kind == 2 ? att.lo : kind == 3 ? att.ldq : att.ldkv;
    uint64_t kbytes = kind == 2 ? att.o_kernel_bytes : kind == 3 ? att.dq_bytes : att.dkv_bytes;
    for (uint32_t c = in.lo; c < in.lo + in.cnt; ++c) {
      int64_t item = initial_value(in.buf, c).single_item(in.buf);
      if (item < in.lo || item >= int64_t{in.lo} + in.cnt) continue;
      Range at{res.buf, res.lo + (c - in.lo), 1};
      const unsigned char* data = ptr(at);
      if (!L.kernel) {
        std::vector<unsigned char>& k = att_items.emplace_back(kbytes);
        if (kind == 2 && att.shadowed[res.buf]) {
          AttnMemory& sh = att_shadow[res.buf];
          uint64_t off = uint64_t{at.lo} * att.o_kernel_bytes;
          if (dev) dev_ok(dev->to_host(sh.host.data() + off, sh.dev + off, att.o_kernel_bytes, dev_diags), "a copy to the host", &at);
          std::memcpy(k.data(), sh.host.data() + off, kbytes);
        }
        if (kind == 4 && att.split_kv) {  // dK and dV apart: the two halves of the kernels' dkv item
          relayout_host(role_blocks(att, 7, true), k.data(), data);
          relayout_host(role_blocks(att, 8, true), k.data() + att.dkv_bytes / 2, ptr(Range{att.dv.buf, att.dv.lo + (c - in.lo), 1}));
        } else {
          relayout_host(role_blocks(att, kind, true), k.data(), data);
        }
        data = k.data();
      }
      out.push_back({role, static_cast<uint32_t>(item - in.lo), data});
    }
  };
  add(att.q, att.out0, 0);
  if (att.backward) add(att.kv, att.out1, 1);
  return out;
}

// The whole of every buffer, both ways (inputs filled on the host; the check reads the host),
// whatever the transport.
void Executor::Impl::down_all() {
  cur_step = kNoStep;
  for (uint32_t b = 0; b < g.buffers.size() && dev; ++b) down(Range{b, 0, g.buffers[b].chunks}, true);
}

void Executor::Impl::up_all() {
  cur_step = kNoStep;
  for (uint32_t b = 0; b < g.buffers.size() && dev; ++b) up(Range{b, 0, g.buffers[b].chunks}, true);
}

}  // namespace sg::exec
