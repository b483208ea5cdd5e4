// GOAL form of a step graph: the text schedule format that LogGOPSim's txt2bin reads
// (github.com/spcl/LogGOPSim, src/LogGOPSim/txt2bin.re), so the same graph can be simulated in
// the LogGOPS model.
//
// Mapping (docs/stepgraph.md has the reasons):
// - one `rank R {` … `}` block per rank, every rank, in order (txt2bin needs them all, in order);
// - step #K becomes the operation labelled sK: a send `send Bb to P tag T`, a receive
//   `recv Bb from P tag T` (`-1` for a wildcard), copy and reduce `calc ⌈bytes × ns_per_byte⌉`,
//   compute `calc ⌈flops × ns_per_flop⌉ cpu 1` (a second processing element, so kernels overlap
//   the CPU's message overheads as the dataflow allows), wait `calc 0`;
// - a receive whose data is reduced, or a choreographic receive with dependencies, gets a second
//   operation aK (`calc` of the reduction, or 0): a choreographic receive is posted at once and
//   its data applied after the steps it has a hazard with, so sK has no dependencies and aK has
//   them; steps that depend on #K wait for aK;
// - a dependency on a blocking step is `requires` (after it completed: a send completes at once
//   when eager, when matched under rendezvous, as LogGOPSim's S decides), on a nonblocking step
//   `irequires` (after it started); a wait requires its handles;
// - tags: a message whose receive is known (every choreographic transfer; an MPI message into a
//   destination and communicator without wildcard receives) gets tag k, its index among the
//   messages from its source to its destination, so LogGOPSim's (source, tag) matching pairs
//   exactly what the step graph pairs. MPI messages into a destination and communicator with a
//   wildcard receive keep MPI's matching: tag 2^31 + j, j numbering the (communicator, tag) pairs,
//   and `from -1` / `tag -1` for wildcards (LogGOPSim matches in posting and arrival order).
// - a 0-byte message is written as 1b: LogGOPSim charges (size − 1)·G in unsigned arithmetic.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <unordered_map>

#include "core/graph/match_queues.hpp"
#include "core/io/writers.hpp"

namespace sg {

namespace {

bool has_apply(const StepGraph& g, StepId s) {
  return g.kind(s) == StepKind::Recv && ((g.flags(s) & kFlagReduce) || (!g.local(s) && g.dep_count(s) > 0));
}

// ⌈units × rate⌉, where a product within 1e-9 (relative) of an integer counts as that integer
// (30 × 0.1 is 3.0000000000000004 in binary floating point).
uint64_t cost(double units, double rate) {
  if (!(units > 0) || !(rate > 0)) return 0;
  double x = units * rate;
  if (x >= 9.0e18) return 9000000000000000000ull;
  double r = std::nearbyint(x);
  if (std::fabs(x - r) <= 1e-9 * std::max(1.0, x)) return static_cast<uint64_t>(r);
  return static_cast<uint64_t>(std::ceil(x));
}

std::string comm_name(const StepGraph& g, uint32_t comm) {
  const GroupInfo& gr = g.groups[comm];
  std::string out = "ranks(";
  out += std::to_string(gr.start);
  out += ", ";
  out += std::to_string(gr.count);
  if (gr.stride != 1) {
    out += ", ";
    out += std::to_string(gr.stride);
  }
  out += ")";
  return out;
}

std::string step_ref(const StepGraph& g, StepId s) {
  std::string out = "rank ";
  out += std::to_string(g.rank(s));
  out += " step #";
  out += std::to_string(s);
  out += ": ";
  out += describe_step(g, s);
  return out;
}

}  // namespace

bool plan_goal(const StepGraph& g, GoalPlan& plan, Diagnostics& diags) {
  plan = GoalPlan{};
  if (g.only_rank >= 0) {
    diags.error(Loc{}, "cannot export one rank's program to GOAL: LogGOPSim needs every rank (drop --rank)");
    return false;
  }
  uint64_t errors_before = diags.error_count();
  plan.tag.assign(g.size(), 0);

  // Destinations and communicators where MPI matching is not fixed (a wildcard receive there).
  P2PEnds ends = p2p_ends(g);
  std::set<std::pair<uint32_t, uint32_t>> wild;
  for (const auto& [key, sr] : ends) {
    const auto& [sends, recvs] = sr;
    bool w = std::any_of(recvs.begin(), recvs.end(), [&](StepId r) { return g.flags(r) & (kFlagAnySource | kFlagAnyTag); });
    if (!w) continue;
    wild.insert(key);
    if (sends.size() != recvs.size() && !recvs.empty()) {
      std::string m = "cannot export to GOAL: messages into a rank and communicator with wildcard receives must equal its receives (rank ";
      m += std::to_string(key.first);
      m += " on ";
      m += comm_name(g, key.second);
      m += ": ";
      m += std::to_string(sends.size());
      m += " sends, ";
      m += std::to_string(recvs.size());
      m += " receives); LogGOPSim would end with messages or receives left in its queues";
      diags.error(g.loc(recvs.front()), m);
    }
  }
  auto is_wild = [&](StepId s, uint32_t dst) { return g.local(s) && wild.count({dst, g.p2p_info(s).comm}); };
  // Messages into each rank, and into each (rank, communicator) from local-view sends: a receive
  // with `tag any` (GOAL's tag -1 takes every message) is exact only where they are the same.
  std::vector<uint64_t> incoming(g.nranks, 0);
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Send && g.peer(s) < g.nranks) ++incoming[g.peer(s)];

  std::map<std::pair<uint32_t, int32_t>, uint32_t> mpi_tag;  // (comm, tag) -> j
  auto mpi = [&](uint32_t comm, int32_t tag) {
    auto [it, fresh] = mpi_tag.emplace(std::make_pair(comm, tag), static_cast<uint32_t>(mpi_tag.size()));
    (void)fresh;
    return kGoalMpiTagBase + it->second;
  };
  std::unordered_map<uint64_t, uint32_t> seq;  // (src, dst) -> messages so far
  auto cannot = [&](StepId s, const std::string& why) {
    std::string m = "cannot export to GOAL: ";
    m += why;
    m += " (";
    m += step_ref(g, s);
    m += ")";
    diags.error(g.loc(s), m);
  };

  // Sends first: a receive learns its tag from its matched send, which may come later in step order.
  for (StepId s = 0; s < g.size() && !diags.too_many(); ++s) {
    switch (g.kind(s)) {
      case StepKind::Collective:
        cannot(s, "a collective step; expand collectives into sends and receives first (LogGOPSim simulates send, recv and calc only)");
        break;
      case StepKind::Send: {
        uint32_t dst = g.peer(s);
        if (is_wild(s, dst)) {
          plan.tag[s] = mpi(g.p2p_info(s).comm, g.p2p_info(s).tag);
          ++plan.mpi_messages;
          break;
        }
        StepId m = g.match(s);
        if (m == kNoStep) {
          cannot(s, "a send that no receive matches; LogGOPSim would end with it in the destination's unexpected queue");
          break;
        }
        uint32_t& k = seq[(uint64_t{g.rank(s)} << 32) | dst];
        if (k >= kGoalMpiTagBase) {
          cannot(s, "more than 2^31 messages from one rank to another");
          break;
        }
        plan.tag[s] = plan.tag[m] = k++;
        ++plan.exact_messages;
        break;
      }
      default: break;
    }
  }
  for (StepId r = 0; r < g.size() && !diags.too_many(); ++r) {
    if (g.kind(r) != StepKind::Recv) continue;
    if (!is_wild(r, g.rank(r))) {
      if (g.match(r) == kNoStep) cannot(r, "a receive that no send matches; LogGOPSim would end with it in its receive queue");
      continue;
    }
    const P2PInfo& p = g.p2p_info(r);
    if (p.cand_cnt == 0) {
      cannot(r, "a receive that no send can match; LogGOPSim would end with it in its receive queue");
      continue;
    }
    if (p.tag != kAnyTag) {
      plan.tag[r] = mpi(p.comm, p.tag);
      continue;
    }
    uint64_t local_in = ends[{g.rank(r), p.comm}].first.size();
    if (local_in != incoming[g.rank(r)]) {
      cannot(r,
             "a receive with tag any on a rank that also receives messages of another communicator or choreographic "
             "transfers; GOAL has no communicators and its tag -1 would match those too");
      continue;
    }
    plan.tag[r] = kGoalAnyTag;
  }
  plan.mpi_tags = static_cast<uint32_t>(mpi_tag.size());
  return diags.error_count() == errors_before;
}

void write_goal(std::ostream& os, const StepGraph& g, const GoalPlan& plan, const GoalOptions& o) {
  auto clean = [](std::string s) {
    for (char& c : s)
      if (c == '\n' || c == '\r') c = ' ';
    return s;
  };
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  // Header: txt2bin takes `//` comments only at the start of a line, and no indentation anywhere.
  os << "// GOAL schedule for LogGOPSim (txt2bin -i FILE -o FILE.bin; LogGOPSim -f FILE.bin), by stepgraph compile --format goal\n";
  os << "// schedule " << clean(g.schedule) << " (" << clean(g.file) << "), N = " << g.nranks;
  for (const auto& [k, v] : g.params) os << ", " << clean(k) << " = " << v;
  os << "\n";
  os << "// times in ns (LogGOPSim's unit for L, o, g, G, O): compute ceil(flops * " << num(o.ns_per_flop)
     << ") on cpu 1; copy, reduce and reducing receives ceil(bytes * " << num(o.ns_per_byte) << ") on cpu 0; waits calc 0\n";
  os << "// labels: sK is step #K of `stepgraph compile --format text`; aK applies receive #K's data when its dependencies are done\n";
  os << "// tags: " << plan.exact_messages
     << " messages with a known receive carry k = their index among the messages from their source to their destination";
  if (plan.mpi_messages)
    os << "; " << plan.mpi_messages << " messages into wildcard receives carry 2^31 + j, j < " << plan.mpi_tags
       << " numbering the (communicator, MPI tag) pairs";
  os << "\n";
  os << "num_ranks " << g.nranks << "\n";

  auto end_label = [&](StepId d) {
    std::string l = has_apply(g, d) ? "a" : "s";
    l += std::to_string(d);
    return l;
  };
  std::string line;
  auto dep_line = [&](const std::string& who, bool start_only, const std::string& on) {
    line = who;
    line += start_only ? " irequires " : " requires ";
    line += on;
    line += '\n';
    os << line;
  };
  auto deps = [&](const std::string& who, StepId s) {
    for (StepId d : g.deps(s)) {
      bool start_only = g.nonblocking(d);
      if (start_only && g.kind(s) == StepKind::Wait && std::find(g.handles_begin(s), g.handles_end(s), d) != g.handles_end(s))
        continue;  // the wait requires its completion below
      std::string on = "s";
      on += std::to_string(d);
      dep_line(who, start_only, start_only ? on : end_label(d));
    }
  };
  auto peer_tag = [&](uint32_t peer, uint32_t tag) {
    line += peer == kAnyRank ? std::string("-1") : std::to_string(peer);
    line += " tag ";
    line += tag == kGoalAnyTag ? std::string("-1") : std::to_string(tag);
    line += '\n';
  };

  auto ix = g.rank_index();
  for (uint32_t r = 0; r < g.nranks; ++r) {
    os << "\nrank " << r << " {\n";
    for (uint64_t i = ix.off[r]; i < ix.off[r + 1]; ++i) {
      StepId s = ix.steps[i];
      std::string me = "s";
      me += std::to_string(s);
      line = me;
      line += ": ";
      switch (g.kind(s)) {
        case StepKind::Send:
          line += "send ";
          line += std::to_string(std::max<uint64_t>(g.range_bytes(g.range(s)), 1));
          line += "b to ";
          peer_tag(g.peer(s), plan.tag[s]);
          os << line;
          deps(me, s);
          break;
        case StepKind::Recv: {
          uint64_t bytes = g.range_bytes(g.range(s));
          line += "recv ";
          line += std::to_string(std::max<uint64_t>(bytes, 1));
          line += "b from ";
          peer_tag(g.peer(s), plan.tag[s]);
          os << line;
          // An MPI receive is posted in program order; a choreographic one at once.
          if (g.local(s)) deps(me, s);
          if (has_apply(g, s)) {
            std::string ap = "a";
            ap += std::to_string(s);
            line = ap;
            line += ": calc ";
            line += std::to_string((g.flags(s) & kFlagReduce) ? cost(static_cast<double>(bytes), o.ns_per_byte) : 0);
            line += '\n';
            os << line;
            dep_line(ap, false, me);
            if (!g.local(s)) deps(ap, s);
          }
          break;
        }
        case StepKind::Copy:
        case StepKind::Reduce:
          line += "calc ";
          line += std::to_string(cost(static_cast<double>(g.range_bytes(g.range(s))), o.ns_per_byte));
          line += '\n';
          os << line;
          deps(me, s);
          break;
        case StepKind::Compute:
          line += "calc ";
          line += std::to_string(cost(g.compute(s).flops, o.ns_per_flop));
          line += " cpu 1\n";
          os << line;
          deps(me, s);
          break;
        case StepKind::Wait:
          line += "calc 0\n";
          os << line;
          deps(me, s);
          for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) dep_line(me, false, end_label(*h));
          break;
        case StepKind::Collective:  // refused by plan_goal
          line += "calc 0\n";
          os << line;
          deps(me, s);
          break;
      }
    }
    os << "}\n";
  }
}

}  // namespace sg
