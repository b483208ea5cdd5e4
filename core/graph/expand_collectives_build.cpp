// Expansion of collective instances into library algorithms (see expand_collectives.hpp for
// what the result means). The new graph is built in one walk over the old one, in its order: a
// step that is not an expanded collective is copied; an expanded collective step is replaced,
// at its place, by its member's part of the expansion (entry step, the algorithm's steps of
// that rank in their order, exit step). Where an instance's member steps are adjacent (a
// global-view collective), the whole expansion is emitted there at once, in the algorithm's own
// order, so that printed graphs read round by round. Either way every dependency points to an
// earlier step of the same rank, as the graph requires. References between ranks (matched
// choreographic sends and receives) can point forward, so they are patched at the end.
// This file is that walk, the building half of Expander (core/graph/expand_collectives_impl.hpp);
// the plans it follows are made in expand_collectives_choose.cpp.
#include <algorithm>

#include "core/graph/expand_collectives_impl.hpp"

namespace sg::expand_detail {

void Expander::build(uint64_t steps, uint64_t deps) {
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
void Expander::add_data(uint32_t i) {
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

Range Expander::map(const Plan& p, const Range& r) {
  if (!r.cnt) return r;
  return Range{p.buf_map[r.buf], r.lo, r.cnt};
}

// A group of the algorithm (over ranks 0 .. n-1) as a group of real ranks. Each instance gets
// groups of its own, never interned with the program's: as communicators they keep the
// expansion's MPI point-to-point traffic apart from the program's and from other instances'.
uint32_t Expander::group_of(Plan& p, uint32_t ag) {
  if (p.group_map[ag] != kNone) return p.group_map[ag];
  const GroupInfo& x = p.algo->g->groups[ag];
  GroupInfo real{p.group.member(x.start), x.count, x.count <= 1 ? 1 : x.stride * p.group.stride};
  p.group_map[ag] = static_cast<uint32_t>(out_->groups.size());
  out_->groups.push_back(real);
  return p.group_map[ag];
}

// A step that does nothing and costs nothing: a wait on no handles.
// (Its dependencies are in deps_.)
StepId Expander::marker(uint32_t rank, uint32_t stmt, uint8_t flags) {
  StepGraph& o = *out_;
  uint32_t off = static_cast<uint32_t>(o.wait_handles.size());
  o.wait_handles.push_back(0);
  StepId id = o.add_step(StepKind::Wait, flags, rank, stmt, Range{}, off);
  add_deps();
  return id;
}

// Gives the step just added the dependencies collected in deps_, sorted as the graph wants.
void Expander::add_deps() {
  std::sort(deps_.begin(), deps_.end());
  deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
  for (StepId d : deps_) out_->add_dep(d);
  out_->finish_step();
  deps_.clear();
}

// The entry step of member k: it takes over the collective step's dependencies.
void Expander::emit_entry(Plan& p, uint32_t k) {
  StepId old = p.old_steps[k];
  for (StepId d : g_.deps(old)) deps_.push_back(old_new_[d]);
  StepId id = marker(g_.rank(old), g_.stmt(old), g_.flags(old) & kFlagLocal);
  if (p.algo) p.entry[k] = id;
  else old_new_[old] = id;  // one member: the entry is the whole expansion
}

// The exit step of member k: after the algorithm's last steps on it. Whatever depended on the
// collective step depends on this.
void Expander::emit_exit(Plan& p, uint32_t k) {
  StepId old = p.old_steps[k];
  const Algo& a = *p.algo;
  for (uint64_t i = a.by_rank.off[k]; i < a.by_rank.off[k + 1]; ++i) {
    StepId x = a.by_rank.steps[i];
    if (!a.has_successor[x]) deps_.push_back(p.alg_new[x]);
  }
  if (deps_.empty()) deps_.push_back(p.entry[k]);
  old_new_[old] = marker(g_.rank(old), g_.stmt(old), g_.flags(old) & kFlagLocal);
}

void Expander::emit_member(Plan& p, uint32_t k) {
  emit_entry(p, k);
  if (!p.algo) return;
  const Algo& a = *p.algo;
  for (uint64_t i = a.by_rank.off[k]; i < a.by_rank.off[k + 1]; ++i) emit_alg_step(p, a.by_rank.steps[i]);
  emit_exit(p, k);
}

void Expander::emit_all(Plan& p) {
  uint32_t n = p.group.count;
  for (uint32_t k = 0; k < n; ++k) emit_entry(p, k);
  if (!p.algo) return;
  for (StepId x = 0; x < p.algo->g->size(); ++x) emit_alg_step(p, x);
  for (uint32_t k = 0; k < n; ++k) emit_exit(p, k);
}

void Expander::emit_alg_step(Plan& p, StepId x) {
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

// A step of the program itself, with its side-table entries and dependencies renumbered.
void Expander::copy_step(StepId s) {
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

}  // namespace sg::expand_detail
