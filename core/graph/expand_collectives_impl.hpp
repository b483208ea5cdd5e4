// The expansion's one class, Expander, with the plans it keeps per instance (internal to
// core/graph/expand_collectives*.cpp, included by nothing else). Its work is split in two, one
// file each, as it runs: first every instance is planned (expand_collectives_choose.cpp: the
// algorithm chosen and elaborated once per shape, its sends' protocol cost), then the new graph
// is built (expand_collectives_build.cpp: the walk over the old graph that emits the expansions).
// expand_collectives.cpp holds the entry point and run(), which does the one and then the other.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/expand_collectives.hpp"

namespace sg::expand_detail {

inline constexpr uint32_t kNone = 0xffffffffu;

// One elaborated library algorithm, shared by every instance with the same schedule, group size
// and parameters.
struct Algo {
  std::string schedule;
  std::unique_ptr<StepGraph> g;
  StepGraph::RankIndex by_rank;
  std::vector<uint8_t> has_successor;  // per step: a later step (of its rank) depends on it
  // Per step: nothing before it on its rank waits for a message (only local copies and the
  // posting of nonblocking sends and receives precede it): a send so is one of its rank's first
  // messages of the call, and pays the call's base latency. A dataflow send with no dependency,
  // and the isends an `on` block posts after its irecvs (linear_alltoall's) both are.
  std::vector<uint8_t> starts_call;
};

// How one instance is expanded.
struct Plan {
  bool expand = false;
  const Algo* algo = nullptr;  // null: a group of one member (a single no-op step)
  GroupInfo group;
  std::vector<StepId> old_steps;  // the members' collective steps, in member order
  bool block = false;             // the old steps are adjacent: emit everything at once
  StepId first_old = kNoStep;
  std::vector<uint32_t> buf_map;                    // algorithm buffer -> new buffer
  std::vector<uint32_t> group_map;                  // algorithm group -> new group (made when first used)
  std::vector<StepId> alg_new;                      // algorithm step -> new step
  std::vector<StepId> entry;                        // per member
  std::vector<std::pair<StepId, StepId>> chor_fix;  // (new step, algorithm step it is matched with)
  uint32_t cost = kNone;                            // its sends' protocol costs: an index into costs_ (NCCL's picks)
};

class Expander {
 public:
  Expander(const StepGraph& g, Session& s, const AlgoChoice& c, const Instantiation& inst, Diagnostics& d, uint64_t max_memory,
           uint64_t consumer_per_step)
      : g_(g), s_(s), choice_(c), inst_(inst), diags_(d), max_memory_(max_memory), consumer_per_step_(consumer_per_step) {}

  std::unique_ptr<StepGraph> run(ExpandReport* report);

 private:
  // ---- choosing and elaborating (expand_collectives_choose.cpp)
  bool plan(uint32_t i, ExpandedInstance& e);
  const Algo* get(const std::string& sched, uint32_t n, uint64_t bytes, bool rooted, uint32_t root,
                  const std::vector<std::pair<std::string, int64_t>>& extra, std::string& refused, Loc at);
  static std::vector<uint8_t> call_starts(const StepGraph& g);
  static CollKind find_kind(const std::string& sched);
  uint32_t cost_index(const CallCost& c);

  // ---- building (expand_collectives_build.cpp)
  void build(uint64_t steps, uint64_t deps);
  void add_data(uint32_t i);
  static Range map(const Plan& p, const Range& r);
  uint32_t group_of(Plan& p, uint32_t ag);
  StepId marker(uint32_t rank, uint32_t stmt, uint8_t flags);
  void add_deps();
  void emit_entry(Plan& p, uint32_t k);
  void emit_exit(Plan& p, uint32_t k);
  void emit_member(Plan& p, uint32_t k);
  void emit_all(Plan& p);
  void emit_alg_step(Plan& p, StepId x);

  template <class Map>
  void copy_compute_ranges(ComputeInfo& ci, const StepGraph& from, Map&& m) {
    StepGraph& o = *out_;
    uint32_t roff = static_cast<uint32_t>(o.ranges.size());
    for (uint32_t i = 0; i < ci.reads_cnt; ++i) o.ranges.push_back(m(from.ranges[ci.reads_off + i]));
    uint32_t woff = static_cast<uint32_t>(o.ranges.size());
    for (uint32_t i = 0; i < ci.writes_cnt; ++i) o.ranges.push_back(m(from.ranges[ci.writes_off + i]));
    ci.reads_off = roff;
    ci.writes_off = woff;
  }
  void copy_step(StepId s);

  struct Entry {
    std::unique_ptr<Algo> algo;
    std::string refused;
  };

  const StepGraph& g_;
  Session& s_;
  const AlgoChoice& choice_;
  const Instantiation& inst_;
  Diagnostics& diags_;
  uint64_t max_memory_;
  uint64_t consumer_per_step_;  // the simulator's state a step, counted against max_memory_
  bool failed_ = false;
  std::map<std::string, Entry> cache_;
  std::set<std::string> noted_;
  std::vector<Plan> plans_;
  std::vector<CallCost> costs_;  // distinct protocol costs of the picks, shared by the instances that pay the same

  std::unique_ptr<StepGraph> out_;
  std::vector<std::pair<std::vector<StepId>, std::vector<StepId>>> ends_;  // per instance: its members' entry and exit steps
  std::vector<StepId> old_new_;                       // old step -> new step (an expanded collective: its member's exit)
  std::vector<std::pair<StepId, StepId>> user_chor_;  // (new step, old step it is matched with)
  std::vector<StepId> deps_;                          // the dependencies of the step being added
};

}  // namespace sg::expand_detail
