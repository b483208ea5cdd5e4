#include "core/interp/postcondition.hpp"

#include <algorithm>
#include <map>

namespace sg {

namespace {

class Checker {
 public:
  Checker(const StepGraph& g, const MachineState& init, const MachineState* fin, size_t max, const ExpectedVisitor* visit)
      : g_(g), init_(init), fin_(fin), max_(max), visit_(visit) {}

  PostconditionReport run() {
    for (const Expectation& x : g_.expects) one(x);
    return std::move(rep_);
  }

 private:
  // Σ_{s ∈ G} d(s, c) of buffer buf.
  Value sum_over(const GroupInfo& gr, uint32_t buf, uint32_t chunk) const {
    Value v;
    v.defined = true;
    if (gr.stride == 1) {
      v.runs.push_back(Run{AtomKind::Contrib, Mask::None, buf, chunk, gr.start, gr.start + gr.count, 1});
    } else {
      for (uint32_t k = 0; k < gr.count; ++k)
        v.runs.push_back(Run{AtomKind::Contrib, Mask::None, buf, chunk, gr.member(k), gr.member(k) + 1, 1});
    }
    return v;
  }

  void one(const Expectation& x) {
    if (x.kind == ExpectKind::Nothing) return;
    const GroupInfo& gr = g_.groups[x.group];
    const Range& b = x.bufs[0];
    uint32_t blk = gr.count ? b.cnt / gr.count : 0;
    // Two ranges (an out-of-place collective, MSCCL's i and o): the terms come from the first,
    // the result is checked on the second.
    bool two_range_kind = x.kind == ExpectKind::Allreduce || x.kind == ExpectKind::ReduceScatter || x.kind == ExpectKind::Allgather;
    if (x.bufs.size() == 2 && two_range_kind) {
      out_of_place(x, gr, x.bufs[0], x.bufs[1]);
      return;
    }
    switch (x.kind) {
      case ExpectKind::Allreduce:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t c = b.lo; c < b.lo + b.cnt; ++c) compare(x, gr.member(j), b.buf, c, sum_over(gr, b.buf, c));
        break;
      case ExpectKind::Reduce:
        for (uint32_t c = b.lo; c < b.lo + b.cnt; ++c) compare(x, x.root, b.buf, c, sum_over(gr, b.buf, c));
        break;
      case ExpectKind::ReduceScatter:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t c = b.lo + j * blk; c < b.lo + (j + 1) * blk; ++c) compare(x, gr.member(j), b.buf, c, sum_over(gr, b.buf, c));
        break;
      case ExpectKind::Allgather:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t k = 0; k < gr.count; ++k)
            for (uint32_t c = b.lo + k * blk; c < b.lo + (k + 1) * blk; ++c)
              compare(x, gr.member(j), b.buf, c, init_.at(gr.member(k), b.buf, c).v);
        break;
      case ExpectKind::Broadcast:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t c = b.lo; c < b.lo + b.cnt; ++c) compare(x, gr.member(j), b.buf, c, init_.at(x.root, b.buf, c).v);
        break;
      case ExpectKind::Gather:
        for (uint32_t k = 0; k < gr.count; ++k)
          for (uint32_t c = b.lo + k * blk; c < b.lo + (k + 1) * blk; ++c) compare(x, x.root, b.buf, c, init_.at(gr.member(k), b.buf, c).v);
        break;
      case ExpectKind::Scatter:
        for (uint32_t k = 0; k < gr.count; ++k)
          for (uint32_t c = b.lo + k * blk; c < b.lo + (k + 1) * blk; ++c) compare(x, gr.member(k), b.buf, c, init_.at(x.root, b.buf, c).v);
        break;
      case ExpectKind::Alltoall: {
        const Range& in = x.bufs[0];
        const Range& out = x.bufs[1];
        for (uint32_t r = 0; r < gr.count; ++r)
          for (uint32_t s = 0; s < gr.count; ++s)
            for (uint32_t k = 0; k < blk; ++k)
              compare(x, gr.member(r), out.buf, out.lo + s * blk + k, init_.at(gr.member(s), in.buf, in.lo + r * blk + k).v);
        break;
      }
      case ExpectKind::Attention: attention(x); break;
      case ExpectKind::AttentionBackward: attention_backward(x); break;
      case ExpectKind::Nothing: break;
    }
  }

  // Out of place: in's initial terms, out's final values. allreduce: out[c] = Σ in[c];
  // reduce_scatter: rank r's out[c] = Σ in[r·|out| + c]; allgather: every rank's
  // out[k·|in| + c] = rank k's in[c].
  void out_of_place(const Expectation& x, const GroupInfo& gr, const Range& in, const Range& out) {
    switch (x.kind) {
      case ExpectKind::Allreduce:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t c = 0; c < out.cnt; ++c) compare(x, gr.member(j), out.buf, out.lo + c, sum_over(gr, in.buf, in.lo + c));
        break;
      case ExpectKind::ReduceScatter:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t c = 0; c < out.cnt; ++c)
            compare(x, gr.member(j), out.buf, out.lo + c, sum_over(gr, in.buf, in.lo + j * out.cnt + c));
        break;
      case ExpectKind::Allgather:
        for (uint32_t j = 0; j < gr.count; ++j)
          for (uint32_t k = 0; k < gr.count; ++k)
            for (uint32_t c = 0; c < in.cnt; ++c)
              compare(x, gr.member(j), out.buf, out.lo + k * in.cnt + c, init_.at(gr.member(k), in.buf, in.lo + c).v);
        break;
      default: break;  // (the language writes these with one range)
    }
  }

  // Ranks and positions holding item i of a buffer range initially (the owners of q(i) / kv(j)).
  std::multimap<uint32_t, std::pair<uint32_t, uint32_t>> owners(const Range& r) const {
    std::multimap<uint32_t, std::pair<uint32_t, uint32_t>> m;  // item -> (rank, chunk)
    for (uint32_t rank = 0; rank < g_.nranks; ++rank)
      for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) {
        int64_t i = init_.at(rank, r.buf, c).v.single_item(r.buf);
        if (i >= 0) m.emplace(static_cast<uint32_t>(i), std::make_pair(rank, c));
      }
    return m;
  }

  // The atoms a tile family (fixed index `i`) should hold: masked tiles before the diagonal are
  // full, the diagonal tile is causal; without a mask every partner is full.
  static Value tiles(AtomKind kind, uint32_t buf, uint32_t fixed, uint32_t rel, uint32_t base, uint32_t count, Mask mask,
                     bool partners_before, uint32_t heads = 1) {
    Value v;
    v.defined = true;
    if (heads > 1) {
      // Items are (block, head group) pairs, x = block * heads + head: a query item meets the
      // key/value items of its own head only, the mask applies to the blocks.
      uint32_t b = rel / heads, h = rel % heads;
      for (uint32_t jb = 0; jb < count / heads; ++jb) {
        Mask m = Mask::Full;
        if (mask != Mask::Full) {
          if (jb == b) m = Mask::Causal;
          else if (partners_before ? jb > b : jb < b) continue;
        }
        uint32_t at = base + jb * heads + h;
        v.runs.push_back(Run{kind, m, buf, fixed, at, at + 1, 1});
      }
      v.runs = normalise(v.runs);
      return v;
    }
    if (mask == Mask::Full) {
      v.runs.push_back(Run{kind, Mask::Full, buf, fixed, base, base + count, 1});
      return v;
    }
    if (partners_before) {  // Q side: partners j < i, and j == i causal
      if (rel > 0) v.runs.push_back(Run{kind, Mask::Full, buf, fixed, base, base + rel, 1});
    } else {  // KV side: partners i > j, and i == j causal
      if (rel + 1 < count) v.runs.push_back(Run{kind, Mask::Full, buf, fixed, base + rel + 1, base + count, 1});
    }
    v.runs.push_back(Run{kind, Mask::Causal, buf, fixed, base + rel, base + rel + 1, 1});
    v.runs = normalise(v.runs);
    return v;
  }

  void attention(const Expectation& x) {
    const Range &q = x.bufs[0], &kv = x.bufs[1], &o = x.bufs[2];
    for (const auto& [i, where] : owners(q)) {
      uint32_t rel = i - q.lo;
      compare(x, where.first, o.buf, o.lo + (where.second - q.lo),
              tiles(AtomKind::Attn, q.buf, i, rel, kv.lo, kv.cnt, x.mask, true, x.heads));
    }
  }

  void attention_backward(const Expectation& x) {
    const Range &q = x.bufs[0], &kv = x.bufs[1], &dq = x.bufs[2], &dkv = x.bufs[3];
    for (const auto& [i, where] : owners(q))
      compare(x, where.first, dq.buf, dq.lo + (where.second - q.lo),
              tiles(AtomKind::GradQ, q.buf, i, i - q.lo, kv.lo, kv.cnt, x.mask, true, x.heads));
    for (const auto& [j, where] : owners(kv)) {
      compare(x, where.first, dkv.buf, dkv.lo + (where.second - kv.lo),
              tiles(AtomKind::GradKV, kv.buf, j, j - kv.lo, q.lo, q.cnt, x.mask, false, x.heads));
      // K and V apart: dV[j] holds the V half of the same tiles, Gv(j, i), atoms of v(j).
      if (x.split_kv)
        compare(x, where.first, x.dv.buf, x.dv.lo + (where.second - kv.lo),
                tiles(AtomKind::GradV, x.v.buf, j, j - kv.lo, q.lo, q.cnt, x.mask, false, x.heads));
    }
  }

  void compare(const Expectation& x, uint32_t rank, uint32_t buf, uint32_t chunk, const Value& expected) {
    ++rep_.chunks_checked;
    if (visit_) {
      (*visit_)(x, rank, buf, chunk, expected);
      return;
    }
    const ChunkSlot& a = fin_->at(rank, buf, chunk);
    bool accumulator = g_.buffers[buf].accumulator;
    bool never = a.writer == kNoStep && !a.v.defined && a.v.runs.empty();
    if (a.v.runs == expected.runs && (a.v.defined || (accumulator && never))) return;
    ++rep_.chunks_wrong;
    if (rep_.issues.size() >= max_) return;
    Issue is;
    is.rank = rank;
    is.buf = buf;
    is.chunk = chunk;
    is.step = a.writer;
    is.stmt = x.stmt;
    std::string where = "rank " + std::to_string(rank) + ", " + g_.chunk_name(buf, chunk) + ": ";
    std::string want = "expected " + describe_value(expected, g_, buf);
    is.expected = describe_value(expected, g_, buf);
    // A never-written accumulator is the empty value (an output nothing was added to).
    const Value& av = never && accumulator ? empty_ : a.v;
    is.actual = describe_value(av, g_, buf);
    if (never && !accumulator) {
      is.kind = IssueKind::Undefined;
      is.text = where + "never written (undefined); " + want;
      is.missing = expected.runs;  // every expected term is missing (check says where they went)
    } else if (a.writer == kNoStep && !never) {
      is.kind = IssueKind::Stale;
      is.text = where + "still holds its initial value " + describe_value(a.v, g_, buf) + "; " + want;
      is.missing = minus(expected, a.v);
    } else if (!av.defined) {
      is.kind = IssueKind::Undefined;
      is.text = where + "holds data computed from a chunk never written (" + describe_value(a.v, g_, buf) + "); " + want;
      is.missing = expected.runs;
    } else {
      std::vector<Run> missing = minus(expected, av);
      std::vector<Run> extra = minus(av, expected);
      std::vector<Run> dup, foreign;
      for (const Run& e : extra) {
        // Atoms the expected value has too are counted twice; the rest do not belong.
        for (const Run& w : expected.runs) {
          if (!w.same_family(e)) continue;
          uint32_t a0 = std::max(e.lo, w.lo), a1 = std::min(e.hi, w.hi);
          if (a0 >= a1) continue;
          Run d = e;
          d.lo = a0;
          d.hi = a1;
          dup.push_back(d);
        }
      }
      foreign = minus(Value{extra, true}, Value{dup, true});
      is.extra = extra;
      is.missing = missing;
      std::string parts;
      if (!missing.empty()) parts += "missing " + describe_runs(missing, g_, buf);
      if (!dup.empty()) parts += (parts.empty() ? "" : "; ") + describe_runs(normalise(dup), g_, buf) + " counted twice";
      if (!foreign.empty()) parts += (parts.empty() ? "" : "; ") + std::string("foreign ") + describe_runs(foreign, g_, buf);
      is.kind = !missing.empty() ? IssueKind::Missing : !dup.empty() ? IssueKind::Duplicate : IssueKind::Foreign;
      is.text = where + parts + " (holds " + describe_value(av, g_, buf) + ", " + want + ")";
    }
    rep_.issues.push_back(std::move(is));
  }

  const StepGraph& g_;
  const MachineState& init_;
  const MachineState* fin_;
  size_t max_;
  const ExpectedVisitor* visit_;
  PostconditionReport rep_;
  const Value empty_ = Value::empty();
};

}  // namespace

PostconditionReport check_postconditions(const StepGraph& g, const MachineState& initial, const MachineState& final, size_t max_issues) {
  return Checker(g, initial, &final, max_issues, nullptr).run();
}

uint64_t for_each_expected(const StepGraph& g, const MachineState& initial, const ExpectedVisitor& visit) {
  return Checker(g, initial, nullptr, 0, &visit).run().chunks_checked;
}

}  // namespace sg
