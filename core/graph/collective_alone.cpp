#include "core/graph/collective_alone.hpp"

#include "core/base/errors.hpp"
#include "core/graph/passes.hpp"

namespace sg {

std::unique_ptr<StepGraph> collective_alone(const StepGraph& g, uint32_t instance, Diagnostics& diags) {
  if (instance >= g.instances.size()) internal_error("collective_alone: no instance " + std::to_string(instance), Loc{});
  const Instance& in = g.instances[instance];
  const GroupInfo& group = g.groups[in.group];
  // (A representatives' build holds the members built; the others issue the same call: each
  // member below is the first one's, on its own rank.)
  const bool partial = g.partial() && in.steps_cnt < group.count;
  if (!in.complete || !in.consistent || (in.steps_cnt != group.count && !partial) || !in.steps_cnt)
    internal_error("collective_alone: instance " + std::to_string(instance) + " is incomplete or inconsistent", Loc{});
  auto o = std::make_unique<StepGraph>();
  o->schedule = g.schedule;
  o->file = g.file;
  o->nranks = group.count;
  o->params = g.params;
  o->buffers = g.buffers;  // (the ranges keep their buffer ids; buffers no step touches cost nothing)
  o->names = g.names;
  o->stmt_locs = g.stmt_locs;
  o->stmt_labels = g.stmt_labels;
  o->expansion = true;  // its declarations were checked in g: the `unused` pass stays quiet
  o->groups.push_back(GroupInfo{0, group.count, 1});
  o->reserve(group.count, 0);
  for (uint32_t k = 0; k < (partial ? group.count : in.steps_cnt); ++k) {
    StepId s = g.instance_steps[in.steps_off + (partial ? 0 : k)];
    CollInfo c = g.coll(s);
    c.group = 0;
    c.root = static_cast<uint32_t>(std::max<int64_t>(0, group.index_of(c.root)));  // (0 where the kind has none)
    c.seq = 0;
    c.instance = 0;
    o->colls.push_back(c);
    uint32_t rank = partial ? k : static_cast<uint32_t>(group.index_of(g.rank(s)));
    o->add_step(StepKind::Collective, g.flags(s), rank, g.stmt(s), g.range(s), static_cast<uint32_t>(o->colls.size() - 1));
    o->finish_step();
  }
  if (!run_passes(*o, diags, {}, nullptr)) return nullptr;
  return o;
}

}  // namespace sg
