// plan_attention, the collective half of the attention plan: every rank reads its own part
// (plan_local, exec/attention/attention_plan_local.cpp), then the ranks agree on the merge buffers (those
// that carry partial O|lse rows, closed under copies, reductions and transfers) and on the
// verdict. Apart from the data side (exec/attention/attention_exec.cpp), which runs on the plan.
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "exec/attention/attention_exec.hpp"
#include "exec/attention/attention_plan.hpp"

namespace sg::exec {

using attention_detail::plan_local;

namespace {

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
bool merge_ops_sum(const StepGraph& g, const std::vector<uint8_t>& merge, Diagnostics& diags) {
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
    diags.error(g.loc(s), "a reduction with " +
                              std::string(op == ReduceOp::Max   ? "max"
                                          : op == ReduceOp::Min ? "min"
                                                                : "prod") +
                              " of " + g.buffers[g.range(s).buf].name +
                              ", which holds partial attention outputs: they are merged (online softmax), so write it as a sum");
    return false;
  }
  return true;
}

}  // namespace

bool plan_attention(const StepGraph& g, MPI_Comm world, AttentionLayout& a, Diagnostics& diags) {
  a = AttentionLayout{};
  bool here = false;
  for (const Expectation& e : g.expects) here |= e.kind == ExpectKind::Attention || e.kind == ExpectKind::AttentionBackward;
  for (StepId s = 0; s < g.size() && !here; ++s) here = g.kind(s) == StepKind::Compute && g.compute(s).kind != ComputeKind::Generic;
  int mine = here ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world);
  if (!any) return true;
  a.active = true;
  bool ok = plan_local(g, a, diags);
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
  if (ok) ok = merge_ops_sum(g, a.merge, diags);
  for (uint32_t b = 0; b < g.buffers.size() && ok; ++b)
    if (a.merge[b] && g.buffers[b].chunk_bytes % ((a.dim + uint64_t{1}) * 4)) {
      diags.error(g.buffers[b].loc, "buffer " + g.buffers[b].name + " holds partial attention outputs, but its chunks of " +
                                        std::to_string(g.buffers[b].chunk_bytes) + " bytes are not whole rows of dim + 1 floats");
      ok = false;
    }
  int bad = ok ? 0 : 1, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, world);
  return !any_bad;  // diags has nothing new on the ranks that found nothing wrong themselves
}

}  // namespace sg::exec
