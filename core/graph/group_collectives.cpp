// Collective instances: like MPI, the k-th collective each member issues on a group belongs to
// instance k of that group, whether written in global view (every member at once) or inside
// `on` blocks (one member at a time). An instance missing a member, or whose members disagree
// on kind, root, op or size, is kept and marked: the verifier reports it as a deadlock.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/graph/passes.hpp"

namespace sg {

void group_collectives(StepGraph& g, Diagnostics& diags) {
  (void)diags;
  g.instances.clear();
  g.instance_steps.clear();
  // Instances in (group, seq) order. The members of one call usually share their colls entry
  // (elaborate), so the keys are sorted per entry, not per step: a training step at N = 8,192
  // has 8 M collective steps and 1 M entries (a map of vectors by key took 10 % of its `sim`).
  auto key = [&](uint32_t e) { return (uint64_t{g.colls[e].group} << 32) | g.colls[e].seq; };
  const uint32_t entries = static_cast<uint32_t>(g.colls.size());
  std::vector<uint32_t> order(entries);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  std::vector<uint32_t> inst_of(entries);
  std::vector<uint64_t> keys;
  for (uint32_t e : order) {
    if (keys.empty() || keys.back() != key(e)) keys.push_back(key(e));
    inst_of[e] = static_cast<uint32_t>(keys.size() - 1);
  }
  std::vector<uint32_t>().swap(order);
  // Keys no step uses (an entry left behind) make no instance.
  {
    std::vector<uint8_t> used(keys.size(), 0);
    for (StepId s = 0; s < g.size(); ++s)
      if (g.kind(s) == StepKind::Collective) used[inst_of[g.ref(s)]] = 1;
    std::vector<uint32_t> renum(keys.size());
    uint32_t n = 0;
    for (size_t k = 0; k < keys.size(); ++k) {
      renum[k] = n;
      if (used[k]) keys[n++] = keys[k];
    }
    keys.resize(n);
    for (uint32_t& i : inst_of) i = renum[i];
  }
  // Each instance's steps, in step order (a counting sort), then in group member order.
  std::vector<uint32_t> at(keys.size() + 1, 0);
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Collective) ++at[inst_of[g.ref(s)] + 1];
  for (size_t i = 0; i < keys.size(); ++i) at[i + 1] += at[i];
  g.instance_steps.resize(at[keys.size()]);
  {
    std::vector<uint32_t> fill(at.begin(), at.end() - 1);
    for (StepId s = 0; s < g.size(); ++s)
      if (g.kind(s) == StepKind::Collective) g.instance_steps[fill[inst_of[g.ref(s)]]++] = s;
  }
  g.instances.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t group = static_cast<uint32_t>(keys[i] >> 32);
    const GroupInfo& gr = g.groups[group];
    StepId* b = g.instance_steps.data() + at[i];
    StepId* e = g.instance_steps.data() + at[i + 1];
    std::sort(b, e, [&](StepId x, StepId y) { return gr.index_of(g.rank(x)) < gr.index_of(g.rank(y)); });
    Instance in;
    in.group = group;
    in.seq = static_cast<uint32_t>(keys[i]);
    in.steps_off = at[i];
    in.steps_cnt = at[i + 1] - at[i];
    in.complete = g.only_rank >= 0 || in.steps_cnt == gr.count;
    if (!g.built_ranks.empty()) {  // every member built is there
      uint32_t built = 0;
      for (uint32_t r : g.built_ranks) built += gr.index_of(r) >= 0;
      in.complete = in.steps_cnt == built;
    }
    const CollInfo& c0 = g.coll(*b);
    uint64_t bytes0 = g.range_bytes(g.range(*b));
    for (StepId* p = b; p != e; ++p) {
      const CollInfo& c = g.coll(*p);
      if (c.kind != c0.kind || c.root != c0.root || c.op != c0.op || g.range_bytes(g.range(*p)) != bytes0) in.consistent = false;
    }
    g.instances.push_back(in);
  }
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Collective) g.colls[g.ref(s)].instance = inst_of[g.ref(s)];
}

}  // namespace sg
