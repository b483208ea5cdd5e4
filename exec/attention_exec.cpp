#include "exec/attention_exec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "core/dsl/diagnostics.hpp"
#include "exec/half.hpp"
#include "exec/mpi_types.hpp"

namespace sg::exec {

namespace {

using Role = AttnRole;
using Dims = ItemDims;
bool is_input(Role r) { return r == Role::Q || r == Role::Bundle || r == Role::KV || r == Role::K || r == Role::V; }

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
enum : uint32_t { kTagQ = 1, kTagKV = 2, kTagDO = 3 };

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
bool chunk_fits(const StepGraph& g, uint32_t b, uint64_t want, const char* role, const AttentionLayout& a, Loc& where, std::string& err) {
  const BufferInfo& bi = g.buffers[b];
  if (bi.chunk_bytes == want) return true;
  where = bi.loc;
  err = "buffer " + bi.name + " holds " + role + " items: a chunk of " + std::to_string(bi.chunk_bytes) + " bytes, but one item (" +
        shape_text(a) + ") is " + std::to_string(want) +
        " bytes; exec lays attention tiles out from the buffers' declared shape and dtype, else from the parameters seq, heads, dim, "
        "batch and elem";
  return false;
}

// This rank's part of plan_attention, without collectives (so that a rank that refuses still
// takes part in the ones that follow).
bool plan_local(const StepGraph& g, AttentionLayout& a, Loc& where, std::string& err) {
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
    err = at(first_tile) +
          "exec computes attention tiles with the layout of the schedule's `expect attention(…)` or "
          "`expect attention_backward(…)`, and this schedule has none";
    return false;
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
    err = "the attention expect needs Q and KV with the same number of items, a multiple of its heads (" + std::to_string(a.groups) + ")";
    return false;
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
      err = "buffer " + b.name + " holds attention inputs (" + attn_role_name(roles[i].second) + "), declared " + dtype_name(b.dtype) +
            "; exec stores them as bf16 or f32";
      return false;
    }
    if (typed && typed->dtype != b.dtype) {
      err = "buffer " + b.name + " is declared " + dtype_name(b.dtype) + " but " + typed->name + " " + dtype_name(typed->dtype) +
            ": q and kv of one attention have one input type";
      return false;
    }
    if (has_elem && elem != dtype_size(b.dtype)) {
      err = "buffer " + b.name + " is declared " + dtype_name(b.dtype) + ", but the parameter elem = " + std::to_string(elem) + " says " +
            (elem == 2   ? "bf16"
             : elem == 4 ? "fp32"
                         : "another type") +
            " inputs; the declaration gives the input type, so drop elem or make it agree";
      return false;
    }
    typed = &b;
  }
  if (typed) {
    a.bf16 = typed->dtype == DType::BF16;
  } else if (elem != 2 && elem != 4) {
    where = expect_loc;
    err = "exec stores attention inputs as bf16 (elem = 2) or fp32 (elem = 4), not elem = " + std::to_string(elem);
    return false;
  } else {
    a.bf16 = elem == 2;
  }
  for (size_t i = ninputs; i < nroles; ++i) {
    const BufferInfo& b = g.buffers[roles[i].first];
    if (!b.dtype_declared || b.dtype == DType::F32) continue;
    where = b.dtype_loc;
    err = "buffer " + b.name + " holds attention outputs (" + attn_role_name(roles[i].second) + "), declared " + dtype_name(b.dtype) +
          "; exec computes them in f32";
    return false;
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
    if (!read_item_layout(b, roles[i].second, known_dim, d, declared[i], err)) return false;
    has_shape[i] = 1;
    if (shaped && !(d == decl)) {
      err = "buffer " + b.name + "'s chunk shape " + shape_list(b.shape) + " is " + attn_role_name(roles[i].second) + " of " +
            dims_text(d) + ", but " + shaped->name + "'s " + shape_list(shaped->shape) + " is of " + dims_text(decl);
      return false;
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
        err = "buffer " + shaped->name + "'s chunk shape " + shape_list(shaped->shape) + ", read as " +
              role_layout_text(shaped_role, *shaped) + ", gives " + name + " = " + std::to_string(from_shape) + ", but the parameter " +
              name + " = " + std::to_string(*v);
        return false;
      }
      *v = static_cast<int64_t>(from_shape);
    } else if (!has && *name != 'b') {
      missing += std::string(missing.empty() ? "" : ", ") + name;
    }
  }
  where = expect_loc;
  if (!missing.empty()) {
    err =
        "exec computes attention tiles from the schedule's parameters seq, heads, dim (and batch, elem) or from the chunk shapes its "
        "buffers declare (shape [batch, heads, rows, dim]); " +
        g.schedule + " has no " + missing + ", and none of " + g.buffers[a.q.buf].name + ", " + g.buffers[a.kv.buf].name +
        " declares a shape";
    return false;
  }
  auto positive = [&](const char* n, int64_t v) {
    if (v >= 1 && v <= (int64_t{1} << 30)) return true;
    err = std::string("attention parameter ") + n + " = " + std::to_string(v) + " is out of range";
    return false;
  };
  if (!positive("seq", seq) || !positive("heads", heads) || !positive("dim", dim) || !positive("batch", batch)) return false;
  if (seq % a.blocks || heads % a.groups) {
    err = "seq = " + std::to_string(seq) + " does not split into " + std::to_string(a.blocks) +
          " blocks, or heads = " + std::to_string(heads) + " into " + std::to_string(a.groups) + " head groups";
    return false;
  }
  // Every chunk size below fits 64 bits with room (and exec could not allocate more anyway).
  if (static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seq) * static_cast<double>(dim + 2) * 8 > 1e18) {
    err = "seq × heads × dim × batch is too large to execute";
    return false;
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
  if (!chunk_fits(g, a.q.buf, a.q_bytes, a.backward ? "q bundle (q, dO, lse, D)" : "q", a, where, err)) return false;
  if (a.split_kv
          ? !chunk_fits(g, a.kv.buf, a.kv_bytes / 2, "k", a, where, err) || !chunk_fits(g, a.v.buf, a.kv_bytes / 2, "v", a, where, err)
          : !chunk_fits(g, a.kv.buf, a.kv_bytes, "kv", a, where, err))
    return false;
  if (a.backward ? !chunk_fits(g, a.out0.buf, a.dq_bytes, "dq", a, where, err) ||
                       (a.split_kv ? !chunk_fits(g, a.out1.buf, a.dkv_bytes / 2, "dk", a, where, err) ||
                                         !chunk_fits(g, a.dv.buf, a.dkv_bytes / 2, "dv", a, where, err)
                                   : !chunk_fits(g, a.out1.buf, a.dkv_bytes, "dkv", a, where, err))
                 : !chunk_fits(g, a.out0.buf, a.o_bytes, a.lo.lse ? "O|lse" : "O", a, where, err))
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
      err = at(s) + "a " + (bwd ? "backward" : "forward") + " attention tile in a schedule whose expect is " +
            (a.backward ? "attention_backward" : "attention") + ": exec cannot give it inputs";
      return false;
    }
    if (ci.split_kv != a.split_kv) {
      err = at(s) +
            (ci.split_kv ? "this tile takes K and V apart, but the expect one KV buffer"
                         : "this tile takes one KV operand, but the expect K and V apart") +
            ": exec gives tiles the expect's items";
      return false;
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
        err = "buffer " + b.name + " is declared " + dtype_name(b.dtype) + ", but the tile at line " + line + " uses it as " +
              attn_role_name(role) + ", whose items are " + dtype_name(want);
        return false;
      }
      if (b.shape.empty()) return true;  // bytes: laid out as its role's items are
      Dims d;
      ItemLayout L;
      where = b.layout.empty() ? b.shape_loc : b.layout_loc;
      if (!read_item_layout(b, role, a.dim, d, L, err)) return false;
      if (!(d == layout)) {
        err = "buffer " + b.name + "'s chunk shape " + shape_list(b.shape) + " is " + attn_role_name(role) + " of " + dims_text(d) +
              ", but the tile at line " + line + " uses it as an item of " + dims_text(layout);
        return false;
      }
      const ItemLayout& want_l = role_of(role);
      if (role == Role::Bundle || (L.same_place(want_l) && L.lse == want_l.lse)) return true;
      err = "buffer " + b.name + " lays out its " + attn_role_name(role) + " items as " + role_layout_text(role, b) +
            ", but the expect's " + attn_role_name(role) + " buffer as " +
            (want_l.letters.empty() ? std::string("the kernels' layout") : "layout " + want_l.letters) +
            "; data moves between buffers as bytes, so every buffer of one role has one layout";
      return false;
    };
    if (!declared_fits(rq, bwd ? Role::Bundle : Role::Q) || !declared_fits(rkv, a.split_kv ? Role::K : Role::KV) ||
        (a.split_kv && !declared_fits(rv, Role::V)) || !declared_fits(w0, bwd ? Role::DQ : Role::O) ||
        (bwd && !declared_fits(g.ranges[ci.writes_off + 1], a.split_kv ? Role::DK : Role::DKV)) ||
        (bwd && a.split_kv && !declared_fits(g.ranges[ci.writes_off + 2], Role::DV)))
      return false;
    auto fits = [&](const Range& r, uint64_t want, const char* what) {
      if (g.buffers[r.buf].chunk_bytes == want) return true;
      err = at(s) + "this tile's " + what + " operand " + g.range_name(r) + " has chunks of " +
            std::to_string(g.buffers[r.buf].chunk_bytes) + " bytes; an item of this layout (" + shape_text(a) + ") is " +
            std::to_string(want);
      return false;
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
    err = "this step moves or merges " + g.buffers[touched].name +
          ", which holds partial attention outputs O declared without their lse (" + role_layout_text(Role::O, g.buffers[a.out0.buf]) +
          " with rows of dim = " + std::to_string(a.dim) +
          "): a partial output merges only with its row's log-sum-exp, so declare O's rows as dim + 1 (the lse last) to move them";
    return false;
  }
  return true;
}

// Copies and reductions carry O|lse rows from buffer to buffer (part -> O, Oh -> Os -> O): the
// merge buffers closed under this rank's copies, reduces and collectives with `into`.
// Choreographic sends and receives are joined by statement across ranks (join_transfers).
void propagate_merge(const StepGraph& g, std::vector<uint8_t>& merge) {
  for (bool changed = true; changed;) {
    changed = false;
    auto join = [&](uint32_t b1, uint32_t b2) {
      if (merge[b1] != merge[b2]) merge[b1] = merge[b2] = 1, changed = true;
    };
    for (StepId s = 0; s < g.size(); ++s) {
      StepKind k = g.kind(s);
      if (k == StepKind::Copy || k == StepKind::Reduce) join(g.range(s).buf, g.copy_source(s).buf);
      else if (k == StepKind::Collective && g.coll(s).into.cnt) join(g.range(s).buf, g.coll(s).into.buf);
    }
  }
}

// A choreographic `send X … into Y` has its send step on one rank and its receive step on another,
// but both come from one statement, whose source and destination buffers are fixed: the
// statements whose send or receive side touches a merge buffer are agreed on by all ranks (every
// rank elaborated the same statements), and both sides' buffers become merge buffers. A tree
// reduction of partial outputs (a → h into mid reduce, h → root into O reduce) needs it.
void join_transfers(const StepGraph& g, std::vector<uint8_t>& merge, MPI_Comm world) {
  std::vector<uint8_t> stmts(g.stmt_locs.size(), 0), all(g.stmt_locs.size(), 0);
  for (StepId s = 0; s < g.size(); ++s) {
    StepKind k = g.kind(s);
    if ((k == StepKind::Send || k == StepKind::Recv) && !g.local(s) && merge[g.range(s).buf] && g.stmt(s) < stmts.size())
      stmts[g.stmt(s)] = 1;
  }
  MPI_Allreduce(stmts.data(), all.data(), static_cast<int>(stmts.size()), MPI_UINT8_T, MPI_MAX, world);
  for (StepId s = 0; s < g.size(); ++s) {
    StepKind k = g.kind(s);
    if ((k == StepKind::Send || k == StepKind::Recv) && !g.local(s) && g.stmt(s) < all.size() && all[g.stmt(s)]) merge[g.range(s).buf] = 1;
  }
}

// A reduction into a merge buffer must be a sum in the schedule (it becomes the merge); a max or
// a product of partial outputs has no meaning.
bool merge_ops_sum(const StepGraph& g, const std::vector<uint8_t>& merge, Loc& where, std::string& err) {
  for (StepId s = 0; s < g.size(); ++s) {
    StepKind k = g.kind(s);
    ReduceOp op = ReduceOp::Sum;
    bool reduces = false;
    if (k == StepKind::Reduce || (k == StepKind::Recv && (g.flags(s) & kFlagReduce))) reduces = true, op = flag_op(g.flags(s));
    if (k == StepKind::Collective) {
      CollKind ck = g.coll(s).kind;
      reduces = ck == CollKind::Allreduce || ck == CollKind::Reduce || ck == CollKind::ReduceScatter;
      op = g.coll(s).op;
    }
    if (!reduces || !merge[g.range(s).buf] || op == ReduceOp::Sum) continue;
    where = g.loc(s);
    err = "a reduction with " +
          std::string(op == ReduceOp::Max   ? "max"
                      : op == ReduceOp::Min ? "min"
                                            : "prod") +
          " of " + g.buffers[g.range(s).buf].name +
          ", which holds partial attention outputs: they are merged (online softmax), so write it as a sum";
    return false;
  }
  return true;
}

}  // namespace

bool plan_attention(const StepGraph& g, const SourceManager& sm, MPI_Comm world, AttentionLayout& a, std::string& err) {
  a = AttentionLayout{};
  bool here = false;
  for (const Expectation& e : g.expects) here |= e.kind == ExpectKind::Attention || e.kind == ExpectKind::AttentionBackward;
  for (StepId s = 0; s < g.size() && !here; ++s) here = g.kind(s) == StepKind::Compute && g.compute(s).kind != ComputeKind::Generic;
  int mine = here ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world);
  if (!any) return true;
  a.active = true;
  Loc where;
  bool ok = plan_local(g, a, where, err);
  // Every rank's merge buffers: a collective reduction must use one operator on all members. One
  // rank's copy can make a buffer a merge buffer for all: propagate, agree, until nothing changes
  // (every rank sees the same agreed list, so all leave the loop together).
  a.merge.resize(g.buffers.size(), 0);
  for (;;) {
    propagate_merge(g, a.merge);
    join_transfers(g, a.merge, world);
    propagate_merge(g, a.merge);
    std::vector<uint8_t> all(a.merge.size());
    MPI_Allreduce(a.merge.data(), all.data(), static_cast<int>(a.merge.size()), MPI_UINT8_T, MPI_MAX, world);
    bool same = all == a.merge;
    int mine_same = same ? 1 : 0, all_same = 0;
    MPI_Allreduce(&mine_same, &all_same, 1, MPI_INT, MPI_MIN, world);
    a.merge = all;
    if (all_same) break;
  }
  if (ok) ok = merge_ops_sum(g, a.merge, where, err);
  for (uint32_t b = 0; b < g.buffers.size() && ok; ++b)
    if (a.merge[b] && g.buffers[b].chunk_bytes % ((a.dim + uint64_t{1}) * 4)) {
      where = g.buffers[b].loc;
      err = "buffer " + g.buffers[b].name + " holds partial attention outputs, but its chunks of " +
            std::to_string(g.buffers[b].chunk_bytes) + " bytes are not whole rows of dim + 1 floats";
      ok = false;
    }
  // A rendered diagnostic (file:line:col: error:, the source line, a caret).
  if (!ok) err = render_diagnostic(Diagnostic{Severity::Error, where, 1, err, {}, 0, false}, sm);
  int bad = ok ? 0 : 1, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, world);
  return !any_bad;  // err is empty on the ranks that found nothing wrong themselves
}

namespace {

// Item rel's block and head group.
uint32_t block_of(const AttentionLayout& a, uint32_t rel) { return rel / a.groups; }
uint32_t group_of(const AttentionLayout& a, uint32_t rel) { return rel % a.groups; }

void store_bf16(uint16_t* dst, const float* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace

std::vector<RowBlock> role_blocks(const AttentionLayout& a, int role, bool to_kernel) {
  uint32_t in = a.bf16 ? 2 : 4;
  switch (role) {
    case 0: return relayout_blocks(a.tile, a.lq, 1, in, a.dim, to_kernel);
    case 1: return relayout_blocks(a.tile, a.lkv, 2, in, a.dim, to_kernel);
    case 2: return relayout_blocks(a.tile, a.lo, 1, 4, a.dim + 1, to_kernel);
    case 3: return relayout_blocks(a.tile, a.ldq, 1, 4, a.dim, to_kernel);
    case 4: return relayout_blocks(a.tile, a.ldkv, 2, 4, a.dim, to_kernel);
    case 5: return relayout_blocks(a.tile, a.lk, 1, in, a.dim, to_kernel);
    case 6: return relayout_blocks(a.tile, a.lv, 1, in, a.dim, to_kernel);
    case 7: return relayout_blocks(a.tile, a.ldk, 1, 4, a.dim, to_kernel);
    default: return relayout_blocks(a.tile, a.ldv, 1, 4, a.dim, to_kernel);
  }
}

namespace {
void fill_kernel_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst);
}  // namespace

void fill_attention_half(const AttentionLayout& a, bool v_half, uint32_t rel, unsigned char* dst) {
  std::vector<unsigned char> kv(a.kv_bytes);
  fill_kernel_item(a, false, rel, kv.data());
  relayout_host(role_blocks(a, v_half ? 6 : 5, false), dst, kv.data() + (v_half ? a.kv_bytes / 2 : 0));
}

void fill_attention_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst) {
  if ((q_side ? a.lq : a.lkv).kernel) return fill_kernel_item(a, q_side, rel, dst);
  // Filled in the kernels' layout, then laid out as declared.
  std::vector<unsigned char> k(q_side ? a.q_bytes : a.kv_bytes);
  fill_kernel_item(a, q_side, rel, k.data());
  relayout_host(role_blocks(a, q_side ? 0 : 1, false), dst, k.data());
}

namespace {

// Item rel of Q (q_side) or KV in the kernels' layout, in the chunk's storage format.
void fill_kernel_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst) {
  const TileShape& t = a.tile;
  if (!q_side) {
    size_t n = attn_kv_elems(t);
    std::vector<float> kv(n);
    fill_attention_input(kv.data(), n, kTagKV, rel, a.bf16);
    if (a.bf16) store_bf16(reinterpret_cast<uint16_t*>(dst), kv.data(), n);
    else std::memcpy(dst, kv.data(), n * 4);
    return;
  }
  size_t nq = attn_q_elems(t);
  std::vector<float> q(nq);
  fill_attention_input(q.data(), nq, kTagQ, rel, a.bf16);
  if (!a.backward) {
    if (a.bf16) store_bf16(reinterpret_cast<uint16_t*>(dst), q.data(), nq);
    else std::memcpy(dst, q.data(), nq * 4);
    return;
  }
  // The bundle: dO, and the forward's final O|lse of these rows over every kv block it sees.
  std::vector<float> dout(nq), o(attn_o_elems(t)), kv(attn_kv_elems(t)), bundle(attn_bundle_elems(t));
  fill_attention_input(dout.data(), nq, kTagDO, rel, a.bf16);
  clear_merge_rows(a, reinterpret_cast<unsigned char*>(o.data()), o.size() * 4);
  uint32_t b = block_of(a, rel), h = group_of(a, rel);
  for (uint32_t kb = 0; kb < a.blocks; ++kb) {
    if (a.causal && kb > b) break;
    fill_attention_input(kv.data(), kv.size(), kTagKV, kb * a.groups + h, a.bf16);
    attn_fwd_tile(q.data(), kv.data(), o.data(), t, a.causal && kb == b, a.scale);
  }
  attn_bwd_bundle(q.data(), dout.data(), o.data(), bundle.data(), t);
  if (!a.bf16) {
    std::memcpy(dst, bundle.data(), bundle.size() * 4);
    return;
  }
  // Per row: q and dO as bf16, then lse and D as fp32 (4·dim + 8 bytes).
  size_t rows = size_t{t.batch} * t.heads * t.rows_q, w = 2 * size_t{t.dim} + 2;
  for (size_t r = 0; r < rows; ++r) {
    unsigned char* row = dst + r * (4 * size_t{t.dim} + 8);
    store_bf16(reinterpret_cast<uint16_t*>(row), &bundle[r * w], 2 * size_t{t.dim});
    std::memcpy(row + 4 * size_t{t.dim}, &bundle[r * w + 2 * t.dim], 8);
  }
}

}  // namespace

double attention_model_flops(const AttentionLayout& a) {
  double f = 4.0 * a.batch * a.heads * static_cast<double>(a.seq) * a.seq * a.dim;
  if (a.causal) f /= 2;
  return a.backward ? 2.5 * f : f;
}

void clear_merge_rows(const AttentionLayout& a, unsigned char* p, uint64_t bytes) {
  size_t w = a.dim + size_t{1}, rows = bytes / (w * 4);
  auto* f = reinterpret_cast<float*>(p);
  for (size_t r = 0; r < rows; ++r) {
    std::memset(f + r * w, 0, a.dim * sizeof(float));
    f[r * w + a.dim] = kNegInf;
  }
}

void merge_rows(const AttentionLayout& a, unsigned char* acc, const unsigned char* part, uint64_t bytes) {
  auto rows = static_cast<uint32_t>(bytes / ((a.dim + uint64_t{1}) * 4));
  attn_merge(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(part), TileShape{1, 1, rows, 0, a.dim});
}

void run_attention_tile(const AttentionLayout& a, bool backward, bool causal, const unsigned char* q, const unsigned char* kv,
                        unsigned char* out0, unsigned char* out1) {
  const TileShape& t = a.tile;
  if (!backward) {
    auto* o = reinterpret_cast<float*>(out0);
    if (a.bf16) attn_fwd_tile(reinterpret_cast<const uint16_t*>(q), reinterpret_cast<const uint16_t*>(kv), o, t, causal, a.scale);
    else attn_fwd_tile(reinterpret_cast<const float*>(q), reinterpret_cast<const float*>(kv), o, t, causal, a.scale);
    return;
  }
  auto* dq = reinterpret_cast<float*>(out0);
  auto* dkv = reinterpret_cast<float*>(out1);
  if (!a.bf16) {
    attn_bwd_tile(reinterpret_cast<const float*>(q), reinterpret_cast<const float*>(kv), dq, dkv, t, causal, a.scale);
    return;
  }
  // The bf16 bundle widened to the kernel's fp32 bundle (O(rows·dim), next to the tile's rows²·dim).
  thread_local std::vector<float> bundle;
  size_t rows = size_t{t.batch} * t.heads * t.rows_q, w = 2 * size_t{t.dim} + 2;
  bundle.resize(rows * w);
  for (size_t r = 0; r < rows; ++r) {
    const unsigned char* row = q + r * (4 * size_t{t.dim} + 8);
    uint16_t h[1];
    for (size_t i = 0; i < 2 * size_t{t.dim}; ++i) {
      std::memcpy(h, row + 2 * i, 2);
      bundle[r * w + i] = bf16_to_float(h[0]);
    }
    std::memcpy(&bundle[r * w + 2 * t.dim], row + 4 * size_t{t.dim}, 8);
  }
  attn_bwd_tile(bundle.data(), reinterpret_cast<const uint16_t*>(kv), dq, dkv, t, causal, a.scale);
}

namespace {

void merge_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  int size = 0;
  MPI_Type_size(*type, &size);
  auto width = static_cast<uint32_t>(size / 4);  // dim + 1 floats per row
  if (width < 1 || *len <= 0) return;
  attn_merge(static_cast<float*>(inout), static_cast<const float*>(in), TileShape{1, 1, static_cast<uint32_t>(*len), 0, width - 1});
}

}  // namespace

MPI_Datatype attention_row_type(uint32_t dim) {
  static std::map<uint32_t, MPI_Datatype> types;
  auto it = types.find(dim);
  if (it != types.end()) return it->second;
  MPI_Datatype t;
  MPI_Type_contiguous(static_cast<int>(dim) + 1, MPI_FLOAT, &t);
  MPI_Type_commit(&t);
  types[dim] = made_type(t);
  return t;
}

MPI_Op attention_merge_op() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&merge_op, 1, &o);  // the merge is exactly commutative
    return made_op(o);
  }();
  return op;
}

}  // namespace sg::exec
