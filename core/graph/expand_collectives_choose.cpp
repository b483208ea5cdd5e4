// The expansion's planning, per collective instance: whether it is expanded, which library
// algorithm replaces it (the user's, Open MPI's or NCCL's choice, else a fallback for a refused
// group size), that algorithm elaborated once per (schedule, N, parameters), and the protocol
// cost its sends pay. Apart from building the new graph (expand_collectives_build.cpp), which
// only follows the plans made here.
#include <algorithm>
#include <set>

#include "core/base/errors.hpp"
#include "core/graph/expand_collectives_impl.hpp"

namespace sg::expand_detail {

bool Expander::plan(uint32_t i, ExpandedInstance& e) {
  const Instance& in = g_.instances[i];
  Plan& p = plans_[i];
  p.group = g_.groups[in.group];
  const StepId* steps = g_.instance_steps.data() + in.steps_off;
  StepId s0 = steps[0];
  const CollInfo& c = g_.coll(s0);
  e.instance = i;
  e.kind = c.kind;
  e.group = in.group;
  e.members = p.group.count;
  e.bytes = g_.range_bytes(g_.range(s0));
  if (!in.complete || !in.consistent || in.steps_cnt != p.group.count) {
    e.why = !in.complete ? "kept: a member never issues it, a deadlock" : "kept: its members disagree, a deadlock";
    return true;
  }
  p.expand = true;
  p.old_steps.assign(steps, steps + in.steps_cnt);
  StepId lo = *std::min_element(p.old_steps.begin(), p.old_steps.end());
  StepId hi = *std::max_element(p.old_steps.begin(), p.old_steps.end());
  p.first_old = lo;
  p.block = hi - lo + 1 == in.steps_cnt;
  uint32_t n = p.group.count;
  if (n == 1) {
    e.why = "one member: nothing to communicate";
    return true;
  }
  uint32_t root = static_cast<uint32_t>(std::max<int64_t>(0, p.group.index_of(c.root)));
  bool rooted = c.kind == CollKind::Bcast || c.kind == CollKind::Reduce;
  // The group's own shape on the platform's nodes: NCCL sees as many GPUs per node as the
  // group has members there (one for a group strided across nodes).
  AlgoChoice here = choice_;
  here.gpus_per_node = gpus_in_group(p.group, choice_.gpus_per_node);
  AlgoPick pick;
  if (!choice_[c.kind].empty()) {
    pick.schedule = choice_[c.kind];
    pick.why = "--algo";
    if (here.gpus_per_node) pick.params.emplace_back("gpus", here.gpus_per_node);
  } else {
    pick = default_pick(here, c.kind, e.bytes, n);
    if (pick.schedule.empty()) {  // NCCL_ALGO / NCCL_PROTO enable nothing for this kind
      diags_.error(g_.loc(s0), pick.why);
      failed_ = true;
      return false;
    }
  }
  // The chosen algorithm, or when it refuses this group size its fallback, then the kind's
  // algorithms in order.
  std::vector<std::string> order = {pick.schedule};
  if (const AlgoName* a = find_algorithm(c.kind, pick.schedule); a && a->fallback) order.push_back(a->fallback);
  for (const AlgoName& a : algorithms_for(c.kind)) order.push_back(a.schedule);
  std::set<std::string> tried;
  std::string first_refusal;
  for (const std::string& sched : order) {
    if (!tried.insert(sched).second) continue;
    // Parameters like segments belong to the pick, not to a fallback.
    auto params = sched == pick.schedule ? pick.params : std::vector<std::pair<std::string, int64_t>>{};
    std::string refused;
    const Algo* a = get(sched, n, e.bytes, rooted, root, params, refused, g_.loc(s0));
    if (a) {
      p.algo = a;
      e.schedule = sched;
      e.why = pick.why;
      if (pick.costed && sched == pick.schedule) p.cost = cost_index(pick.cost);
      if (sched != pick.schedule) {
        e.why += "; " + pick.schedule + " refuses N = " + std::to_string(n) + ", fell back";
        std::string key = pick.schedule + "/" + std::to_string(n);
        if (noted_.insert(key).second)
          diags_.note(g_.loc(s0), pick.schedule + " does not support N = " + std::to_string(n) + " (" + first_refusal + "); " +
                                      coll_name(c.kind) + " over " + std::to_string(n) + " ranks uses " + sched + " instead");
      }
      return true;
    }
    if (failed_) return false;
    if (first_refusal.empty()) first_refusal = refused;
  }
  diags_.error(g_.loc(s0), std::string("no library algorithm for ") + coll_name(c.kind) + " supports N = " + std::to_string(n) + " (" +
                               first_refusal + ")");
  return false;
}

// The algorithm `sched` for n ranks, elaborated once per (schedule, n, parameters). Null when
// its `require` refuses n (with the reason in `refused`), or after an error (failed_).
const Algo* Expander::get(const std::string& sched, uint32_t n, uint64_t bytes, bool rooted, uint32_t root,
                          const std::vector<std::pair<std::string, int64_t>>& extra, std::string& refused, Loc at) {
  const Program* prog = s_.load_library(sched);
  const Schedule* sc = prog ? prog->find(sched) : nullptr;
  if (!sc) {
    internal_error("the library has no schedule '" + sched + "' for an expansion", at);
  }
  ElabOptions o;
  o.nranks = n;
  o.max_memory = max_memory_;
  for (const Param& p : sc->params) {
    if (p.kind != ParamKind::Int) continue;
    if (p.name == "size") o.sets.emplace_back("size", std::to_string(bytes));
    else if (p.name == "root" && rooted) o.sets.emplace_back("root", std::to_string(root));
    else
      for (const auto& [k, v] : extra)
        if (k == p.name) o.sets.emplace_back(k, std::to_string(v));
  }
  std::string key = sched + "/" + std::to_string(n);
  for (const auto& [k, v] : o.sets) key += "/" + k + "=" + v;
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    refused = it->second.refused;
    return it->second.algo.get();
  }
  Entry& en = cache_[key];
  // The algorithm's own diagnostics (a chunk size that size / N rounds down, a refused N) are
  // about the library file, not the user's program: keep them apart.
  Diagnostics scratch;
  auto ag = inst_.algorithm(Target{prog, sc}, o, scratch);
  if (!ag) {
    if (const Diagnostic* why = scratch.unsupported_since(0)) {
      en.refused = unsupported_reason(*why);
      refused = en.refused;
      return nullptr;
    }
    auto& d = diags_.error(
        at, "cannot expand this " + std::string(coll_name(find_kind(sched))) + " with " + sched + " for N = " + std::to_string(n));
    for (const Diagnostic& x : scratch.all())
      if (x.severity == Severity::Error) d.notes.push_back({x.loc, x.message});
    failed_ = true;
    return nullptr;
  }
  for (StepId s = 0; s < ag->size(); ++s)
    if (ag->kind(s) == StepKind::Collective) {
      internal_error("library algorithm " + sched + " itself holds collective steps", at);
    }
  auto a = std::make_unique<Algo>();
  a->schedule = sched;
  a->by_rank = ag->rank_index();
  a->has_successor.assign(ag->size(), 0);
  for (StepId s = 0; s < ag->size(); ++s)
    for (StepId d : ag->deps(s)) a->has_successor[d] = 1;
  a->starts_call = call_starts(*ag);
  a->g = std::move(ag);
  en.algo = std::move(a);
  return en.algo.get();
}

std::vector<uint8_t> Expander::call_starts(const StepGraph& g) {
  std::vector<uint8_t> starts(g.size(), 1);
  // Only posts pass "before the call's first message" on: a copy, an isend or irecv.
  auto posts = [&](StepId d) {
    StepKind k = g.kind(d);
    return k == StepKind::Copy || ((k == StepKind::Send || k == StepKind::Recv) && g.nonblocking(d));
  };
  // One pass in id order: a step depends on earlier steps only (validate.cpp).
  for (StepId s = 0; s < g.size(); ++s)
    for (StepId d : g.deps(s))
      if (!starts[d] || !posts(d)) {
        starts[s] = 0;
        break;
      }
  return starts;
}

CollKind Expander::find_kind(const std::string& sched) {
  for (size_t i = 0; i < kCollKindCount; ++i)
    if (find_algorithm(static_cast<CollKind>(i), sched)) return static_cast<CollKind>(i);
  return CollKind::Barrier;
}

uint32_t Expander::cost_index(const CallCost& c) {
  auto it = std::find(costs_.begin(), costs_.end(), c);
  if (it != costs_.end()) return static_cast<uint32_t>(it - costs_.begin());
  costs_.push_back(c);
  return static_cast<uint32_t>(costs_.size() - 1);
}

}  // namespace sg::expand_detail
