#include "core/graph/step_graph.hpp"

#include <algorithm>

namespace sg {

const NeverReady* StepGraph::never_ready_entry(StepId s) const {
  auto it = std::lower_bound(never_ready.begin(), never_ready.end(), s, [](const NeverReady& n, StepId x) { return n.step < x; });
  return it != never_ready.end() && it->step == s ? &*it : nullptr;
}

uint32_t StepGraph::peer(StepId s) const {
  if (local(s)) return p2p[ref_[s]].peer;
  if (only_rank >= 0) return ref_[s];
  return rank_[ref_[s]];
}

StepId StepGraph::match(StepId s) const {
  if (local(s)) return p2p[ref_[s]].match;
  if (only_rank >= 0) return kNoStep;
  return ref_[s];
}

void StepGraph::reads(StepId s, std::vector<Range>& out) const {
  switch (kind(s)) {
    case StepKind::Send: out.push_back(range(s)); break;
    case StepKind::Recv:
      if (flags_[s] & kFlagReduce) out.push_back(range(s));
      break;
    case StepKind::Copy: out.push_back(copy_source(s)); break;
    case StepKind::Reduce:
      out.push_back(copy_source(s));
      out.push_back(range(s));
      break;
    case StepKind::Compute: {
      const ComputeInfo& c = compute(s);
      for (uint32_t i = 0; i < c.reads_cnt; ++i) out.push_back(ranges[c.reads_off + i]);
      break;
    }
    case StepKind::Collective: {
      const CollInfo& c = coll(s);
      collective_access(c, groups[c.group], rank_[s], range(s), false, out);
      break;
    }
    case StepKind::Wait: break;
  }
}

bool p2p_compatible(const StepGraph& g, StepId recv, StepId send) {
  const P2PInfo& r = g.p2p_info(recv);
  const P2PInfo& s = g.p2p_info(send);
  return s.peer == g.rank(recv) && r.comm == s.comm && (r.peer == kAnyRank || r.peer == g.rank(send)) &&
         (r.tag == kAnyTag || r.tag == s.tag);
}

void collective_access(const CollInfo& c, const GroupInfo& g, uint32_t rank, const Range& r, bool write, std::vector<Range>& out) {
  int64_t me = g.index_of(rank);
  bool root = rank == c.root;
  uint32_t k = g.count ? r.cnt / g.count : 0;
  Range own{r.buf, r.lo + static_cast<uint32_t>(me < 0 ? 0 : me) * k, k};
  switch (c.kind) {
    case CollKind::Barrier: return;
    case CollKind::Allreduce: out.push_back(r); return;
    case CollKind::Bcast:
      if (root != write) out.push_back(r);
      return;
    case CollKind::Reduce:
      if (!write || root) out.push_back(r);
      return;
    case CollKind::Allgather:
      if (!write) {
        if (own.cnt) out.push_back(own);
      } else {
        if (own.lo > r.lo) out.push_back(Range{r.buf, r.lo, own.lo - r.lo});
        if (own.lo + own.cnt < r.lo + r.cnt) out.push_back(Range{r.buf, own.lo + own.cnt, r.lo + r.cnt - own.lo - own.cnt});
      }
      return;
    case CollKind::ReduceScatter:
      if (!write) out.push_back(r);
      else if (own.cnt) out.push_back(own);
      return;
    case CollKind::Alltoall: out.push_back(write && c.into.cnt ? c.into : r); return;
  }
}

void StepGraph::writes(StepId s, std::vector<Range>& out) const {
  switch (kind(s)) {
    case StepKind::Send: break;
    case StepKind::Recv:
    case StepKind::Copy:
    case StepKind::Reduce: out.push_back(range(s)); break;
    case StepKind::Compute: {
      const ComputeInfo& c = compute(s);
      for (uint32_t i = 0; i < c.writes_cnt; ++i) out.push_back(ranges[c.writes_off + i]);
      break;
    }
    case StepKind::Collective: {
      const CollInfo& c = coll(s);
      collective_access(c, groups[c.group], rank_[s], range(s), true, out);
      break;
    }
    case StepKind::Wait: break;
  }
}

std::string StepGraph::chunk_name(uint32_t buf, uint32_t chunk) const {
  const BufferInfo& b = buffers[buf];
  std::string s = b.name + "[";
  if (b.dims.size() <= 1) return s + std::to_string(chunk) + "]";
  std::vector<uint32_t> idx(b.dims.size());
  uint32_t c = chunk;
  for (size_t d = b.dims.size(); d-- > 0;) {
    idx[d] = c % b.dims[d];
    c /= b.dims[d];
  }
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string StepGraph::range_name(const Range& r) const {
  if (r.cnt == 1) return chunk_name(r.buf, r.lo);
  const BufferInfo& b = buffers[r.buf];
  if (r.lo == 0 && r.cnt == b.chunks) return b.name;
  if (b.dims.size() <= 1) return b.name + "[" + std::to_string(r.lo) + " .. " + std::to_string(r.lo + r.cnt) + "]";
  // Several dimensions: within one row of the last, "m[1, 2 .. 5]" (half-open, as above); else
  // the first and last chunks, "m[0, 3] .. m[1, 1] (4 chunks)".
  const uint32_t last = b.dims.back();
  if (r.lo / last == (r.lo + r.cnt - 1) / last) {
    std::string first = chunk_name(r.buf, r.lo);
    first.pop_back();  // "]"
    return first + " .. " + std::to_string(r.lo % last + r.cnt) + "]";
  }
  return chunk_name(r.buf, r.lo) + " .. " + chunk_name(r.buf, r.lo + r.cnt - 1) + " (" + std::to_string(r.cnt) + " chunks)";
}

const StepGraph::Successors& StepGraph::successor_view() const {
  if (succ_) return *succ_;
  auto v = std::make_unique<Successors>();
  size_t n = size();
  v->off.assign(n + 1, 0);
  for (StepId s = 0; s < n; ++s)
    for (StepId d : deps(s)) ++v->off[d + 1];
  for (size_t i = 0; i < n; ++i) v->off[i + 1] += v->off[i];
  v->succ.resize(v->off[n]);
  std::vector<uint32_t> pos(v->off.begin(), v->off.end() - 1);
  for (StepId s = 0; s < n; ++s)
    for (StepId d : deps(s)) v->succ[pos[d]++] = s;
  succ_ = std::move(v);
  return *succ_;
}

StepGraph::RankIndex StepGraph::rank_index() const {
  RankIndex ix;
  ix.off.assign(nranks + 1, 0);
  for (size_t s = 0; s < size(); ++s) ++ix.off[rank_[s] + 1];
  for (uint32_t r = 0; r < nranks; ++r) ix.off[r + 1] += ix.off[r];
  ix.steps.resize(size());
  std::vector<uint64_t> pos(ix.off.begin(), ix.off.end() - 1);
  for (size_t s = 0; s < size(); ++s) ix.steps[pos[rank_[s]]++] = static_cast<StepId>(s);
  return ix;
}

StepId StepGraph::add_step(StepKind k, uint8_t flags, uint32_t rank, uint32_t stmt, const Range& r, uint32_t ref) {
  StepId id = static_cast<StepId>(kind_.size());
  kind_.push_back(static_cast<uint8_t>(k));
  flags_.push_back(flags);
  rank_.push_back(rank);
  if (!wide_stmts_ && stmt >= 0xffffu) {
    stmt32_.assign(stmt16_.begin(), stmt16_.end());
    std::vector<uint16_t>().swap(stmt16_);
    wide_stmts_ = true;
  }
  if (wide_stmts_) stmt32_.push_back(stmt);
  else stmt16_.push_back(static_cast<uint16_t>(stmt));
  range_.push_back(0);
  ref_.push_back(ref);
  set_range(id, r);
  return id;
}

void StepGraph::set_range(StepId s, const Range& r) {
  if (r.buf < (1u << 4) && r.cnt < (1u << 10) && r.lo < (1u << 18)) {
    flags_[s] &= static_cast<uint8_t>(~kFlagWide);
    range_[s] = (r.buf << 28) | (r.cnt << 18) | r.lo;
  } else {
    flags_[s] |= kFlagWide;
    auto [it, added] = wide_index_.try_emplace(r, static_cast<uint32_t>(wide_ranges.size()));
    if (added) wide_ranges.push_back(r);
    range_[s] = it->second;
  }
}

uint32_t StepGraph::intern_group(const GroupInfo& g) {
  GroupInfo n = g;
  if (n.count <= 1) n.stride = 1;
  if (group_indexed_ > groups.size()) group_index_.clear(), group_indexed_ = 0;  // (set whole, smaller)
  for (; group_indexed_ < groups.size(); ++group_indexed_)                       // the first of equal groups keeps its id
    group_index_.try_emplace(groups[group_indexed_], static_cast<uint32_t>(group_indexed_));
  auto [it, added] = group_index_.try_emplace(n, static_cast<uint32_t>(groups.size()));
  if (!added && (it->second >= groups.size() || !(groups[it->second] == n))) {  // `groups` was set whole since: index it again
    group_index_.clear();
    group_indexed_ = 0;
    return intern_group(g);
  }
  if (added) {
    groups.push_back(n);
    group_indexed_ = groups.size();
  }
  return it->second;
}

uint32_t StepGraph::intern_name(const std::string& n) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == n) return static_cast<uint32_t>(i);
  names.push_back(n);
  return static_cast<uint32_t>(names.size() - 1);
}

void StepGraph::reserve(size_t steps, size_t deps) {
  kind_.reserve(steps);
  flags_.reserve(steps);
  rank_.reserve(steps);
  (wide_stmts_ ? stmt32_.reserve(steps) : stmt16_.reserve(steps));
  range_.reserve(steps);
  ref_.reserve(steps);
  dep_off_.reserve(steps + 1);
  deps_.reserve(deps);
}

uint64_t StepGraph::memory_bytes() const {
  auto cap = [](const auto& v) { return uint64_t{v.capacity()} * sizeof(typename std::decay_t<decltype(v)>::value_type); };
  return cap(kind_) + cap(flags_) + cap(rank_) + cap(stmt16_) + cap(stmt32_) + cap(range_) + cap(ref_) + cap(dep_off_) + cap(deps_) +
         cap(p2p) + cap(colls) + cap(computes) + cap(ranges) + cap(wide_ranges) + cap(wait_handles) + cap(candidates) + cap(instances) +
         cap(instance_steps) + cap(inits) + cap(stmt_locs);
}

}  // namespace sg
