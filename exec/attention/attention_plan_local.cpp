// This rank's part of plan_attention: the attention layout read off its graph (the expect's
// buffers, their declared shapes, layouts and types, else the parameters) and every attention
// tile checked against it. The longest part of the plan and free of collectives, so apart from
// plan_attention (exec/attention/attention_plan.cpp), which agrees on the merge buffers across ranks.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "exec/attention/attention_exec.hpp"
#include "exec/attention/attention_plan.hpp"

namespace sg::exec {

namespace {

using Role = AttnRole;
using Dims = ItemDims;
bool is_input(Role r) { return r == Role::Q || r == Role::Bundle || r == Role::KV || r == Role::K || r == Role::V; }

bool param(const StepGraph& g, const char* name, int64_t& v) {
  for (const auto& [n, x] : g.params)
    if (n == name) return v = x, true;
  return false;
}

std::string shape_text(const AttentionLayout& a) {
  return "batch " + std::to_string(a.tile.batch) + " × " + std::to_string(a.tile.heads) + " head" + (a.tile.heads == 1 ? "" : "s") + " × " +
         std::to_string(a.tile.rows_q) + " rows × dim " + std::to_string(a.dim) + ", " + (a.bf16 ? "bf16" : "fp32") + " inputs";
}

// Whether buffer b's chunks have the size an item of `role` needs; else a message at the buffer.
bool chunk_fits(const StepGraph& g, uint32_t b, uint64_t want, const char* role, const AttentionLayout& a, Diagnostics& diags) {
  const BufferInfo& bi = g.buffers[b];
  if (bi.chunk_bytes == want) return true;
  diags.error(
      bi.loc,
      "buffer " + bi.name + " holds " + role + " items: a chunk of " + std::to_string(bi.chunk_bytes) + " bytes, but one item (" +
          shape_text(a) + ") is " + std::to_string(want) +
          " bytes; exec lays attention tiles out from the buffers' declared shape and dtype, else from the parameters seq, heads, dim, "
          "batch and elem");
  return false;
}

}  // namespace

namespace attention_detail {

bool plan_local(const StepGraph& g, AttentionLayout& a, Diagnostics& diags) {
  Loc where;  // what a refusal points at: set before the checks that refuse there
  auto refuse = [&](const std::string& message) {
    diags.error(where, message);
    return false;
  };
  const Expectation* x = nullptr;
  for (const Expectation& e : g.expects)
    if (e.kind == ExpectKind::Attention || e.kind == ExpectKind::AttentionBackward) x = &e;
  StepId first_tile = kNoStep;
  for (StepId s = 0; s < g.size() && first_tile == kNoStep; ++s)
    if (g.kind(s) == StepKind::Compute && g.compute(s).kind != ComputeKind::Generic) first_tile = s;
  if (!x && first_tile == kNoStep) return true;  // another rank's tiles: this one only takes part
  auto at = [&](StepId s) {
    where = g.loc(s);
    return std::string();
  };
  if (!x) {
    return refuse(at(first_tile) +
                  "exec computes attention tiles with the layout of the schedule's `expect attention(…)` or "
                  "`expect attention_backward(…)`, and this schedule has none");
  }
  a.backward = x->kind == ExpectKind::AttentionBackward;
  a.causal = x->mask == Mask::Causal;
  a.groups = std::max<uint32_t>(1, x->heads);
  a.q = x->bufs[0];
  a.kv = x->bufs[1];
  a.out0 = x->bufs[2];
  if (a.backward) a.out1 = x->bufs[3];
  a.split_kv = x->split_kv;
  a.v = x->v;
  a.dv = x->dv;
  const Loc expect_loc = x->stmt < g.stmt_locs.size() ? g.stmt_locs[x->stmt] : Loc{};
  where = expect_loc;
  if (a.q.cnt == 0 || a.q.cnt % a.groups || a.kv.cnt != a.q.cnt) {
    return refuse("the attention expect needs Q and KV with the same number of items, a multiple of its heads (" +
                  std::to_string(a.groups) + ")");
  }
  a.blocks = a.q.cnt / a.groups;
  // The expect's buffers in their roles: inputs first (Q, KV or K and V), then outputs.
  std::vector<std::pair<uint32_t, Role>> roles = {{a.q.buf, a.backward ? Role::Bundle : Role::Q}};
  if (a.split_kv) roles.insert(roles.end(), {{a.kv.buf, Role::K}, {a.v.buf, Role::V}});
  else roles.push_back({a.kv.buf, Role::KV});
  const size_t ninputs = roles.size();
  if (!a.backward) roles.push_back({a.out0.buf, Role::O});
  else if (a.split_kv) roles.insert(roles.end(), {{a.out0.buf, Role::DQ}, {a.out1.buf, Role::DK}, {a.dv.buf, Role::DV}});
  else roles.insert(roles.end(), {{a.out0.buf, Role::DQ}, {a.out1.buf, Role::DKV}});
  const size_t nroles = roles.size();
  auto index_of = [&](Role r) {
    for (size_t i = 0; i < nroles; ++i)
      if (roles[i].second == r) return i;
    return nroles;
  };

  // The input type: Q's and KV's declared dtype, else the parameter elem, else fp32.
  int64_t elem = 4;
  bool has_elem = param(g, "elem", elem);
  const BufferInfo* typed = nullptr;
  for (size_t i = 0; i < ninputs; ++i) {
    const BufferInfo& b = g.buffers[roles[i].first];
    if (!b.dtype_declared) continue;
    where = b.dtype_loc;
    if (b.dtype != DType::BF16 && b.dtype != DType::F32) {
      return refuse("buffer " + b.name + " holds attention inputs (" + attn_role_name(roles[i].second) + "), declared " +
                    dtype_name(b.dtype) + "; exec stores them as bf16 or f32");
    }
    if (typed && typed->dtype != b.dtype) {
      return refuse("buffer " + b.name + " is declared " + dtype_name(b.dtype) + " but " + typed->name + " " + dtype_name(typed->dtype) +
                    ": q and kv of one attention have one input type");
    }
    if (has_elem && elem != dtype_size(b.dtype)) {
      return refuse("buffer " + b.name + " is declared " + dtype_name(b.dtype) + ", but the parameter elem = " + std::to_string(elem) +
                    " says " +
                    (elem == 2   ? "bf16"
                     : elem == 4 ? "fp32"
                                 : "another type") +
                    " inputs; the declaration gives the input type, so drop elem or make it agree");
    }
    typed = &b;
  }
  if (typed) {
    a.bf16 = typed->dtype == DType::BF16;
  } else if (elem != 2 && elem != 4) {
    where = expect_loc;
    return refuse("exec stores attention inputs as bf16 (elem = 2) or fp32 (elem = 4), not elem = " + std::to_string(elem));
  } else {
    a.bf16 = elem == 2;
  }
  for (size_t i = ninputs; i < nroles; ++i) {
    const BufferInfo& b = g.buffers[roles[i].first];
    if (!b.dtype_declared || b.dtype == DType::F32) continue;
    where = b.dtype_loc;
    return refuse("buffer " + b.name + " holds attention outputs (" + attn_role_name(roles[i].second) + "), declared " +
                  dtype_name(b.dtype) + "; exec computes them in f32");
  }

  // The tile's dimensions: from the expect's buffers' declared shapes (the first one that has
  // one; the others must agree), else from the parameters seq, heads, dim, batch.
  // Each role's layout is its expect buffer's (the kernels' where it declares none).
  Dims decl;
  const BufferInfo* shaped = nullptr;
  Role shaped_role = Role::Q;
  std::vector<ItemLayout> declared(nroles);
  std::vector<uint8_t> has_shape(nroles, 0);
  for (size_t i = 0; i < nroles; ++i) {
    const BufferInfo& b = g.buffers[roles[i].first];
    if (b.shape.empty()) continue;
    Dims d;
    where = b.layout.empty() ? b.shape_loc : b.layout_loc;
    int64_t dim_param = 0;
    uint64_t known_dim = shaped ? decl.dim : param(g, "dim", dim_param) && dim_param > 0 ? static_cast<uint64_t>(dim_param) : 0;
    if (!read_item_layout(b, roles[i].second, known_dim, d, declared[i], diags)) return false;
    has_shape[i] = 1;
    if (shaped && !(d == decl)) {
      return refuse("buffer " + b.name + "'s chunk shape " + shape_list(b.shape) + " is " + attn_role_name(roles[i].second) + " of " +
                    dims_text(d) + ", but " + shaped->name + "'s " + shape_list(shaped->shape) + " is of " + dims_text(decl));
    }
    if (!shaped) decl = d, shaped = &b, shaped_role = roles[i].second;
  }
  int64_t seq = 0, heads = 0, dim = 0, batch = 1;
  std::string missing;
  for (auto [name, v] : {std::pair<const char*, int64_t*>{"seq", &seq}, {"heads", &heads}, {"dim", &dim}, {"batch", &batch}}) {
    bool has = param(g, name, *v);
    if (shaped) {
      const Dims& d = decl;
      uint64_t from_shape = *name == 's' ? d.rows * a.blocks : *name == 'h' ? d.heads * a.groups : *name == 'd' ? d.dim : d.batch;
      if (has && static_cast<uint64_t>(*v) != from_shape) {
        where = shaped->shape_loc;
        return refuse("buffer " + shaped->name + "'s chunk shape " + shape_list(shaped->shape) + ", read as " +
                      role_layout_text(shaped_role, *shaped) + ", gives " + name + " = " + std::to_string(from_shape) +
                      ", but the parameter " + name + " = " + std::to_string(*v));
      }
      *v = static_cast<int64_t>(from_shape);
    } else if (!has && *name != 'b') {
      missing += std::string(missing.empty() ? "" : ", ") + name;
    }
  }
  where = expect_loc;
  if (!missing.empty()) {
    return refuse(
        "exec computes attention tiles from the schedule's parameters seq, heads, dim (and batch, elem) or from the chunk shapes its "
        "buffers declare (shape [batch, heads, rows, dim]); " +
        g.schedule + " has no " + missing + ", and none of " + g.buffers[a.q.buf].name + ", " + g.buffers[a.kv.buf].name +
        " declares a shape");
  }
  auto positive = [&](const char* n, int64_t v) {
    if (v >= 1 && v <= (int64_t{1} << 30)) return true;
    return refuse(std::string("attention parameter ") + n + " = " + std::to_string(v) + " is out of range");
  };
  if (!positive("seq", seq) || !positive("heads", heads) || !positive("dim", dim) || !positive("batch", batch)) return false;
  if (seq % a.blocks || heads % a.groups) {
    return refuse("seq = " + std::to_string(seq) + " does not split into " + std::to_string(a.blocks) +
                  " blocks, or heads = " + std::to_string(heads) + " into " + std::to_string(a.groups) + " head groups");
  }
  // Every chunk size below fits 64 bits with room (and exec could not allocate more anyway).
  if (static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seq) * static_cast<double>(dim + 2) * 8 > 1e18) {
    return refuse("seq × heads × dim × batch is too large to execute");
  }
  a.seq = static_cast<uint32_t>(seq);
  a.heads = static_cast<uint32_t>(heads);
  a.dim = static_cast<uint32_t>(dim);
  a.batch = static_cast<uint32_t>(batch);
  auto rows = static_cast<uint32_t>(seq / a.blocks);
  a.tile = TileShape{a.batch, a.heads / a.groups, rows, rows, a.dim};
  a.scale = 1.0f / std::sqrt(static_cast<float>(a.dim));
  uint64_t rows_all = uint64_t{a.batch} * a.tile.heads * rows;
  uint64_t e = a.bf16 ? 2 : 4;
  a.q_bytes = a.backward ? rows_all * (2 * a.dim * e + 8) : rows_all * a.dim * e;
  a.kv_bytes = 2 * rows_all * a.dim * e;
  const Dims item{a.batch, a.tile.heads, rows, a.dim};
  auto role_item = [&](Role r, bool two, uint32_t kw) {
    size_t i = index_of(r);
    bool shaped_here = i < nroles && has_shape[i];
    ItemLayout L = shaped_here ? declared[i] : kernel_layout(item, two, kw);
    if (!shaped_here) L.kernel = true;
    return L;
  };
  if (a.split_kv) {
    // K and V apart: each read like q; the tiles get them (and give dK, dV) as one kv item in
    // the kernels' layout, K then V, so kv and dkv are never in place.
    a.lk = role_item(Role::K, false, a.dim);
    a.lv = role_item(Role::V, false, a.dim);
    a.lkv.kernel = false;
    if (a.backward) {
      a.ldk = role_item(Role::DK, false, a.dim);
      a.ldv = role_item(Role::DV, false, a.dim);
      a.ldkv.kernel = false;
    }
  } else {
    a.lkv = role_item(Role::KV, true, a.dim);
    if (a.backward) a.ldkv = role_item(Role::DKV, true, a.dim);
  }
  if (a.backward) {
    a.ldq = role_item(Role::DQ, false, a.dim);
  } else {
    a.lq = role_item(Role::Q, false, a.dim);
    a.lo = role_item(Role::O, false, a.dim + 1);
    if (!has_shape[index_of(Role::O)]) a.lo.lse = true;
  }
  a.o_kernel_bytes = rows_all * (a.dim + uint64_t{1}) * 4;
  a.o_bytes = a.lo.lse || a.backward ? a.o_kernel_bytes : rows_all * a.dim * 4;
  a.dq_bytes = rows_all * a.dim * 4;
  a.dkv_bytes = 2 * rows_all * a.dim * 4;
  if (!chunk_fits(g, a.q.buf, a.q_bytes, a.backward ? "q bundle (q, dO, lse, D)" : "q", a, diags)) return false;
  if (a.split_kv ? !chunk_fits(g, a.kv.buf, a.kv_bytes / 2, "k", a, diags) || !chunk_fits(g, a.v.buf, a.kv_bytes / 2, "v", a, diags)
                 : !chunk_fits(g, a.kv.buf, a.kv_bytes, "kv", a, diags))
    return false;
  if (a.backward ? !chunk_fits(g, a.out0.buf, a.dq_bytes, "dq", a, diags) ||
                       (a.split_kv ? !chunk_fits(g, a.out1.buf, a.dkv_bytes / 2, "dk", a, diags) ||
                                         !chunk_fits(g, a.dv.buf, a.dkv_bytes / 2, "dv", a, diags)
                                   : !chunk_fits(g, a.out1.buf, a.dkv_bytes, "dkv", a, diags))
                 : !chunk_fits(g, a.out0.buf, a.o_bytes, a.lo.lse ? "O|lse" : "O", a, diags))
    return false;

  const Dims layout = item;
  auto role_of = [&](Role r) -> const ItemLayout& {
    switch (r) {
      case Role::KV: return a.lkv;
      case Role::O: return a.lo;
      case Role::DQ: return a.ldq;
      case Role::DKV: return a.ldkv;
      case Role::K: return a.lk;
      case Role::V: return a.lv;
      case Role::DK: return a.ldk;
      case Role::DV: return a.ldv;
      default: return a.lq;
    }
  };

  // Every tile's operands and outputs, and the merge buffers.
  a.merge.assign(g.buffers.size(), 0);
  a.shadowed.assign(g.buffers.size(), 0);
  // The forward's outputs: merged with their lse, or kept beside an O without one.
  std::vector<uint8_t>& outs = a.backward || a.lo.lse ? a.merge : a.shadowed;
  if (!a.backward) outs[a.out0.buf] = 1;
  for (StepId s = 0; s < g.size(); ++s) {
    if (g.kind(s) != StepKind::Compute) continue;
    const ComputeInfo& ci = g.compute(s);
    if (ci.kind == ComputeKind::Generic) continue;
    bool bwd = ci.kind == ComputeKind::AttnBwd;
    if (bwd != a.backward) {
      return refuse(at(s) + "a " + (bwd ? "backward" : "forward") + " attention tile in a schedule whose expect is " +
                    (a.backward ? "attention_backward" : "attention") + ": exec cannot give it inputs");
    }
    if (ci.split_kv != a.split_kv) {
      return refuse(at(s) +
                    (ci.split_kv ? "this tile takes K and V apart, but the expect one KV buffer"
                                 : "this tile takes one KV operand, but the expect K and V apart") +
                    ": exec gives tiles the expect's items");
    }
    const Range& rq = g.ranges[ci.reads_off];
    const Range& rkv = g.ranges[ci.reads_off + 1];
    const Range& w0 = g.ranges[ci.writes_off];
    const Range& rv = g.ranges[ci.reads_off + ci.reads_cnt - 1];  // (split_kv)
    // A declared dtype or shape of an operand must be the item's, as the expect's buffers are.
    auto declared_fits = [&](const Range& r, Role role) {
      const BufferInfo& b = g.buffers[r.buf];
      DType want = is_input(role) && a.bf16 ? DType::BF16 : DType::F32;
      std::string line = std::to_string(g.loc(s).line);
      if (b.dtype_declared && b.dtype != want) {
        where = b.dtype_loc;
        return refuse("buffer " + b.name + " is declared " + dtype_name(b.dtype) + ", but the tile at line " + line + " uses it as " +
                      attn_role_name(role) + ", whose items are " + dtype_name(want));
      }
      if (b.shape.empty()) return true;  // bytes: laid out as its role's items are
      Dims d;
      ItemLayout L;
      where = b.layout.empty() ? b.shape_loc : b.layout_loc;
      if (!read_item_layout(b, role, a.dim, d, L, diags)) return false;
      if (!(d == layout)) {
        return refuse("buffer " + b.name + "'s chunk shape " + shape_list(b.shape) + " is " + attn_role_name(role) + " of " + dims_text(d) +
                      ", but the tile at line " + line + " uses it as an item of " + dims_text(layout));
      }
      const ItemLayout& want_l = role_of(role);
      if (role == Role::Bundle || (L.same_place(want_l) && L.lse == want_l.lse)) return true;
      return refuse("buffer " + b.name + " lays out its " + attn_role_name(role) + " items as " + role_layout_text(role, b) +
                    ", but the expect's " + attn_role_name(role) + " buffer as " +
                    (want_l.letters.empty() ? std::string("the kernels' layout") : "layout " + want_l.letters) +
                    "; data moves between buffers as bytes, so every buffer of one role has one layout");
    };
    if (!declared_fits(rq, bwd ? Role::Bundle : Role::Q) || !declared_fits(rkv, a.split_kv ? Role::K : Role::KV) ||
        (a.split_kv && !declared_fits(rv, Role::V)) || !declared_fits(w0, bwd ? Role::DQ : Role::O) ||
        (bwd && !declared_fits(g.ranges[ci.writes_off + 1], a.split_kv ? Role::DK : Role::DKV)) ||
        (bwd && a.split_kv && !declared_fits(g.ranges[ci.writes_off + 2], Role::DV)))
      return false;
    auto fits = [&](const Range& r, uint64_t want, const char* what) {
      if (g.buffers[r.buf].chunk_bytes == want) return true;
      return refuse(at(s) + "this tile's " + what + " operand " + g.range_name(r) + " has chunks of " +
                    std::to_string(g.buffers[r.buf].chunk_bytes) + " bytes; an item of this layout (" + shape_text(a) + ") is " +
                    std::to_string(want));
    };
    const uint64_t kv_part = a.split_kv ? a.kv_bytes / 2 : a.kv_bytes, dkv_part = a.split_kv ? a.dkv_bytes / 2 : a.dkv_bytes;
    if (!fits(rq, a.q_bytes, "q") || !fits(rkv, kv_part, a.split_kv ? "k" : "kv") || (a.split_kv && !fits(rv, kv_part, "v")) ||
        !fits(w0, bwd ? a.dq_bytes : a.o_bytes, bwd ? "dq" : "output"))
      return false;
    if (bwd && !fits(g.ranges[ci.writes_off + 1], dkv_part, a.split_kv ? "dk" : "dkv")) return false;
    if (bwd && a.split_kv && !fits(g.ranges[ci.writes_off + 2], dkv_part, "dv")) return false;
    if (!bwd) outs[w0.buf] = 1;
  }
  // An O without its lse column cannot carry a partial output anywhere: only this rank's tiles
  // may touch it (exec keeps the lse beside it, in no message).
  for (StepId s = 0; s < g.size() && !a.backward && !a.lo.lse; ++s) {
    StepKind k = g.kind(s);
    if (k == StepKind::Compute && g.compute(s).kind != ComputeKind::Generic) continue;
    uint32_t touched = UINT32_MAX;
    if (k == StepKind::Copy || k == StepKind::Reduce) {
      if (a.shadowed[g.copy_source(s).buf]) touched = g.copy_source(s).buf;
      if (a.shadowed[g.range(s).buf]) touched = g.range(s).buf;
    } else if (k == StepKind::Compute) {
      const ComputeInfo& ci = g.compute(s);
      for (uint32_t i = 0; i < ci.reads_cnt; ++i)
        if (a.shadowed[g.ranges[ci.reads_off + i].buf]) touched = g.ranges[ci.reads_off + i].buf;
      for (uint32_t i = 0; i < ci.writes_cnt; ++i)
        if (a.shadowed[g.ranges[ci.writes_off + i].buf]) touched = g.ranges[ci.writes_off + i].buf;
    } else if (k != StepKind::Wait) {
      if (g.range(s).cnt && a.shadowed[g.range(s).buf]) touched = g.range(s).buf;
      if (k == StepKind::Collective && g.coll(s).into.cnt && a.shadowed[g.coll(s).into.buf]) touched = g.coll(s).into.buf;
    }
    if (touched == UINT32_MAX) continue;
    where = g.loc(s);
    return refuse("this step moves or merges " + g.buffers[touched].name +
                  ", which holds partial attention outputs O declared without their lse (" +
                  role_layout_text(Role::O, g.buffers[a.out0.buf]) + " with rows of dim = " + std::to_string(a.dim) +
                  "): a partial output merges only with its row's log-sum-exp, so declare O's rows as dim + 1 (the lse last) to move them");
  }
  return true;
}

}  // namespace attention_detail

}  // namespace sg::exec
