// The expansion's entry point (expand_collectives) and its run: every instance planned, the
// estimated size checked against the memory limit, the new graph built and passed. Planning and
// building are apart (expand_collectives_choose.cpp, expand_collectives_build.cpp, around the
// Expander class of core/graph/expand_collectives_impl.hpp); gpus_in_group, which the planning
// and the simulator's memo share, is here with the public entry point.
#include "core/graph/expand_collectives.hpp"
#include "core/base/sizes.hpp"

#include <algorithm>

#include "core/base/errors.hpp"
#include "core/graph/expand_collectives_impl.hpp"

namespace sg {

using expand_detail::kNone;

// The most members of group `g` on one node of `gpus_per_node` ranks (ranks gpus·k … gpus·k +
// gpus - 1), or 0 when the platform has no nodes. A group's members ascend, so each node's are
// consecutive in the group's order, as the NCCL schedules lay nodes out.
uint32_t gpus_in_group(const GroupInfo& g, uint32_t gpus_per_node) {
  if (gpus_per_node == 0) return 0;
  uint32_t most = 0, run = 0, node = kNone;
  for (uint32_t k = 0; k < g.count; ++k) {
    uint32_t at = g.member(k) / gpus_per_node;
    run = at == node ? run + 1 : 1;
    node = at;
    most = std::max(most, run);
  }
  return most;
}

namespace expand_detail {

std::unique_ptr<StepGraph> Expander::run(ExpandReport* report) {
  if (g_.only_rank >= 0) {
    diags_.error(Loc{}, "expanding collectives needs the whole graph, not one rank's program (drop --rank)");
    return nullptr;
  }
  for (StepId s = 0; s < g_.size(); ++s)
    if (g_.kind(s) == StepKind::Collective && g_.coll(s).instance >= g_.instances.size()) {
      internal_error("expansion of a collective step without an instance (the collectives pass has not run)", g_.loc(s));
    }
  ExpandReport rep;
  plans_.resize(g_.instances.size());
  uint64_t steps = g_.size(), deps = g_.dep_total();
  for (uint32_t i = 0; i < g_.instances.size(); ++i) {
    ExpandedInstance e;
    if (!plan(i, e)) return nullptr;
    e.expanded = plans_[i].expand;
    if (plans_[i].expand) {
      ++rep.expanded;
      const Plan& p = plans_[i];
      uint64_t n = p.group.count;
      e.steps = p.algo ? p.algo->g->size() + 2 * n : 1;
      steps += e.steps - n;
      deps += (p.algo ? p.algo->g->dep_total() + p.algo->g->size() : 0) + 2 * n;
    } else {
      ++rep.kept;
    }
    rep.instances.push_back(std::move(e));
  }
  uint64_t later = steps * consumer_per_step_;
  uint64_t bytes = steps * StepGraph::kBytesPerStep + deps * 4 + later;
  if (max_memory_ && bytes > max_memory_) {
    if (report) report->too_big_steps = steps;
    auto& d = diags_.error(Loc{}, "expanding the collectives would need about " + human_bytes(bytes) + " (" + with_commas(steps) +
                                      " steps" + (later ? ", " + human_bytes(later) + " of it for the simulator's state" : "") + ")");
    d.notes.push_back({Loc{}, "the memory limit is " + human_bytes(max_memory_) +
                                  " (--max-memory); use fewer ranks, or cheaper algorithms (--algo), or in `sim` "
                                  "cost each collective once per shape instead (--collectives memo --model analytic)"});
    return nullptr;
  }
  build(steps, deps);
  for (uint32_t i = 0; i < rep.instances.size(); ++i) {
    rep.instances[i].entry = std::move(ends_[i].first);
    rep.instances[i].exit = std::move(ends_[i].second);
  }
  out_->expansion = true;
  if (!inst_.passes(*out_, diags_)) return nullptr;
  if (report) *report = std::move(rep);
  return std::move(out_);
}

}  // namespace expand_detail

std::unique_ptr<StepGraph> expand_collectives(const StepGraph& g, Session& s, const AlgoChoice& choice, const Instantiation& inst,
                                              Diagnostics& diags, ExpandReport* report, uint64_t max_memory, uint64_t consumer_per_step) {
  return expand_detail::Expander(g, s, choice, inst, diags, max_memory, consumer_per_step).run(report);
}

}  // namespace sg
