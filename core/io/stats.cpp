// Summary numbers of a step graph, and the longest chain of steps ("rounds"): dependencies
// count zero, a message (or a collective) counts one, so a ring all-reduce has 2(N−1) rounds.
#include <algorithm>
#include <ostream>

#include "core/base/sizes.hpp"
#include "core/graph/elaborate.hpp"
#include "core/io/writers.hpp"

namespace sg {

namespace {

// The longest chain of messages: dependencies count zero, a message (or a collective) one, so a
// ring all-reduce has 2(N−1) rounds. A nonblocking step starts early and completes late: steps
// that depend on it wait for its start only, its wait for its completion. So each step has a
// start and a done node; a receive is done one hop after its send starts; a collective one hop
// after its last member starts (an instance node, not members² edges). Each node's depth is the
// most of its predecessors' (which the graph lists: dependencies, the matched send, the handles,
// the instance's members), found by one depth-first walk. (Relaxing in step order until nothing
// grew took 256 passes and 47 s on a training step at N = 8,192, and stopped short.) A cycle
// (a deadlock) leaves a lower bound: `exact` false.
uint64_t longest_chain(const StepGraph& g, bool& exact) {
  exact = true;
  const uint64_t n = g.size(), nodes = 2 * n + g.instances.size();
  auto start = [](StepId x) { return uint64_t{2} * x; };
  auto done = [](StepId x) { return uint64_t{2} * x + 1; };
  std::vector<uint32_t> depth(nodes, 0);
  std::vector<uint8_t> state(nodes, 0);  // 0 new, 1 on the walk's stack, 2 known
  // A node's k-th predecessor and the weight of that edge; false past the last.
  auto pred = [&](uint64_t v, uint32_t k, uint64_t& u, uint32_t& w) {
    w = 0;
    if (v >= 2 * n) {  // an instance: its members' starts, one hop
      const Instance& in = g.instances[v - 2 * n];
      if (k >= in.steps_cnt) return false;
      u = start(g.instance_steps[in.steps_off + k]);
      w = 1;
      return true;
    }
    StepId x = static_cast<StepId>(v / 2);
    if (v % 2 == 0) {
      auto d = g.deps(x);
      if (k >= d.size()) return false;
      StepId p = d.begin()[k];
      u = g.nonblocking(p) ? start(p) : done(p);
      return true;
    }
    if (k == 0) {
      u = start(x);
      return true;
    }
    --k;
    switch (g.kind(x)) {
      case StepKind::Recv:
        if (k > 0 || g.match(x) == kNoStep) return false;
        u = start(g.match(x));
        w = 1;
        return true;
      case StepKind::Wait:
        if (g.handles_begin(x) + k >= g.handles_end(x)) return false;
        u = done(g.handles_begin(x)[k]);
        return true;
      case StepKind::Collective:
        if (k > 0 || g.coll(x).instance >= g.instances.size()) return false;
        u = 2 * n + g.coll(x).instance;
        return true;
      default: return false;
    }
  };
  std::vector<std::pair<uint64_t, uint32_t>> stack;  // (node, its next predecessor)
  for (uint64_t root = 0; root < nodes; ++root) {
    if (state[root]) continue;
    state[root] = 1;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      const auto [v, k] = stack.back();
      uint64_t u;
      uint32_t w;
      if (!pred(v, k, u, w)) {
        state[v] = 2;
        stack.pop_back();
        continue;
      }
      if (state[u] == 0) {  // known first; this predecessor is taken again then
        state[u] = 1;
        stack.push_back({u, 0});
        continue;
      }
      if (state[u] == 2) depth[v] = std::max(depth[v], depth[u] + w);
      else exact = false;  // on the stack: a cycle, this edge left out
      stack.back().second = k + 1;
    }
  }
  uint32_t most = 0;
  for (uint64_t v = 0; v < 2 * n; ++v) most = std::max(most, depth[v]);
  return most;
}

}  // namespace

GraphStats compute_stats(const StepGraph& g) {
  GraphStats s;
  s.steps = g.size();
  s.deps = g.dep_total();
  s.memory = g.memory_bytes();
  std::vector<uint64_t> per_rank(g.nranks, 0);
  for (StepId x = 0; x < g.size(); ++x) {
    ++s.by_kind[static_cast<int>(g.kind(x))];
    ++per_rank[g.rank(x)];
    if (g.kind(x) == StepKind::Send) {
      s.bytes_moved += g.range_bytes(g.range(x));
      if (g.match(x) != kNoStep) ++s.transfers;
    }
  }
  s.rounds = longest_chain(g, s.rounds_converged);
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
