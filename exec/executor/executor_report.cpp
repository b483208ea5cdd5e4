// The executor's words for a step (kind, range, peer, tag, group, source location) and what a
// stalled dataflow run reports: the steps this rank waits on, with their source lines.
#include <string>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

std::string Executor::Impl::describe(StepId s) const {
  std::string d = step_kind_name(g.kind(s));
  StepKind k = g.kind(s);
  if (k == StepKind::Send || k == StepKind::Recv || k == StepKind::Copy || k == StepKind::Reduce || k == StepKind::Collective)
    d.append(" ").append(g.range_name(g.range(s)));  // appended: " " + … draws GCC 12's false -Wrestrict here
  if (k == StepKind::Send || k == StepKind::Recv) {
    uint32_t p = g.peer(s);
    d += k == StepKind::Send ? " to " : " from ";
    d += p == kAnyRank ? std::string("any rank") : "rank " + std::to_string(p);
    if (g.local(s)) {
      int32_t t = g.p2p_info(s).tag;
      d += t == kAnyTag ? std::string(" tag any") : " tag " + std::to_string(t);
    }
  }
  if (k == StepKind::Collective) {
    const CollInfo& c = g.coll(s);
    const GroupInfo& gr = g.groups[c.group];
    d = std::string(coll_name(c.kind)) + " " + g.range_name(g.range(s)) + " over ranks(" + std::to_string(gr.start) + ", " +
        std::to_string(gr.count) + (gr.stride != 1 ? ", " + std::to_string(gr.stride) : std::string()) + ")";
  }
  Loc l = g.loc(s);
  if (l.valid()) d += " at " + sources.describe(l);
  return d;
}

std::string Executor::Impl::source_line(StepId s) const {
  Loc l = g.loc(s);
  if (!l.valid() || l.file == 0) return "";
  return std::string(sources.file(l.file).line(l.line));
}

// A stall report's line for a step it waits on, with the step's source line.
std::string Executor::Impl::waits_on(StepId s) const {
  std::string out = "\n  waits on " + describe(s), line = source_line(s);
  return line.empty() ? out : out + "\n      " + line;
}

std::string Executor::Impl::stall_report(double waited) const {
  std::string out = "rank " + std::to_string(me) + ": no progress for " + std::to_string(static_cast<int>(waited)) + " s; " +
                    std::to_string(completed) + " of " + std::to_string(g.size()) + " steps done";
  // What it waits on: the steps started and not finished, in program order (at most 4), or
  // else the first step not started.
  int shown = 0;
  for (StepId s = 0; s < g.size() && shown < 4; ++s) {
    if ((st[s] & kIssued) && !(st[s] & kCompleted)) {
      out += waits_on(s);
      ++shown;
    }
  }
  for (size_t i = 0; i < gated.size() && shown < 4; ++i, ++shown)
    out += "\n  waits for the device's work before it starts " + describe(gated[i].s);
  for (StepId s = 0; s < g.size() && shown < 4; ++s)
    if (st[s] & kDeferred) {
      out += "\n  holds back " + describe(s) + " until " + describe(coll_prev[s]) +
             " starts (collectives on one communicator start in program order)";
      ++shown;
    }
  if (shown == 0 && buffered_out > 0)
    for (StepId s = 0; s < sent_copy.size(); ++s)
      if (!sent_copy[s].empty()) {  // the first buffered send no receive has taken
        out += "\n  " + std::to_string(buffered_out) + " buffered send(s) not received yet, the first:" + waits_on(s);
        ++shown;
        break;
      }
  if (!ipc_acks.empty() || ipc_acks_out > 0) {  // (IPC: a sender waits for these)
    out += "\n  " + std::to_string(ipc_acks.size()) + " copies from peers' memory not done on the device, " + std::to_string(ipc_acks_out) +
           " acknowledgements not delivered";
    ++shown;
  }
  if (shown == 0)
    for (StepId s = 0; s < g.size(); ++s)
      if (!(st[s] & kIssued)) {
        out += "\n  next step " + describe(s) + " is not ready";
        break;
      }
  return out;
}

}  // namespace sg::exec
