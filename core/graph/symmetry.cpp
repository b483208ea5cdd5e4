// Translations of the ranks that map a step graph onto itself, and its quotient (symmetry.hpp).
#include "core/graph/symmetry.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace sg {

RankPositions rank_positions(const StepGraph& g) {
  // Each rank's steps by statement and kind, in program order among those: the k-th send of a
  // statement on one rank stands for the k-th send of that statement on another. (Not program
  // order alone: a choreography emits rank 0's send before its receive and rank 1's receive
  // before its send, where both ranks run the same dataflow.) Two stable counting sorts, by
  // (statement, kind) and then by rank.
  const size_t n = g.size();
  uint32_t keys = 1;
  for (StepId s = 0; s < n; ++s) keys = std::max(keys, g.stmt(s) * 8 + static_cast<uint32_t>(g.kind(s)) + 1);
  auto key = [&](StepId s) { return g.stmt(s) * 8 + static_cast<uint32_t>(g.kind(s)); };
  std::vector<StepId> by_key(n);
  {
    std::vector<uint64_t> at(keys + 1, 0);
    for (StepId s = 0; s < n; ++s) ++at[key(s) + 1];
    for (uint32_t k = 0; k < keys; ++k) at[k + 1] += at[k];
    for (StepId s = 0; s < n; ++s) by_key[at[key(s)]++] = s;
  }
  RankPositions rp;
  rp.index.off.assign(g.nranks + 1, 0);
  for (StepId s = 0; s < n; ++s) ++rp.index.off[g.rank(s) + 1];
  for (uint32_t r = 0; r < g.nranks; ++r) rp.index.off[r + 1] += rp.index.off[r];
  rp.pos.resize(n);
  {
    std::vector<uint32_t> count(g.nranks, 0);
    for (StepId s : by_key) rp.pos[s] = count[g.rank(s)]++;
  }
  std::vector<StepId>().swap(by_key);  // (two step-sized arrays at a time, not three)
  rp.index.steps.resize(n);
  for (StepId s = 0; s < n; ++s) rp.index.steps[rp.index.off[g.rank(s)] + rp.pos[s]] = s;
  return rp;
}

std::string translation_refusal(const StepGraph& g) {
  if (g.only_rank >= 0) return "the graph holds one rank's program";
  if (!g.built_ranks.empty()) return "the graph holds some ranks' programs";
  if (g.nranks < 2) return "one rank";
  if (!g.never_ready.empty()) return "a step never becomes ready";
  for (StepId s = 0; s < g.size(); ++s) {
    StepKind k = g.kind(s);
    if (k == StepKind::Collective) {
      if (g.coll(s).instance >= g.instances.size()) return "the collectives pass has not run";
      const Instance& in = g.instances[g.coll(s).instance];
      if (!in.complete || !in.consistent) return "a collective whose members never all issue it alike (a deadlock)";
    }
    if ((k == StepKind::Send || k == StepKind::Recv) && g.match(s) == kNoStep)
      return "a message is matched at run time (a wildcard receive the match pass could not pin to one send)";
  }
  return "";
}

namespace {

// What timing reads of a step, beyond its links to other steps.
bool same_step(const StepGraph& g, StepId s, StepId t) {
  if (g.kind(s) != g.kind(t) || g.stmt(s) != g.stmt(t)) return false;
  if ((g.flags(s) & ~kFlagWide) != (g.flags(t) & ~kFlagWide)) return false;
  if (g.range_bytes(g.range(s)) != g.range_bytes(g.range(t))) return false;
  bool es = false, et = false;
  const CallCost* cs = g.call_cost(s, es);
  const CallCost* ct = g.call_cost(t, et);
  if ((cs == nullptr) != (ct == nullptr) || (cs && (es != et || !(*cs == *ct)))) return false;
  if (g.kind(s) == StepKind::Compute) {
    const ComputeInfo &a = g.compute(s), &b = g.compute(t);
    if (a.flops != b.flops || a.kind != b.kind || a.name != b.name) return false;
  }
  return true;
}

}  // namespace

std::string RankShift::describe() const {
  std::string by = "a shift by " + std::to_string(inner) + " rank" + (inner == 1 ? "" : "s");
  return inner * count == nranks ? by : by + " inside each " + std::to_string(inner * count);
}

uint32_t RankSymmetry::size() const {
  uint32_t n = 1;
  for (const RankShift& s : shifts) n *= s.count;
  return n;
}

bool RankSymmetry::representative_rank(uint32_t r) const {
  for (const RankShift& s : shifts)
    if (s.digit(r)) return false;
  return true;
}

uint32_t RankSymmetry::moved(uint32_t r, uint32_t e) const {
  for (const RankShift& s : shifts) {
    r = s.moved(r, e % s.count);
    e /= s.count;
  }
  return r;
}

uint32_t RankSymmetry::times(uint32_t from, uint32_t to) const {
  uint32_t e = 0, place = 1;
  for (const RankShift& s : shifts) {
    e += s.times(from, to) * place;
    place *= s.count;
  }
  return e;
}

// The higher digits out first, and in last: a lower digit's place is the same either way.
uint32_t RankSymmetry::class_of(uint32_t r) const {
  for (auto it = shifts.rbegin(); it != shifts.rend(); ++it) r = it->class_of(r);
  return r;
}

uint32_t RankSymmetry::representative(uint32_t c) const {
  for (const RankShift& s : shifts) c = s.representative(c);
  return c;
}

bool RankSymmetry::disjoint(const RankShift& s) const {
  for (const RankShift& t : shifts)
    if (t.inner % (s.inner * s.count) != 0 && s.inner % (t.inner * t.count) != 0) return false;
  return true;
}

RankSymmetry RankSymmetry::with(const RankShift& s) const {
  RankSymmetry out = *this;
  out.shifts.push_back(s);
  std::sort(out.shifts.begin(), out.shifts.end(), [](const RankShift& a, const RankShift& b) { return a.inner < b.inner; });
  return out;
}

std::string RankSymmetry::describe() const {
  std::string out;
  for (size_t k = 0; k < shifts.size(); ++k) out += (k ? " and " : "") + shifts[k].describe();
  return out;
}

std::vector<RankShift> candidate_shifts(uint32_t nranks) {
  std::vector<RankShift> out;
  for (uint32_t inner = 1; inner < nranks; ++inner) {
    if (nranks % inner) continue;
    for (uint32_t count = 2; count <= nranks / inner; ++count)
      if ((nranks / inner) % count == 0) out.push_back({inner, count, nranks});
  }
  // Fewest classes first; of as many, the smaller blocks first.
  std::stable_sort(out.begin(), out.end(), [](const RankShift& a, const RankShift& b) { return a.count > b.count; });
  return out;
}

bool translation_invariant(const StepGraph& g, const RankPositions& rp, const RankShift& shift, std::string& why) {
  const uint32_t n = g.nranks;
  auto image = [&](uint32_t r) { return shift.moved(r); };
  for (uint32_t r = 0; r < n; ++r) {
    if (rp.count(r) == rp.count(image(r))) continue;
    why = "rank " + std::to_string(r) + " has " + std::to_string(rp.count(r)) + " steps, rank " + std::to_string(image(r)) + " " +
          std::to_string(rp.count(image(r)));
    return false;
  }
  // The images of two steps' links: a step of rank r at place p stands for the step of r + k at p.
  auto linked = [&](StepId a, StepId b) { return rp.pos[a] == rp.pos[b] && g.rank(b) == image(g.rank(a)); };
  // Two lists of steps, images of each other as sets (sorted by id, which the shift need not keep).
  std::vector<StepId> mapped, other;
  auto same_set = [&](const StepId* a, const StepId* a_end, const StepId* b, const StepId* b_end) {
    if (a_end - a != b_end - b) return false;
    if (a_end - a == 1) return linked(*a, *b);  // the common case
    mapped.clear();
    for (; a != a_end; ++a) mapped.push_back(rp.at(image(g.rank(*a)), rp.pos[*a]));
    std::sort(mapped.begin(), mapped.end());
    other.assign(b, b_end);
    std::sort(other.begin(), other.end());
    return mapped == other;
  };
  // In step order (a step's image is usually close by: one statement emits both): the memory is
  // read in order, not rank by rank across the whole graph.
  // Where the order of a rank's steps decides when they run, the images keep it: its sends (a
  // call's window passes a pair's messages in the order they were issued) and its local work
  // (one CPU, serving what became ready at one instant in program order). Per rank, the image
  // of its last send and of its last local work seen (steps are visited in program order).
  std::vector<StepId> last_send(n, 0), last_local(n, 0);
  std::vector<uint8_t> seen(n, 0);
  auto ordered = [&](StepId s, StepId t) {
    StepKind kind = g.kind(s);
    int which = kind == StepKind::Send ? 1 : kind == StepKind::Wait ? 0 : 2;  // a receive's processing is local work
    if (!which) return true;
    uint32_t r = g.rank(s);
    StepId& last = which == 1 ? last_send[r] : last_local[r];
    if ((seen[r] & which) && t < last) return false;
    seen[r] |= static_cast<uint8_t>(which);
    last = t;
    return true;
  };
  // A collective step's image is a member of the image instance (its members, moved, as a set),
  // with the same kind, operation and (moved) root. Checked once an instance.
  std::vector<uint32_t> inst_image(g.instances.size(), kNoStep);
  auto same_instance = [&](StepId s, StepId t) {
    const CollInfo &a = g.coll(s), &b = g.coll(t);
    if (a.kind != b.kind || a.op != b.op) return false;
    if ((a.kind == CollKind::Bcast || a.kind == CollKind::Reduce) && image(a.root) != b.root) return false;
    uint32_t& img = inst_image[a.instance];
    if (img != kNoStep) return img == b.instance;
    const Instance &ia = g.instances[a.instance], &ib = g.instances[b.instance];
    const StepId* ma = g.instance_steps.data() + ia.steps_off;
    const StepId* mb = g.instance_steps.data() + ib.steps_off;
    if (!same_set(ma, ma + ia.steps_cnt, mb, mb + ib.steps_cnt)) return false;
    img = b.instance;
    return true;
  };
  StepId delta = 0;  // the last image's distance in steps: the next one's is usually the same
  for (StepId s = 0; s < g.size(); ++s) {
    uint32_t r = g.rank(s), rr = image(r);
    StepId t = s + delta;
    if (t >= g.size() || g.rank(t) != rr || rp.pos[t] != rp.pos[s]) {
      t = rp.at(rr, rp.pos[s]);
      delta = t - s;  // (modulo 2^32)
    }
    bool ok = same_step(g, s, t) && ordered(s, t);
    if (ok) {
      auto ds = g.deps(s), dt = g.deps(t);
      ok = same_set(ds.data(), ds.data() + ds.size(), dt.data(), dt.data() + dt.size());
    }
    StepKind kind = g.kind(s);
    if (ok && (kind == StepKind::Send || kind == StepKind::Recv)) ok = linked(g.match(s), g.match(t));
    if (ok && kind == StepKind::Wait) ok = same_set(g.handles_begin(s), g.handles_end(s), g.handles_begin(t), g.handles_end(t));
    if (ok && kind == StepKind::Collective) ok = same_instance(s, t);
    if (ok) continue;
    Loc at = g.loc(s);
    why = "ranks " + std::to_string(r) + " and " + std::to_string(rr) + " differ at a " + step_kind_name(kind) +
          (at.valid() ? " of line " + std::to_string(at.line) : std::string());
    return false;
  }
  return true;
}

Quotient quotient_graph(const StepGraph& g, const RankPositions& rp, const RankSymmetry& shift) {
  Quotient q;
  q.shift = shift;
  q.full_steps = g.size();
  StepGraph& out = q.graph;
  out.schedule = g.schedule;
  out.file = g.file;
  const uint32_t classes = shift.classes();
  out.nranks = classes;
  out.params = g.params;
  out.p2p_matched = g.p2p_matched;
  out.expansion = g.expansion;
  out.buffers = g.buffers;
  out.groups = g.groups;
  out.names = g.names;
  out.stmt_locs = g.stmt_locs;
  out.stmt_labels = g.stmt_labels;
  out.unordered_hazards = g.unordered_hazards;
  out.connection_slots = g.connection_slots;
  out.wire_factor = g.wire_factor;
  out.wire_why = g.wire_why;
  out.message_latency = g.message_latency;
  out.window_min = g.window_min;
  out.window_max = g.window_max;
  out.call_costs = g.call_costs;
  // The representatives' steps keep the full graph's order; a class's step is found by its class
  // and its place in the representative's steps.
  std::vector<uint64_t> off(classes + 1, 0);
  for (uint32_t c = 0; c < classes; ++c) off[c + 1] = off[c] + rp.count(shift.representative(c));
  const uint64_t reps = off[classes];
  std::vector<StepId> id(reps);
  StepId next = 0;
  for (StepId s = 0; s < g.size(); ++s)
    if (shift.representative_rank(g.rank(s))) id[off[shift.class_of(g.rank(s))] + rp.pos[s]] = next++;
  auto rep = [&](StepId s) { return id[off[shift.class_of(g.rank(s))] + rp.pos[s]]; };
  out.reserve(reps, reps);
  q.dst.reserve(reps);
  std::map<std::vector<StepId>, uint32_t> parts;  // a class's part of an instance -> its instance in `out`
  std::vector<StepId> members, part_steps;
  std::vector<uint32_t> part_of(g.instances.size(), kNoStep);  // a full instance -> its part's instance in `out`
  std::unordered_map<StepId, StepId> full_of;                  // a representative's collective step in `out` -> the full graph's
  for (StepId s = 0; s < g.size(); ++s) {
    uint32_t r = g.rank(s);
    if (!shift.representative_rank(r)) continue;
    StepKind kind = g.kind(s);
    uint32_t ref = g.ref(s);
    if ((kind == StepKind::Send || kind == StepKind::Recv) && !g.local(s)) {
      ref = rep(g.match(s));
    } else if (kind == StepKind::Send || kind == StepKind::Recv) {
      P2PInfo pi = g.p2p_info(s);
      if (pi.peer != kAnyRank) pi.peer = shift.class_of(pi.peer);
      pi.match = rep(pi.match);
      pi.cand_off = pi.cand_cnt = 0;
      ref = static_cast<uint32_t>(out.p2p.size());
      out.p2p.push_back(pi);
    } else if (kind == StepKind::Copy || kind == StepKind::Reduce) {  // (side tables: the representatives' entries only)
      ref = static_cast<uint32_t>(out.ranges.size());
      out.ranges.push_back(g.copy_source(s));
    } else if (kind == StepKind::Compute) {
      ComputeInfo ci = g.compute(s);
      uint32_t reads = static_cast<uint32_t>(out.ranges.size());
      out.ranges.insert(out.ranges.end(), g.ranges.begin() + ci.reads_off, g.ranges.begin() + ci.reads_off + ci.reads_cnt);
      uint32_t writes = static_cast<uint32_t>(out.ranges.size());
      out.ranges.insert(out.ranges.end(), g.ranges.begin() + ci.writes_off, g.ranges.begin() + ci.writes_off + ci.writes_cnt);
      ci.reads_off = reads;
      ci.writes_off = writes;
      ref = static_cast<uint32_t>(out.computes.size());
      out.computes.push_back(ci);
    } else if (kind == StepKind::Wait) {
      ref = static_cast<uint32_t>(out.wait_handles.size());
      out.wait_handles.push_back(static_cast<StepId>(g.handles_end(s) - g.handles_begin(s)));
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) out.wait_handles.push_back(rep(*h));
    }
    if (kind == StepKind::Collective) {
      // The class's part of its instance: its members' representatives' steps, once each; an
      // instance whose part another representative's step already made is that one.
      uint32_t full_instance = g.coll(s).instance;
      uint32_t& part = part_of[full_instance];  // (an instance's part is made once, however many representatives it has)
      if (part == kNoStep) {
        const Instance& in = g.instances[full_instance];
        members.clear();
        for (uint32_t k = 0; k < in.steps_cnt; ++k) members.push_back(rep(g.instance_steps[in.steps_off + k]));
        std::sort(members.begin(), members.end());
        members.erase(std::unique(members.begin(), members.end()), members.end());
        auto [it, added] = parts.try_emplace(members, static_cast<uint32_t>(parts.size()));
        if (added) {
          Instance qi = in;
          qi.steps_off = static_cast<uint32_t>(part_steps.size());
          qi.steps_cnt = static_cast<uint32_t>(members.size());
          part_steps.insert(part_steps.end(), members.begin(), members.end());
          out.instances.push_back(qi);
        }
        part = it->second;
      }
      CollInfo ci = g.coll(s);
      ci.instance = part;
      ref = static_cast<uint32_t>(out.colls.size());
      out.colls.push_back(ci);
      full_of[rep(s)] = s;
    }
    StepId t = out.add_step(kind, static_cast<uint8_t>(g.flags(s) & ~kFlagWide), shift.class_of(r), g.stmt(s), g.range(s), ref);
    for (StepId d : g.deps(s)) out.add_dep(rep(d));
    out.finish_step();
    bool entry = false;
    if (const CallCost* c = g.call_cost(s, entry)) out.set_call_cost(t, static_cast<uint32_t>(c - g.call_costs.data()), entry);
    q.dst.push_back(kind == StepKind::Send ? g.peer(s) : r);
  }
  out.shrink_dep_offsets();
  out.instance_steps = std::move(part_steps);
  q.instance_full.resize(out.instance_steps.size());
  for (size_t i = 0; i < out.instance_steps.size(); ++i) q.instance_full[i] = full_of.at(out.instance_steps[i]);
  q.index.off = std::move(off);
  q.index.steps = std::move(id);
  return q;
}

}  // namespace sg
