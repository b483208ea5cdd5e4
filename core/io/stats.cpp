// Summary numbers of a step graph, and the longest chain of steps ("rounds"): dependencies
// count zero, a message counts one, so a ring all-reduce has 2(N−1) rounds.
#include <algorithm>
#include <ostream>

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
  bool changed = true;
  int passes = 0;
  while (changed && passes++ < 64) {
    changed = false;
    for (StepId x = 0; x < g.size(); ++x) {
      uint32_t d = depth[x];
      for (const uint32_t* p = g.deps_begin(x); p != g.deps_end(x); ++p) d = std::max(d, depth[*p]);
      if (g.kind(x) == StepKind::Recv) {
        StepId m = g.match(x);
        if (m != kNoStep) d = std::max(d, depth[m] + 1);
      }
      if (d != depth[x]) {
        depth[x] = d;
        changed = true;
      }
    }
  }
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
  os << "rounds        " << s.rounds << "  (longest chain of messages)\n";
  os << "busiest rank  " << with_commas(s.max_rank_steps) << " steps\n";
  if (s.collective_instances)
    os << "collectives   " << s.collective_instances << " instances" << (s.incomplete_instances ? ", " + std::to_string(s.incomplete_instances) + " incomplete or inconsistent" : "") << "\n";
  os << "graph memory  " << human_bytes(s.memory) << "  (" << (s.steps ? s.memory / s.steps : 0) << " bytes/step)\n";
}

void write_stats_json(std::ostream& os, const StepGraph& g, const GraphStats& s) {
  os << "{\"schedule\":\"" << g.schedule << "\",\"ranks\":" << g.nranks << ",\"steps\":" << s.steps << ",\"transfers\":" << s.transfers
     << ",\"bytes_moved\":" << s.bytes_moved << ",\"dependencies\":" << s.deps << ",\"rounds\":" << s.rounds
     << ",\"max_rank_steps\":" << s.max_rank_steps << ",\"memory_bytes\":" << s.memory << ",\"bytes_per_step\":"
     << (s.steps ? static_cast<double>(s.memory) / static_cast<double>(s.steps) : 0.0) << "}\n";
}

}  // namespace sg
