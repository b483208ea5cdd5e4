// Summary numbers of a step graph, and the longest chain of steps ("rounds"): dependencies
// count zero, a message (or a collective) counts one, so a ring all-reduce has 2(N−1) rounds.
#include <algorithm>
#include <ostream>

#include "core/base/sizes.hpp"
#include "core/graph/elaborate.hpp"
#include "core/io/writers.hpp"

namespace sg {

GraphStats compute_stats(const StepGraph& g) {
  GraphStats s;
  s.steps = g.size();
  s.deps = g.dep_total();
  s.memory = g.memory_bytes();
  std::vector<uint64_t> per_rank(g.nranks, 0);
  // Longest chain: steps are in a topological order except for messages (a receive may come
  // before its send in emission order), so relax in id order and repeat while anything grows.
  std::vector<uint32_t> depth(g.size(), 0);
  for (StepId x = 0; x < g.size(); ++x) {
    ++s.by_kind[static_cast<int>(g.kind(x))];
    ++per_rank[g.rank(x)];
    if (g.kind(x) == StepKind::Send) {
      s.bytes_moved += g.range_bytes(g.range(x));
      if (g.match(x) != kNoStep) ++s.transfers;
    }
  }
  // A nonblocking step starts early and completes late: steps that depend on it wait for its
  // start only, its wait for its completion. So each step has a start and a done depth; a
  // receive is done one hop after its send; a collective one hop after its last member starts.
  std::vector<uint32_t>& done = depth;
  std::vector<uint32_t> start(g.size(), 0);
  bool changed = true;
  int passes = 0;
  while (changed && passes++ < 256) {
    changed = false;
    for (StepId x = 0; x < g.size(); ++x) {
      uint32_t st = start[x];
      for (StepId p : g.deps(x)) st = std::max(st, g.nonblocking(p) ? start[p] : done[p]);
      uint32_t d = std::max(st, done[x]);
      switch (g.kind(x)) {
        case StepKind::Recv: {
          StepId m = g.match(x);
          if (m != kNoStep) d = std::max(d, start[m] + 1);
          break;
        }
        case StepKind::Wait:
          for (const StepId* h = g.handles_begin(x); h != g.handles_end(x); ++h) d = std::max(d, done[*h]);
          break;
        case StepKind::Collective: {
          const CollInfo& c = g.coll(x);
          if (c.instance < g.instances.size()) {
            const Instance& in = g.instances[c.instance];
            for (uint32_t k = 0; k < in.steps_cnt; ++k) d = std::max(d, start[g.instance_steps[in.steps_off + k]] + 1);
          }
          break;
        }
        default: break;
      }
      if (st != start[x] || d != done[x]) {
        start[x] = st;
        done[x] = d;
        changed = true;
      }
    }
  }
  s.rounds_converged = !changed;
  for (uint32_t d : depth) s.rounds = std::max<uint64_t>(s.rounds, d);
  for (uint64_t c : per_rank) s.max_rank_steps = std::max(s.max_rank_steps, c);
  s.collective_instances = g.instances.size();
  for (const auto& in : g.instances)
    if (!in.complete || !in.consistent) ++s.incomplete_instances;
  return s;
}

void write_stats(std::ostream& os, const StepGraph& g, const GraphStats& s) {
  os << "schedule      " << g.schedule << " (" << g.file << ")\n";
  os << "ranks         " << g.nranks << (g.only_rank >= 0 ? "  (rank " + std::to_string(g.only_rank) + " only)" : "") << "\n";
  for (const auto& [k, v] : g.params) os << "param         " << k << " = " << v << "\n";
  os << "steps         " << with_commas(s.steps) << "  (";
  bool first = true;
  for (int k = 0; k < 7; ++k) {
    if (!s.by_kind[k]) continue;
    os << (first ? "" : ", ") << with_commas(s.by_kind[k]) << " " << step_kind_name(static_cast<StepKind>(k));
    first = false;
  }
  os << ")\n";
  os << "transfers     " << with_commas(s.transfers) << "\n";
  os << "bytes moved   " << with_commas(s.bytes_moved) << " (" << human_bytes(s.bytes_moved) << ")\n";
  os << "dependencies  " << with_commas(s.deps) << "\n";
  os << "rounds        " << (s.rounds_converged ? "" : ">= ") << s.rounds << "  (longest chain of messages)\n";
  os << "busiest rank  " << with_commas(s.max_rank_steps) << " steps\n";
  if (s.collective_instances)
    os << "collectives   " << s.collective_instances << " instances"
       << (s.incomplete_instances ? ", " + std::to_string(s.incomplete_instances) + " incomplete or inconsistent" : "") << "\n";
  os << "graph memory  " << human_bytes(s.memory) << "  (" << (s.steps ? s.memory / s.steps : 0) << " bytes/step)\n";
}

void write_stats_json(std::ostream& os, const StepGraph& g, const GraphStats& s) {
  os << "{\"schedule\":\"" << g.schedule << "\",\"ranks\":" << g.nranks << ",\"steps\":" << s.steps << ",\"transfers\":" << s.transfers
     << ",\"bytes_moved\":" << s.bytes_moved << ",\"dependencies\":" << s.deps << ",\"rounds\":" << s.rounds
     << ",\"max_rank_steps\":" << s.max_rank_steps << ",\"memory_bytes\":" << s.memory
     << ",\"bytes_per_step\":" << (s.steps ? static_cast<double>(s.memory) / static_cast<double>(s.steps) : 0.0) << "}\n";
}

}  // namespace sg
