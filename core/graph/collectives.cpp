// Collective instances: like MPI, the k-th collective each member issues on a group belongs to
// instance k of that group, whether written in global view (every member at once) or inside
// `on` blocks (one member at a time). An instance missing a member, or whose members disagree
// on kind, root, op or size, is kept and marked: the verifier reports it as a deadlock.
#include <algorithm>
#include <map>

#include "core/graph/passes.hpp"

namespace sg {

void group_collectives(StepGraph& g, Diagnostics& diags) {
  (void)diags;
  g.instances.clear();
  g.instance_steps.clear();
  std::map<std::pair<uint32_t, uint32_t>, std::vector<StepId>> by_key;
  for (StepId s = 0; s < g.size(); ++s) {
    if (g.kind(s) != StepKind::Collective) continue;
    const CollInfo& c = g.coll(s);
    by_key[{c.group, c.seq}].push_back(s);
  }
  for (auto& [key, steps] : by_key) {
    const GroupInfo& gr = g.groups[key.first];
    std::sort(steps.begin(), steps.end(), [&](StepId a, StepId b) { return gr.index_of(g.rank(a)) < gr.index_of(g.rank(b)); });
    Instance in;
    in.group = key.first;
    in.seq = key.second;
    in.steps_off = static_cast<uint32_t>(g.instance_steps.size());
    in.steps_cnt = static_cast<uint32_t>(steps.size());
    in.complete = g.only_rank >= 0 || steps.size() == gr.count;
    const CollInfo& c0 = g.coll(steps[0]);
    uint64_t bytes0 = g.range_bytes(g.range(steps[0]));
    for (StepId s : steps) {
      const CollInfo& c = g.coll(s);
      if (c.kind != c0.kind || c.root != c0.root || c.op != c0.op || g.range_bytes(g.range(s)) != bytes0) in.consistent = false;
      g.colls[g.ref(s)].instance = static_cast<uint32_t>(g.instances.size());
      g.instance_steps.push_back(s);
    }
    g.instances.push_back(in);
  }
}

}  // namespace sg
