// Text form of a step graph: a header (instance, buffers, groups, postconditions) and one line
// per step in textual order: id, rank, what it does, its dependencies and its source line.
#include <ostream>

#include "core/io/writers.hpp"

#include "core/base/sizes.hpp"

namespace sg {

std::string parameter_values(const StepGraph& g) {
  std::string out;
  // Appended piece by piece: "-" + std::string draws GCC 12's false -Wrestrict.
  for (const auto& [k, v] : g.params) {
    if (!out.empty()) out.append(", ");
    out.append(k).append(" = ");
    if (v < 0) out.append("-");
    out.append(with_commas(v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v)));
  }
  return out;
}

std::string describe_step(const StepGraph& g, StepId s) {
  std::string out = describe_step_only(g, s);
  if (g.stmt(s) < g.stmt_labels.size() && !g.stmt_labels[g.stmt(s)].empty()) out += " [" + g.stmt_labels[g.stmt(s)] + "]";
  return out;
}

std::string describe_step_only(const StepGraph& g, StepId s) {
  std::string out;
  uint8_t f = g.flags(s);
  Range r = g.range(s);
  // Appended, not "r" + std::to_string(p): GCC 12 at -O2 reports a false -Wrestrict in
  // operator+(const char*, std::string&&).
  auto peer_str = [&](uint32_t p) {
    std::string name = p == kAnyRank ? "any" : "r";
    if (p != kAnyRank) name += std::to_string(p);
    return name;
  };
  switch (g.kind(s)) {
    case StepKind::Send: {
      out = g.nonblocking(s) ? "isend " : "send ";
      out += g.range_name(r) + " to " + peer_str(g.peer(s));
      if (g.local(s) && g.p2p_info(s).tag) out += " tag " + std::to_string(g.p2p_info(s).tag);
      break;
    }
    case StepKind::Recv: {
      out = g.nonblocking(s) ? "irecv " : "recv ";
      out += g.range_name(r) + " from " + peer_str(g.peer(s));
      if (g.local(s)) {
        int32_t t = g.p2p_info(s).tag;
        if (t == kAnyTag) out += " tag any";
        else if (t) out += " tag " + std::to_string(t);
      }
      if (f & kFlagReduce) out += std::string(" reduce ") + op_name(flag_op(f));
      break;
    }
    case StepKind::Copy: out = "copy " + g.range_name(g.copy_source(s)) + " into " + g.range_name(r); break;
    case StepKind::Reduce:
      out = "reduce " + g.range_name(g.copy_source(s)) + " into " + g.range_name(r);
      if (flag_op(f) != ReduceOp::Sum) out += std::string(" op ") + op_name(flag_op(f));
      break;
    case StepKind::Compute: {
      const ComputeInfo& c = g.compute(s);
      out = "compute " + g.names[c.name];
      if (c.kind != ComputeKind::Generic) {
        out += "(";
        for (uint32_t i = 0; i < 2 && i < c.reads_cnt; ++i) out += (i ? ", " : "") + g.range_name(g.ranges[c.reads_off + i]);
        if (c.split_kv) out += ", " + g.range_name(g.ranges[c.reads_off + c.reads_cnt - 1]);  // V
        out += ") into ";
        for (uint32_t i = 0; i < c.writes_cnt; ++i) out += (i ? ", " : "") + g.range_name(g.ranges[c.writes_off + i]);
        out += std::string(" mask ") + mask_name(c.mask);
      } else {
        if (c.reads_cnt) {
          out += " reads ";
          for (uint32_t i = 0; i < c.reads_cnt; ++i) out += (i ? ", " : "") + g.range_name(g.ranges[c.reads_off + i]);
        }
        if (c.writes_cnt) {
          out += " writes ";
          for (uint32_t i = 0; i < c.writes_cnt; ++i) out += (i ? ", " : "") + g.range_name(g.ranges[c.writes_off + i]);
        }
      }
      if (c.flops > 0) out += " flops " + std::to_string(static_cast<uint64_t>(c.flops));
      break;
    }
    case StepKind::Collective: {
      const CollInfo& c = g.coll(s);
      const GroupInfo& gr = g.groups[c.group];
      out = coll_name(c.kind);
      if (c.kind != CollKind::Barrier) out += " " + g.range_name(r);
      if (c.kind == CollKind::Bcast || c.kind == CollKind::Reduce) out += " root r" + std::to_string(c.root);
      if (c.kind == CollKind::Alltoall && c.into.cnt) out += " into " + g.range_name(c.into);
      if ((c.kind == CollKind::Allreduce || c.kind == CollKind::Reduce || c.kind == CollKind::ReduceScatter) && c.op != ReduceOp::Sum)
        out += std::string(" op ") + op_name(c.op);
      out += " over ranks(" + std::to_string(gr.start) + ", " + std::to_string(gr.count) +
             (gr.stride != 1 ? ", " + std::to_string(gr.stride) : "") + ") #" + std::to_string(c.seq);
      break;
    }
    case StepKind::Wait: {
      out = "wait";
      const StepId* b = g.handles_begin(s);
      const StepId* e = g.handles_end(s);
      if (b == e) out += " (nothing outstanding)";
      for (const StepId* h = b; h != e; ++h) out += (h == b ? " #" : ", #") + std::to_string(*h);
      break;
    }
  }
  return out;
}

std::string step_where(const StepGraph& g, const SourceManager& sm, StepId s) {
  Loc l = g.loc(s);
  if (!l.valid()) return "?";
  return sm.file(l.file).name() + ":" + std::to_string(l.line);
}

void write_text(std::ostream& os, const StepGraph& g, const SourceManager& sm, uint64_t max_steps) {
  os << "graph " << g.schedule << " (" << g.file << ")  N = " << g.nranks;
  if (g.only_rank >= 0) os << "  rank " << g.only_rank << " only";
  for (const auto& [k, v] : g.params) os << "  " << k << " = " << v;
  os << "\n";
  for (const auto& b : g.buffers) {
    os << "buffer " << b.name << "[";
    for (size_t i = 0; i < b.dims.size(); ++i) os << (i ? ", " : "") << b.dims[i];
    os << "] " << b.chunk_bytes << " bytes/chunk " << dtype_name(b.dtype) << (b.accumulator ? " accumulator" : "") << "\n";
  }
  for (const auto& r : g.inits) {
    os << "init " << g.range_name(r.range);
    if (r.kind == InitKind::OnRank) os << " on r" << r.rank;
    else {
      const GroupInfo& gr = g.groups[r.group];
      os << (r.kind == InitKind::Contrib ? " contrib" : " owned") << " over ranks(" << gr.start << ", " << gr.count
         << (gr.stride != 1 ? ", " + std::to_string(gr.stride) : "") << ")";
    }
    os << "\n";
  }
  for (const auto& x : g.expects) {
    os << "expect " << expect_name(x.kind);
    if (x.kind != ExpectKind::Nothing) {
      os << "(";
      for (size_t i = 0; i < x.bufs.size(); ++i) os << (i ? ", " : "") << g.range_name(x.bufs[i]);
      if (x.kind == ExpectKind::Reduce || x.kind == ExpectKind::Broadcast || x.kind == ExpectKind::Gather || x.kind == ExpectKind::Scatter)
        os << ", r" << x.root;
      if (x.mask != Mask::None) os << ", " << mask_name(x.mask);
      const GroupInfo& gr = g.groups[x.group];
      os << ") over ranks(" << gr.start << ", " << gr.count << (gr.stride != 1 ? ", " + std::to_string(gr.stride) : "") << ")";
    }
    os << "\n";
  }
  os << "steps " << g.size() << ", dependencies " << g.dep_total() << "\n";
  uint64_t n = max_steps ? std::min<uint64_t>(max_steps, g.size()) : g.size();
  uint32_t home = 0;
  if (g.size()) home = g.loc(0).file;
  for (StepId s = 0; s < n; ++s) {
    std::string line = "#";  // appended piece by piece: see peer_str in describe_step
    line += std::to_string(s);
    line.resize(std::max<size_t>(line.size() + 1, 8), ' ');
    line += 'r';
    line += std::to_string(g.rank(s));
    line.resize(std::max<size_t>(line.size() + 1, 14), ' ');
    std::string what = describe_step(g, s);
    if ((g.kind(s) == StepKind::Send || g.kind(s) == StepKind::Recv)) {
      StepId m = g.match(s);
      if (m != kNoStep) what += " (#" + std::to_string(m) + ")";
      else if (g.local(s) && g.p2p_info(s).cand_cnt) what += " (" + std::to_string(g.p2p_info(s).cand_cnt) + " candidates)";
      else if (g.local(s) && g.p2p_matched) what += " (unmatched)";
    }
    if (g.local(s)) what = "on: " + what;
    line += what;
    if (g.dep_count(s)) {
      line += "  after";
      for (StepId d : g.deps(s)) line += " #" + std::to_string(d);
    }
    Loc l = g.loc(s);
    line.resize(std::max<size_t>(line.size() + 2, 64), ' ');
    line += l.file == home ? "line " + std::to_string(l.line) : step_where(g, sm, s);
    os << line << "\n";
  }
  if (n < g.size()) os << "… " << (g.size() - n) << " more steps\n";
}

}  // namespace sg
