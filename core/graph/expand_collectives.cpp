// Expansion of collective instances into library algorithms (see expand_collectives.hpp for
// what the result means). The new graph is built in one walk over the old one, in its order: a
// step that is not an expanded collective is copied; an expanded collective step is replaced,
// at its place, by its member's part of the expansion (entry step, the algorithm's steps of
// that rank in their order, exit step). Where an instance's member steps are adjacent (a
// global-view collective), the whole expansion is emitted there at once, in the algorithm's own
// order, so that printed graphs read round by round. Either way every dependency points to an
// earlier step of the same rank, as the graph requires. References between ranks (matched
// choreographic sends and receives) can point forward, so they are patched at the end.
#include "core/graph/expand_collectives.hpp"
#include "core/base/sizes.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/base/errors.hpp"

namespace sg {

namespace {

constexpr uint32_t kNone = 0xffffffffu;

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

}  // namespace

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

namespace {

class Expander {
 public:
  Expander(const StepGraph& g, Session& s, const AlgoChoice& c, const Instantiation& inst, Diagnostics& d, uint64_t max_memory,
           uint64_t consumer_per_step)
      : g_(g), s_(s), choice_(c), inst_(inst), diags_(d), max_memory_(max_memory), consumer_per_step_(consumer_per_step) {}

  std::unique_ptr<StepGraph> run(ExpandReport* report) {
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

 private:
  // ------------------------------------------------------------------ choosing and elaborating
  bool plan(uint32_t i, ExpandedInstance& e) {
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
  const Algo* get(const std::string& sched, uint32_t n, uint64_t bytes, bool rooted, uint32_t root,
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

  static std::vector<uint8_t> call_starts(const StepGraph& g) {
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

  static CollKind find_kind(const std::string& sched) {
    for (size_t i = 0; i < kCollKindCount; ++i)
      if (find_algorithm(static_cast<CollKind>(i), sched)) return static_cast<CollKind>(i);
    return CollKind::Barrier;
  }

  // ------------------------------------------------------------------ building
  void build(uint64_t steps, uint64_t deps) {
    out_ = std::make_unique<StepGraph>();
    StepGraph& o = *out_;
    o.schedule = g_.schedule;
    o.file = g_.file;
    o.nranks = g_.nranks;
    o.only_rank = -1;
    o.params = g_.params;
    o.buffers = g_.buffers;
    o.groups = g_.groups;
    o.names = g_.names;
    o.inits = g_.inits;
    o.expects = g_.expects;
    o.stmt_locs = g_.stmt_locs;
    o.call_costs = costs_;
    o.reserve(steps, deps);
    for (uint32_t i = 0; i < plans_.size(); ++i)
      if (plans_[i].expand && plans_[i].algo) add_data(i);

    old_new_.assign(g_.size(), kNoStep);
    for (StepId s = 0; s < g_.size(); ++s) {
      if (g_.kind(s) == StepKind::Collective) {
        Plan& p = plans_[g_.coll(s).instance];
        if (p.expand) {
          if (!p.block) emit_member(p, static_cast<uint32_t>(p.group.index_of(g_.rank(s))));
          else if (s == p.first_old) emit_all(p);
          continue;
        }
      }
      copy_step(s);
    }
    // Matched pairs, now that both ends have their new ids.
    for (auto [id, old_ref] : user_chor_) o.set_ref(id, old_new_[old_ref]);
    ends_.resize(plans_.size());
    for (uint32_t i = 0; i < plans_.size(); ++i) {
      Plan& p = plans_[i];
      for (auto [id, alg_ref] : p.chor_fix) o.set_ref(id, p.alg_new[alg_ref]);
      // Where each member's part begins and ends (the report's; a simulator times the instance).
      if (p.expand)
        for (uint32_t k = 0; k < p.old_steps.size(); ++k) {
          StepId exit = old_new_[p.old_steps[k]];
          ends_[i].first.push_back(p.algo ? p.entry[k] : exit);
          ends_[i].second.push_back(exit);
        }
      p = Plan{};  // free the maps
    }
    for (const BadWait& b : g_.bad_waits) {
      BadWait nb = b;
      nb.wait = old_new_[b.wait];
      o.bad_waits.push_back(std::move(nb));
    }
    for (const NeverReady& n : g_.never_ready) {
      NeverReady nn = n;
      nn.step = old_new_[n.step];
      o.never_ready.push_back(std::move(nn));
    }
    std::sort(o.never_ready.begin(), o.never_ready.end(), [](const NeverReady& a, const NeverReady& b) { return a.step < b.step; });
  }

  // The algorithm's buffers, communicators, initial values and postconditions for instance i.
  void add_data(uint32_t i) {
    Plan& p = plans_[i];
    StepGraph& o = *out_;
    const StepGraph& a = *p.algo->g;
    StepId s0 = p.old_steps[0];
    Range user = g_.range(s0);
    std::string prefix = std::string(coll_name(g_.coll(s0).kind)) + "#" + std::to_string(i) + ".";
    p.group_map.assign(a.groups.size(), kNone);
    for (const BufferInfo& b : a.buffers) {
      BufferInfo nb = b;
      nb.name = prefix + b.name;
      // The element type of the data the collective moves (the barrier's tokens keep theirs).
      if (user.cnt) {
        nb.dtype = g_.buffers[user.buf].dtype;
        nb.chunk_elems = nb.chunk_bytes / dtype_size(nb.dtype);
      }
      p.buf_map.push_back(static_cast<uint32_t>(o.buffers.size()));
      o.buffers.push_back(std::move(nb));
    }
    uint32_t stmt = g_.stmt(s0);
    for (const InitRule& r : a.inits) {
      InitRule nr = r;
      nr.range = map(p, r.range);
      if (r.kind == InitKind::OnRank) nr.rank = p.group.member(r.rank);
      else nr.group = group_of(p, r.group);
      nr.stmt = stmt;
      o.inits.push_back(nr);
    }
    for (const Expectation& x : a.expects) {
      if (x.kind == ExpectKind::Nothing) continue;
      Expectation nx = x;
      for (Range& r : nx.bufs) r = map(p, r);
      nx.root = p.group.member(x.root);
      nx.group = group_of(p, x.group);
      nx.stmt = stmt;
      o.expects.push_back(std::move(nx));
    }
    p.alg_new.assign(a.size(), kNoStep);
    p.entry.assign(p.group.count, kNoStep);
  }

  static Range map(const Plan& p, const Range& r) {
    if (!r.cnt) return r;
    return Range{p.buf_map[r.buf], r.lo, r.cnt};
  }

  // A group of the algorithm (over ranks 0 .. n-1) as a group of real ranks. Each instance gets
  // groups of its own, never interned with the program's: as communicators they keep the
  // expansion's MPI point-to-point traffic apart from the program's and from other instances'.
  uint32_t group_of(Plan& p, uint32_t ag) {
    if (p.group_map[ag] != kNone) return p.group_map[ag];
    const GroupInfo& x = p.algo->g->groups[ag];
    GroupInfo real{p.group.member(x.start), x.count, x.count <= 1 ? 1 : x.stride * p.group.stride};
    p.group_map[ag] = static_cast<uint32_t>(out_->groups.size());
    out_->groups.push_back(real);
    return p.group_map[ag];
  }

  // A step that does nothing and costs nothing: a wait on no handles.
  // (Its dependencies are in deps_.)
  StepId marker(uint32_t rank, uint32_t stmt, uint8_t flags) {
    StepGraph& o = *out_;
    uint32_t off = static_cast<uint32_t>(o.wait_handles.size());
    o.wait_handles.push_back(0);
    StepId id = o.add_step(StepKind::Wait, flags, rank, stmt, Range{}, off);
    add_deps();
    return id;
  }

  // Gives the step just added the dependencies collected in deps_, sorted as the graph wants.
  void add_deps() {
    std::sort(deps_.begin(), deps_.end());
    deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
    for (StepId d : deps_) out_->add_dep(d);
    out_->finish_step();
    deps_.clear();
  }

  // The entry step of member k: it takes over the collective step's dependencies.
  void emit_entry(Plan& p, uint32_t k) {
    StepId old = p.old_steps[k];
    for (StepId d : g_.deps(old)) deps_.push_back(old_new_[d]);
    StepId id = marker(g_.rank(old), g_.stmt(old), g_.flags(old) & kFlagLocal);
    if (p.algo) p.entry[k] = id;
    else old_new_[old] = id;  // one member: the entry is the whole expansion
  }

  // The exit step of member k: after the algorithm's last steps on it. Whatever depended on the
  // collective step depends on this.
  void emit_exit(Plan& p, uint32_t k) {
    StepId old = p.old_steps[k];
    const Algo& a = *p.algo;
    for (uint64_t i = a.by_rank.off[k]; i < a.by_rank.off[k + 1]; ++i) {
      StepId x = a.by_rank.steps[i];
      if (!a.has_successor[x]) deps_.push_back(p.alg_new[x]);
    }
    if (deps_.empty()) deps_.push_back(p.entry[k]);
    old_new_[old] = marker(g_.rank(old), g_.stmt(old), g_.flags(old) & kFlagLocal);
  }

  void emit_member(Plan& p, uint32_t k) {
    emit_entry(p, k);
    if (!p.algo) return;
    const Algo& a = *p.algo;
    for (uint64_t i = a.by_rank.off[k]; i < a.by_rank.off[k + 1]; ++i) emit_alg_step(p, a.by_rank.steps[i]);
    emit_exit(p, k);
  }

  void emit_all(Plan& p) {
    uint32_t n = p.group.count;
    for (uint32_t k = 0; k < n; ++k) emit_entry(p, k);
    if (!p.algo) return;
    for (StepId x = 0; x < p.algo->g->size(); ++x) emit_alg_step(p, x);
    for (uint32_t k = 0; k < n; ++k) emit_exit(p, k);
  }

  void emit_alg_step(Plan& p, StepId x) {
    const StepGraph& a = *p.algo->g;
    StepGraph& o = *out_;
    uint32_t ar = a.rank(x);
    StepKind k = a.kind(x);
    uint32_t ref = 0;
    switch (k) {
      case StepKind::Send:
      case StepKind::Recv:
        if (!a.local(x)) break;  // patched when its partner has its new id
        {
          P2PInfo pi = a.p2p_info(x);
          if (pi.peer != kAnyRank) pi.peer = p.group.member(pi.peer);
          pi.comm = group_of(p, pi.comm);
          pi.match = kNoStep;
          pi.cand_off = pi.cand_cnt = 0;
          ref = static_cast<uint32_t>(o.p2p.size());
          o.p2p.push_back(pi);
        }
        break;
      case StepKind::Copy:
      case StepKind::Reduce:
        ref = static_cast<uint32_t>(o.ranges.size());
        o.ranges.push_back(map(p, a.copy_source(x)));
        break;
      case StepKind::Compute: {
        ComputeInfo ci = a.compute(x);
        ci.name = o.intern_name(a.names[ci.name]);
        copy_compute_ranges(ci, a, [&](const Range& r) { return map(p, r); });
        ref = static_cast<uint32_t>(o.computes.size());
        o.computes.push_back(ci);
        break;
      }
      case StepKind::Wait:
        ref = static_cast<uint32_t>(o.wait_handles.size());
        o.wait_handles.push_back(static_cast<StepId>(a.handles_end(x) - a.handles_begin(x)));
        for (const StepId* h = a.handles_begin(x); h != a.handles_end(x); ++h) o.wait_handles.push_back(p.alg_new[*h]);
        break;
      case StepKind::Collective: break;  // refused in get()
    }
    StepId id = o.add_step(k, a.flags(x), p.group.member(ar), g_.stmt(p.old_steps[ar]), map(p, a.range(x)), ref);
    if ((k == StepKind::Send || k == StepKind::Recv) && !a.local(x)) p.chor_fix.emplace_back(id, a.ref(x));
    // A send the algorithm starts with (no message of the call awaited before it on its rank) pays the call's base latency.
    if (k == StepKind::Send && p.cost != kNone) o.set_call_cost(id, p.cost, p.algo->starts_call[x] != 0);
    if (a.dep_count(x) == 0) deps_.push_back(p.entry[ar]);  // the algorithm starts where the collective did
    for (StepId d : a.deps(x)) deps_.push_back(p.alg_new[d]);
    add_deps();
    p.alg_new[x] = id;
  }

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

  // A step of the program itself, with its side-table entries and dependencies renumbered.
  void copy_step(StepId s) {
    StepGraph& o = *out_;
    StepKind k = g_.kind(s);
    uint32_t ref = g_.ref(s);
    switch (k) {
      case StepKind::Send:
      case StepKind::Recv:
        if (g_.local(s)) {
          P2PInfo pi = g_.p2p_info(s);
          pi.match = kNoStep;  // the match pass runs again on the new graph
          pi.cand_off = pi.cand_cnt = 0;
          ref = static_cast<uint32_t>(o.p2p.size());
          o.p2p.push_back(pi);
        }
        break;
      case StepKind::Copy:
      case StepKind::Reduce:
        ref = static_cast<uint32_t>(o.ranges.size());
        o.ranges.push_back(g_.copy_source(s));
        break;
      case StepKind::Compute: {
        ComputeInfo ci = g_.compute(s);
        copy_compute_ranges(ci, g_, [](const Range& r) { return r; });
        ref = static_cast<uint32_t>(o.computes.size());
        o.computes.push_back(ci);
        break;
      }
      case StepKind::Collective: {
        CollInfo ci = g_.coll(s);
        ci.instance = 0;  // the collectives pass forms the instances again
        ref = static_cast<uint32_t>(o.colls.size());
        o.colls.push_back(ci);
        break;
      }
      case StepKind::Wait:
        ref = static_cast<uint32_t>(o.wait_handles.size());
        o.wait_handles.push_back(static_cast<StepId>(g_.handles_end(s) - g_.handles_begin(s)));
        for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) o.wait_handles.push_back(old_new_[*h]);
        break;
    }
    StepId id = o.add_step(k, g_.flags(s), g_.rank(s), g_.stmt(s), g_.range(s), ref);
    if ((k == StepKind::Send || k == StepKind::Recv) && !g_.local(s)) user_chor_.emplace_back(id, g_.ref(s));
    for (StepId d : g_.deps(s)) deps_.push_back(old_new_[d]);
    add_deps();
    old_new_[s] = id;
  }

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

  uint32_t cost_index(const CallCost& c) {
    auto it = std::find(costs_.begin(), costs_.end(), c);
    if (it != costs_.end()) return static_cast<uint32_t>(it - costs_.begin());
    costs_.push_back(c);
    return static_cast<uint32_t>(costs_.size() - 1);
  }
  std::unique_ptr<StepGraph> out_;
  std::vector<std::pair<std::vector<StepId>, std::vector<StepId>>> ends_;  // per instance: its members' entry and exit steps
  std::vector<StepId> old_new_;                       // old step -> new step (an expanded collective: its member's exit)
  std::vector<std::pair<StepId, StepId>> user_chor_;  // (new step, old step it is matched with)
  std::vector<StepId> deps_;                          // the dependencies of the step being added
};

}  // namespace

std::unique_ptr<StepGraph> expand_collectives(const StepGraph& g, Session& s, const AlgoChoice& choice, const Instantiation& inst,
                                              Diagnostics& diags, ExpandReport* report, uint64_t max_memory, uint64_t consumer_per_step) {
  return Expander(g, s, choice, inst, diags, max_memory, consumer_per_step).run(report);
}

}  // namespace sg
