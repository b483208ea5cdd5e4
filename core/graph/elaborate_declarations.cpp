// The elaborator's declaration statements: buffers (dimensions, chunk size or shape, dtype,
// layout, redeclaration checks and the warning for a chunk size that rounded down), init rules
// (and the check that no chunk is initialised twice) and expect statements. Apart because
// they describe the buffers and the expected result, and emit no steps.
#include "core/graph/elaborate_impl.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/base/checked.hpp"
#include "core/base/sizes.hpp"
#include "core/dsl/printer.hpp"
#include "core/graph/layout.hpp"

namespace sg::elab::detail {

// Evaluates a chunk size, noting the first division in it that rounds down (`size / N` with
// N not dividing size): integer division loses the remainder, silently, in every rank's copy.
int64_t Elaborator::ev_size(const Expr& e, Frame& f, LossyDiv& lossy) {
  LossyDiv* outer = watch_;
  watch_ = &lossy;
  try {
    int64_t v = ev(e, f);
    watch_ = outer;
    return v;
  } catch (...) {
    watch_ = outer;
    throw;
  }
}

// A warning, once per buffer statement per elaboration (not per loop iteration or call), when
// a division in its chunk size rounded down: the buffer holds less than the sizes say, or,
// rounded to 0, nothing at all. `size` is the expression (`bytes E`, or the `shape` extent,
// counted in elements, when `bytes` is false) and `value` what it gave.
void Elaborator::warn_lossy(const BufferStmt& s, const Expr& size, const LossyDiv& d, uint64_t value, bool bytes, uint64_t chunks) {
  if (mode_ != Mode::Build || !d.div) return;
  if (std::find(warned_.begin(), warned_.end(), s.id) != warned_.end()) return;
  warned_.push_back(s.id);
  auto amount = [&](uint64_t v) { return std::to_string(v) + (bytes ? " byte" : " element") + (v == 1 ? "" : "s"); };
  std::string a = std::to_string(d.a), b = std::to_string(d.b);
  int64_t rem = d.a - d.q * d.b;  // nonzero; negative when b is
  uint64_t lost = static_cast<uint64_t>(rem < 0 ? -rem : rem);
  std::string msg = (bytes ? "chunk size " : "chunk extent ") + print_expr(size);
  if (d.div == &size) {
    msg += " = " + a + " / " + b + " rounds down to " + amount(value);
    if (value == 0) msg += ": every chunk of '" + s.name + "' is empty";
    else if (bytes && d.b > 0 && chunks == static_cast<uint64_t>(d.b))  // size / N over N chunks
      msg += ": the " + std::to_string(chunks) + " chunks of '" + s.name + "' hold " + std::to_string(chunks * value) + " of the " + a +
             " bytes";
    else msg += " (a remainder of " + amount(lost) + " is dropped)";
  } else {
    msg += " is " + amount(value) + ", rounded down: " + print_expr(*d.div) + " = " + a + " / " + b + " drops a remainder of " +
           std::to_string(lost);
    if (value == 0) msg += "; every chunk of '" + s.name + "' is empty";
  }
  diags_.warning(d.div->loc, msg, d.div->length);
}

void Elaborator::check_layout(const BufferStmt& s, size_t extents) {
  std::string why = layout_problem(s.layout, extents);
  if (!why.empty()) fail(s.layout_loc, static_cast<uint32_t>(s.layout.size()), why);
}

void Elaborator::buffer(const BufferStmt& s, Frame& f) {
  std::vector<uint32_t> dims;
  uint64_t chunks = 1;
  for (const auto& d : s.dims) {
    int64_t v = ev(*d, f);
    if (v < 1) fail(d->loc, d->length, "a buffer dimension must be at least 1 (got " + std::to_string(v) + ")");
    if (v > 0xffffffffLL || (chunks *= static_cast<uint64_t>(v)) > 0xffffffffULL)
      fail(d->loc, d->length, "buffer '" + s.name + "' has too many chunks (more than 2^32)");
    dims.push_back(static_cast<uint32_t>(v));
  }
  DType dt = DType::F32;
  if (!s.dtype.empty() && !parse_dtype(s.dtype, dt))
    fail(s.dtype_loc, static_cast<uint32_t>(s.dtype.size()),
         "unknown dtype '" + s.dtype + "' (use f16, bf16, f32, f64, i8, i32, i64 or u8)");
  uint64_t bytes = 0, elems = 0;
  std::vector<uint64_t> shape;
  LossyDiv lossy;
  const Expr* lossy_size = nullptr;
  uint64_t lossy_value = 0;
  if (s.bytes) {
    int64_t b = ev_size(*s.bytes, f, lossy);
    lossy_size = s.bytes.get();
    if (b < 0) fail(s.bytes->loc, s.bytes->length, "a chunk size must not be negative (got " + std::to_string(b) + " bytes)");
    bytes = static_cast<uint64_t>(b);
    lossy_value = bytes;
    elems = bytes / dtype_size(dt);
  } else {
    elems = 1;
    for (const auto& d : s.shape) {
      LossyDiv here;
      int64_t v = ev_size(*d, f, here);
      if (v < 0) fail(d->loc, d->length, "a shape extent must not be negative (got " + std::to_string(v) + ")");
      if (here.div && !lossy.div) lossy = here, lossy_size = d.get(), lossy_value = static_cast<uint64_t>(v);
      if (__builtin_mul_overflow(elems, static_cast<uint64_t>(v), &elems)) fail(d->loc, d->length, "chunk shape overflows 64 bits");
      shape.push_back(static_cast<uint64_t>(v));
    }
    if (__builtin_mul_overflow(elems, uint64_t{dtype_size(dt)}, &bytes)) fail(s.loc, s.length, "chunk size overflows 64 bits");
    if (!s.layout.empty()) check_layout(s, shape.size());
  }
  if (static_cast<u128>(bytes) * chunks > kMaxBytes) {
    const Expr* at = s.bytes ? s.bytes.get() : (s.shape.empty() ? nullptr : s.shape[0].get());
    // Fatal for the instance: every later use of the buffer would only repeat it.
    diags_.error(at ? at->loc : s.loc,
                 "buffer '" + s.name + "' would hold " + with_commas(chunks) + " chunks of " + with_commas(bytes) +
                     " bytes on every rank, more than 2^62 bytes (4 EiB): sizes and totals past that overflow 64-bit arithmetic",
                 at ? at->length : s.length);
    throw Abort{};
  }
  std::string name = f.prefix + s.name;
  View& v = f.bufs[static_cast<size_t>(s.slot)];
  for (uint32_t i = 0; i < g_->buffers.size(); ++i) {
    const BufferInfo& b = g_->buffers[i];
    if (b.name != name) continue;
    bool same = b.dims == dims && b.chunk_bytes == bytes && b.dtype == dt && b.shape == shape && b.layout == s.layout;
    // The same declaration running again (in a loop, or in a second call) with the same shape
    // names the same memory; anything else is a conflict.
    if (b.stmt != s.id || !same) {
      EvalError e{
          s.loc, s.length,
          b.stmt != s.id ? "buffer '" + name + "' is declared twice" : "buffer '" + name + "' is declared again with a different shape"};
      report(s, e);
      return;
    }
    v = View{i, 0, b.chunks, true, true, s.id};
    if (lossy.div) warn_lossy(s, *lossy_size, lossy, lossy_value, s.bytes != nullptr, chunks);
    return;
  }
  if (g_->buffers.size() >= 0xffffffu) fail(s.loc, s.length, "too many buffers");
  BufferInfo b;
  b.name = name;
  b.dims = dims;
  b.chunks = static_cast<uint32_t>(chunks);
  b.chunk_bytes = bytes;
  b.chunk_elems = elems;
  b.dtype = dt;
  b.loc = s.loc;
  b.stmt = s.id;
  b.shape = std::move(shape);
  b.layout = s.layout;
  b.layout_loc = s.layout_loc;
  b.dtype_declared = !s.dtype.empty();
  if (!s.shape.empty()) b.shape_loc = s.shape[0]->loc;
  b.dtype_loc = s.dtype_loc;
  g_->buffers.push_back(std::move(b));
  est.hazard_bytes += uint64_t{rank_slots_} * chunks * sizeof(ChunkState);
  est.chunks += chunks;
  v = View{static_cast<uint32_t>(g_->buffers.size() - 1), 0, static_cast<uint32_t>(chunks), true, true, s.id};
  if (lossy.div) warn_lossy(s, *lossy_size, lossy, lossy_value, s.bytes != nullptr, chunks);
}

void Elaborator::init(const InitStmt& s, Frame& f) {
  InitRule rule;
  rule.kind = s.mode;
  rule.range = ref(s.target, f);
  rule.stmt = s.id;
  rule.group = f.group_id;
  if (s.mode == InitKind::OnRank) {
    rule.rank = rank_of(*s.rank, f, "init");
  } else if (s.mode == InitKind::Owned) {
    if (rule.range.cnt % f.group.count)
      fail(s.target.loc, s.target.length,
           "'init … owned' needs a chunk count that is a multiple of the group size (" + std::to_string(rule.range.cnt) + " chunks, " +
               std::to_string(f.group.count) + " members)");
  }
  g_->inits.push_back(rule);
}

// Two init rules giving one chunk of one rank a value is an error (checked once, at the end).
void Elaborator::check_inits() {
  auto& rules = g_->inits;
  for (size_t i = 0; i < rules.size(); ++i) {
    for (size_t j = i + 1; j < rules.size() && j < i + 4096; ++j) {
      const InitRule &a = rules[i], &b = rules[j];
      if (a.range.buf != b.range.buf) continue;
      if (a.kind == InitKind::OnRank && b.kind == InitKind::OnRank && a.rank != b.rank) continue;
      uint32_t lo = std::max(a.range.lo, b.range.lo), hi = std::min(a.range.lo + a.range.cnt, b.range.lo + b.range.cnt);
      if (lo >= hi) continue;
      auto covers = [&](const InitRule& r, uint32_t rank, uint32_t chunk) {
        if (r.kind == InitKind::OnRank) return r.rank == rank;
        const GroupInfo& gr = g_->groups[r.group];
        int64_t k = gr.index_of(rank);
        if (k < 0) return false;
        if (r.kind == InitKind::Contrib) return true;
        uint32_t per = r.range.cnt / gr.count;
        return chunk >= r.range.lo + k * per && chunk < r.range.lo + (k + 1) * per;
      };
      bool clash = false;
      uint32_t crank = 0, cchunk = 0;
      for (uint32_t r = 0; r < n_ && !clash; ++r)
        for (uint32_t c = lo; c < hi && !clash; ++c)
          if (covers(a, r, c) && covers(b, r, c)) clash = true, crank = r, cchunk = c;
      if (clash) {
        Loc la = g_->stmt_locs[a.stmt], lb = g_->stmt_locs[b.stmt];
        auto& d = diags_.error(
            lb, "chunk " + g_->chunk_name(b.range.buf, cchunk) + " of rank " + std::to_string(crank) + " is initialised twice");
        d.notes.push_back({la, "first initialised here"});
      }
    }
  }
}

void Elaborator::expect(const ExpectStmt& s, Frame& f) {
  Expectation x;
  x.kind = s.what;
  x.stmt = s.id;
  x.mask = s.mask;
  if (s.what == ExpectKind::Nothing) {
    g_->expects.push_back(x);
    return;
  }
  GroupInfo gr = s.over ? gev(*s.over, f) : f.group;
  x.group = g_->intern_group(gr);
  for (const auto& r : s.bufs) x.bufs.push_back(ref(r, f));
  // K and V apart: bufs become Q, K, O (dQ, dK) as with one KV buffer; V (dV) beside them.
  if (s.what == ExpectKind::Attention || s.what == ExpectKind::AttentionBackward) {
    bool bwd = s.what == ExpectKind::AttentionBackward;
    size_t one = bwd ? 4 : 3, two = bwd ? 6 : 4;
    if (x.bufs.size() != one && x.bufs.size() != two)
      fail(s.loc, s.length,
           bwd ? "expect attention_backward takes Q, KV, dQ, dKV or Q, K, V, dQ, dK, dV, then the mask"
               : "expect attention takes Q, KV, O or Q, K, V, O, then the mask");
    if (x.bufs.size() == two) {
      x.split_kv = true;
      x.v = x.bufs[2];
      if (bwd) {
        x.dv = x.bufs[5];
        x.bufs = {x.bufs[0], x.bufs[1], x.bufs[3], x.bufs[4]};
      } else {
        x.bufs = {x.bufs[0], x.bufs[1], x.bufs[3]};
      }
      if (x.v.cnt != x.bufs[1].cnt || g_->buffers[x.v.buf].chunk_bytes != g_->buffers[x.bufs[1].buf].chunk_bytes)
        fail(s.bufs[2].loc, s.bufs[2].length, "expect attention needs V with the chunks of K (as many, as large)");
      if (bwd && (x.dv.cnt != x.v.cnt))
        fail(s.bufs[5].loc, s.bufs[5].length, "expect attention_backward needs dV with as many chunks as V");
    }
  }
  if (s.root) {
    x.root = rank_of(*s.root, f, "root");
    if (gr.index_of(x.root) < 0)
      fail(s.root->loc, s.root->length, "the root is not a member of the group (root " + std::to_string(x.root) + ")");
  }
  auto blocked = [&](size_t i) {
    if (x.bufs[i].cnt % gr.count)
      fail(s.bufs[i].loc, s.bufs[i].length,
           std::string("expect ") + expect_name(s.what) + " needs a chunk count that is a multiple of the group size (" +
               std::to_string(x.bufs[i].cnt) + " chunks, " + std::to_string(gr.count) + " members)");
  };
  auto attention_heads = [&] {
    if (!s.heads) return;
    int64_t h = ev(*s.heads, f);
    if (h < 1) fail(s.heads->loc, s.heads->length, "heads must be at least 1 (got " + std::to_string(h) + ")");
    x.heads = static_cast<uint32_t>(h);
    for (size_t i : {size_t{0}, size_t{1}})
      if (x.bufs[i].cnt % x.heads)
        fail(s.bufs[i].loc, s.bufs[i].length,
             "with heads " + std::to_string(h) + " the chunk count must be a multiple of it (" + std::to_string(x.bufs[i].cnt) +
                 " chunks): item x is block x / heads, head x % heads");
  };
  switch (s.what) {
    case ExpectKind::ReduceScatter:
    case ExpectKind::Allgather:
    case ExpectKind::Gather:
    case ExpectKind::Scatter: blocked(0); break;
    case ExpectKind::Alltoall:
      blocked(0);
      blocked(1);
      if (x.bufs[0].cnt != x.bufs[1].cnt) fail(s.bufs[1].loc, s.bufs[1].length, "expect alltoall needs IN and OUT of the same chunk count");
      break;
    case ExpectKind::Attention:
      attention_heads();
      g_->buffers[x.bufs[2].buf].accumulator = true;  // O: a never-written chunk is the empty output
      if (x.bufs[2].cnt != x.bufs[0].cnt) fail(s.bufs[2].loc, s.bufs[2].length, "expect attention needs O with as many chunks as Q");
      break;
    case ExpectKind::AttentionBackward:
      attention_heads();
      g_->buffers[x.bufs[2].buf].accumulator = true;  // dQ and dKV: never-written chunks are zero gradients
      g_->buffers[x.bufs[3].buf].accumulator = true;
      if (x.split_kv) g_->buffers[x.dv.buf].accumulator = true;
      if (x.bufs[2].cnt != x.bufs[0].cnt || x.bufs[3].cnt != x.bufs[1].cnt)
        fail(s.loc, s.length, "expect attention_backward needs dQ shaped like Q and dKV shaped like KV");
      break;
    default: break;
  }
  g_->expects.push_back(std::move(x));
}

}  // namespace sg::elab::detail
