// One rank per class of ranks alike: the platform's half of the proof and the quotient's run
// (symmetry.hpp).
#include "sim/symmetry.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/base/sizes.hpp"
#include "core/graph/symmetry.hpp"
#include "sim/call_cost.hpp"

namespace sg::sim {

std::string SymmetryUse::line() const {
  std::string all = with_commas(nranks) + " rank" + (nranks == 1 ? "" : "s");
  if (!used) return "none: " + why_not + "; simulated all " + all;
  uint32_t classes = shift.classes();
  std::string c = with_commas(classes);
  return all + " in " + c + " class" + (classes == 1 ? "" : "es") + " of " + with_commas(shift.size()) + " (alike under " +
         shift.describe() + (by_text ? ", proved from the schedule's text" : "") + (one_program ? "; rank 0's program built alone" : "") +
         (representatives_only ? "; the representatives' programs built alone" : "") + "): simulated " + c + " rank" +
         (classes == 1 ? "" : "s") + ", " + with_commas(quotient_steps) + " steps";
}

std::string engine_refusal(const SimOptions& o) {
  if (!o.symmetry) return "--no-symmetry";
  if (o.model != Model::Analytic) return "the SimGrid engine simulates every rank";
  if (o.loggp.enabled) return "the LogGP engine simulates every rank";
  if (o.trace) return "a trace shows every rank";
  return "";
}

namespace {

// The part of a route the analytic engine reads (as sim/analytic.cpp's Path computes it).
struct Route {
  double lat = 0, bw = 0;
  bool inside = false;  // both ends on one node
  uint32_t port[2] = {0, 0};
  bool operator==(const Route& o) const { return lat == o.lat && bw == o.bw && inside == o.inside; }
};

class PlatformCheck {
 public:
  PlatformCheck(const Platform& p, const SimOptions& o) : p_(p), o_(o), none_(static_cast<uint32_t>(p.links.size())) {}

  // Whether the shift keeps the costs of the routes of every (source, destination) pair in
  // `pairs` (their sources representatives) and of their images, and maps their ports by one
  // permutation of the links that fixes no port; `port` then holds each link's class representative.
  bool invariant(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const RankSymmetry& group, std::vector<uint32_t>& port,
                 std::string& why) {
    const uint32_t m = group.size();
    const size_t gens = group.shifts.size();
    std::vector<std::unordered_map<uint32_t, uint32_t>> perm(gens);  // per shift: port link -> its image
    std::unordered_set<uint32_t> roles[2];                           // links used as sending ports, as receiving ports
    for (const auto& [a, d] : pairs) {
      Route first = route(a, d);
      for (uint32_t e = 0; e < m; ++e) {
        uint32_t a0 = group.moved(a, e), d0 = group.moved(d, e);
        Route cur = e ? route(a0, d0) : first;
        if (!(cur == first)) {
          why = "the route from rank " + std::to_string(a0) + " to " + std::to_string(d0) + " is not the one from " + std::to_string(a) +
                " to " + std::to_string(d) + ", shifted";
          return false;
        }
        for (size_t k = 0; k < gens; ++k) {
          const RankShift& sh = group.shifts[k];
          Route next = route(sh.moved(a0), sh.moved(d0));
          for (int r = 0; r < 2; ++r) {
            if ((cur.port[r] == none_) != (next.port[r] == none_)) {
              why = "a route's port is a loopback where its shifted route's is not";
              return false;
            }
            if (cur.port[r] == none_) continue;
            roles[r].insert(cur.port[r]);
            auto [it, fresh] = perm[k].emplace(cur.port[r], next.port[r]);
            const LinkInfo &l = p_.links[cur.port[r]], &n = p_.links[next.port[r]];
            if (!fresh && it->second != next.port[r]) {
              why = "link " + l.name + " has two images under the shift";
              return false;
            }
            if (l.bw != n.bw) {
              why = "links " + l.name + " and " + n.name + " differ";
              return false;
            }
          }
        }
      }
    }
    // Every port's class: its orbit under the shifts' permutations, of m distinct links (a port
    // the group fixes would carry the flows of several ranks of one class, where the quotient has
    // one).
    port.assign(p_.links.size(), none_);
    std::vector<uint32_t> orbit;
    for (const auto& [l0, img] : perm.empty() ? std::unordered_map<uint32_t, uint32_t>{} : perm[0]) {
      if (port[l0] != none_) continue;
      orbit.assign(1, l0);
      port[l0] = l0;
      for (size_t i = 0; i < orbit.size() && orbit.size() <= m; ++i) {
        for (size_t k = 0; k < gens; ++k) {
          auto it = perm[k].find(orbit[i]);
          if (it == perm[k].end()) {
            why = "link " + p_.links[orbit[i]].name + " has no image under a shift";
            return false;
          }
          if (port[it->second] == none_) {
            port[it->second] = l0;
            orbit.push_back(it->second);
          }
        }
      }
      if (orbit.size() != m) {
        why = "the shifts map link " + p_.links[l0].name + " onto " + std::to_string(orbit.size()) + " links, not " + std::to_string(m) +
              " (ranks of one class share it)";
        return false;
      }
    }
    std::unordered_set<uint32_t> entering;  // the classes of the receiving ports
    for (uint32_t l : roles[1]) entering.insert(port[l]);
    for (uint32_t l : roles[0])
      if (entering.count(port[l])) {
        why = "links like " + p_.links[l].name + " are where some messages leave and others enter";
        return false;
      }
    return true;
  }

 private:
  uint32_t host(uint32_t r) const { return o_.map.empty() ? r : o_.map[r]; }
  Route route(uint32_t a, uint32_t b) {
    uint32_t ha = host(a), hb = host(b);
    Route r;
    double lat = 0;
    p_.route(ha, hb, ids_, lat);
    r.lat = lat;
    r.bw = p_.route_bw(ha, hb);
    r.inside = same_node(p_, ha, hb);
    auto port = [&](uint32_t link) { return p_.links[link].shared ? link : none_; };
    r.port[0] = ids_.empty() ? none_ : port(ids_.front());
    r.port[1] = ids_.empty() ? none_ : port(ids_.back());
    return r;
  }

  const Platform& p_;
  const SimOptions& o_;
  const uint32_t none_;
  std::vector<uint32_t> ids_;
};

// The distinct (source, destination) pairs of the graph's messages.
std::vector<std::pair<uint32_t, uint32_t>> message_pairs(const StepGraph& g) {
  std::unordered_set<uint64_t> seen;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Send && seen.insert((uint64_t{g.rank(s)} << 32) | g.peer(s)).second) out.emplace_back(g.rank(s), g.peer(s));
  return out;
}

// The above, and the pairs a collective costed alone sent on (CollectiveTimes::uses: the analytic
// engine puts its load on their ports, which the shift must map as it maps the messages').
// With `reps`, only the pairs of the members that are its representatives (from and to them: the
// quotient runs their parts alone, on their ports).
std::vector<std::pair<uint32_t, uint32_t>> message_pairs(const StepGraph& g, const CollectiveTimes* ct,
                                                         const RankSymmetry* reps = nullptr) {
  std::vector<std::pair<uint32_t, uint32_t>> out = message_pairs(g);
  if (!ct || ct->uses_off.empty()) return out;
  std::unordered_set<uint64_t> seen;
  for (const auto& [a, b] : out) seen.insert((uint64_t{a} << 32) | b);
  std::set<std::pair<uint32_t, uint32_t>> done;  // (table, group): the same pairs
  for (uint32_t i = 0; i < g.instances.size(); ++i) {
    const Instance& in = g.instances[i];
    if (!ct->has_uses(i) || !done.insert({ct->table[i], in.group}).second) continue;
    const GroupInfo& group = g.groups[in.group];
    const uint32_t base = ct->uses_off[ct->table[i]];
    for (uint32_t k = 0; k < group.count; ++k) {
      if (reps && !reps->representative_rank(group.member(k))) continue;
      for (uint32_t u = ct->member_uses[base + k]; u < ct->member_uses[base + k + 1]; ++u) {
        const CollectiveTimes::Use& x = ct->uses[u];
        uint32_t a = group.member(k), b = group.member(x.peer);
        if (!x.out) std::swap(a, b);
        if (seen.insert((uint64_t{a} << 32) | b).second) out.emplace_back(a, b);
      }
    }
  }
  return out;
}

// Collectives costed alone (RuntimeOptions::collective_times): each member's time is its
// image's, in the image instance, so the shift keeps the collectives' times too.
bool times_invariant(const StepGraph& g, const RankPositions& rp, const RankShift& shift, const CollectiveTimes* ct, std::string& why) {
  if (!ct) return true;
  auto time_of = [&](StepId m) {
    uint32_t i = g.coll(m).instance;
    if (!ct->has(i)) return 0.0;
    int64_t k = g.groups[g.instances[i].group].index_of(g.rank(m));
    return ct->at(i, static_cast<uint32_t>(k));
  };
  // A member's time is its table's entry at its place in its group, and (the graph being
  // invariant) every member's image is a member of one image instance: instances whose tables
  // and groups are those of one already compared, and whose image's are too, compare alike.
  // (A training step at N = 131,072 has 17 M instances of 3 shapes: 134 M member lookups each
  // shift, most of this check, became 17 M.)
  std::set<std::array<uint32_t, 4>> alike;
  for (uint32_t i = 0; i < g.instances.size(); ++i) {
    const Instance& in = g.instances[i];
    if (!in.steps_cnt) continue;
    StepId first = g.instance_steps[in.steps_off];
    uint32_t image = g.coll(rp.at(shift.moved(g.rank(first)), rp.pos[first])).instance;
    auto table = [&](uint32_t x) { return ct->has(x) ? ct->table[x] : CollectiveTimes::kNone; };
    std::array<uint32_t, 4> key{table(i), table(image), in.group, g.instances[image].group};
    if (alike.count(key)) continue;
    bool one_image = true;
    for (uint32_t k = 0; k < in.steps_cnt; ++k) {
      StepId m = g.instance_steps[in.steps_off + k];
      StepId t = rp.at(shift.moved(g.rank(m)), rp.pos[m]);
      one_image = one_image && g.coll(t).instance == image;
      // And the ports its messages alone loaded (the analytic engine's collectives on shared
      // ports) are its image's, their peers moved.
      bool uses = true;
      uint32_t ti = g.coll(t).instance;
      if (ct->has_uses(i) || ct->has_uses(ti)) {
        const GroupInfo &gi = g.groups[in.group], &gt = g.groups[g.instances[ti].group];
        auto place = [](const GroupInfo& gr, uint32_t r) { return static_cast<uint32_t>(gr.index_of(r)); };
        uses =
            ct->has_uses(i) && ct->has_uses(ti) && ct->uses_alike(ct->table[i], place(gi, g.rank(m)), ct->table[ti], place(gt, g.rank(t)));
      }
      if (time_of(m) == time_of(t) && uses) continue;
      Loc at = g.loc(m);
      why = "ranks " + std::to_string(g.rank(m)) + " and " + std::to_string(g.rank(t)) + " take different " +
            (time_of(m) != time_of(t) ? "times" : "links") + " in the collective" +
            (at.valid() ? " of line " + std::to_string(at.line) : std::string()) + ", costed alone";
      return false;
    }
    if (one_image) alike.insert(key);
  }
  return true;
}

// The shifts both the graph and the platform allow, fewest classes first: the best one, then the
// best on digits of their own with it, and so on (none: why_not says why). The graph's answer for
// a shift is remembered; moving a shift's blocks j at a time is a shift the graph allows too.
RankSymmetry find_shift(const StepGraph& g, const Platform& p, const SimOptions& o, const RankPositions& rp, std::vector<uint32_t>& port,
                        std::string& why_not, bool& by_text) {
  const std::vector<std::pair<uint32_t, uint32_t>> all = message_pairs(g, o.runtime.collective_times);
  const std::vector<RankShift> candidates = candidate_shifts(g.nranks);
  PlatformCheck check(p, o);
  std::vector<RankShift> allowed;  // by the graph
  std::vector<char> refused(candidates.size(), 0);
  std::string graph_why, platform_why;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<uint32_t> ports;
  std::vector<char> allowed_by_text;  // per allowed shift: proved from the schedule's text
  RankSymmetry group{{}, g.nranks};
  bool group_by_text = true;  // every shift of `group` proved from the text
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t c = 0; c < candidates.size() && !grew; ++c) {
      const RankShift& shift = candidates[c];
      if (refused[c] || !group.disjoint(shift) || uint64_t{group.size()} * shift.count > g.nranks) continue;
      // A power of an allowed shift (its inner a multiple, moving inside the same blocks) is too.
      auto power_of = std::find_if(allowed.begin(), allowed.end(), [&](const RankShift& a) {
        return a.inner * a.count == shift.inner * shift.count && shift.inner % a.inner == 0;
      });
      bool known = power_of != allowed.end();
      bool text = known && allowed_by_text[static_cast<size_t>(power_of - allowed.begin())];
      std::string why;
      if (!known) {
        // The proof from the text where it holds (one representative a class of the group so far,
        // when the group was proved so too), else the graph step by step.
        const RankSymmetry none{{}, g.nranks};
        text = g.prove_shift && g.prove_shift(group_by_text ? group : none, shift).empty();
        if ((!text && !translation_invariant(g, rp, shift, why)) || !times_invariant(g, rp, shift, o.runtime.collective_times, why)) {
          refused[c] = 1;
          if (graph_why.empty()) graph_why = why;
          continue;
        }
        allowed.push_back(shift);
        allowed_by_text.push_back(text);
      }
      RankSymmetry bigger = group.with(shift);
      pairs.clear();
      for (const auto& pr : all)  // (to a representative too: a collective's part loads its receiving ports)
        if (bigger.representative_rank(pr.first) || bigger.representative_rank(pr.second)) pairs.push_back(pr);
      if (check.invariant(pairs, bigger, ports, why)) {
        group = bigger;
        group_by_text = group_by_text && text;
        port = ports;
        grew = true;
      } else if (platform_why.empty()) {
        platform_why = why;
      }
    }
  }
  by_text = !group.none() && group_by_text;
  if (group.none())
    why_not = allowed.empty() ? "no shift of the ranks maps the schedule onto itself (" + graph_why + ")"
                              : "the platform tells the ranks apart (" + platform_why + ")";
  return group;
}

// Collectives costed alone (RuntimeOptions::collective_times, for g's instances): each of the
// quotient's instance members takes the time of the representative's step it is, in its own
// instance.
CollectiveTimes quotient_times(const StepGraph& g, const Quotient& q, const CollectiveTimes& ct) {
  CollectiveTimes out;
  out.peers_are_ranks = true;
  std::vector<double> t;
  std::vector<std::vector<CollectiveTimes::Use>> uses;
  // With what each member moved alone (the analytic engine's shared ports): every table has its
  // members' uses, their peers as the full graph's ranks (a quotient's table is one instance's).
  const bool with_uses = !ct.uses_off.empty();
  for (const Instance& in : q.graph.instances) {
    t.clear();
    uses.assign(in.steps_cnt, {});
    double span = 0;
    for (uint32_t k = 0; k < in.steps_cnt; ++k) {
      StepId fs = q.instance_full[in.steps_off + k];
      uint32_t i = g.coll(fs).instance;
      const GroupInfo& group = g.groups[g.instances[i].group];
      auto at = static_cast<uint32_t>(group.index_of(g.rank(fs)));
      t.push_back(ct.has(i) ? ct.at(i, at) : 0.0);
      if (!with_uses || !ct.has_uses(i)) continue;
      uint32_t tab = ct.table[i], base = ct.uses_off[tab];
      span = std::max(span, ct.span[tab]);
      for (uint32_t u = ct.member_uses[base + at]; u < ct.member_uses[base + at + 1]; ++u) {
        CollectiveTimes::Use x = ct.uses[u];
        x.peer = group.member(x.peer);
        uses[k].push_back(x);
      }
    }
    uint32_t tab = out.add(t);
    out.table.push_back(tab);
    if (with_uses) out.add_uses(tab, uses, span);
  }
  return out;
}

// The options of a run of the quotient q of g: its classes' ports (`run`, whose quotient it
// becomes) and, where collectives are costed alone, their times for q's instances (kept in `qtimes`).
SimOptions quotient_options(const StepGraph& g, const Quotient& q, QuotientRun& run, const SimOptions& o, CollectiveTimes& qtimes) {
  run.quotient = &q;
  SimOptions oq = o;
  if (const CollectiveTimes* ct = o.runtime.collective_times) {
    qtimes = quotient_times(g, q, *ct);
    oq.runtime.collective_times = &qtimes;
  }
  oq.quotient = &run;
  return oq;
}

// Simulates the quotient q of `built` (the representatives' programs, built alone: not every
// rank's) with the classes' ports; false where it deadlocks (the full graph then says who waits
// for whom). `use` says what stood for the job.
bool run_built_quotient(const StepGraph& built, Quotient& q, QuotientRun& run, const Platform& p, const SimOptions& o,
                        std::chrono::steady_clock::time_point t0, SymmetryUse& use, SimResult& out) {
  CollectiveTimes qtimes;
  SimResult r = simulate(q.graph, p, quotient_options(built, q, run, o, qtimes));
  if (!r.completed && r.error.empty()) return false;
  use = SymmetryUse{};
  use.nranks = built.nranks;
  use.used = true;
  use.by_text = true;
  use.shift = q.shift;
  use.quotient_steps = q.graph.size();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out = std::move(r);
  return true;
}

}  // namespace

SimResult simulate_symmetric(const StepGraph& g, const Platform& p, const SimOptions& o, SymmetryUse& use) {
  auto t0 = std::chrono::steady_clock::now();
  use = SymmetryUse{};
  use.nranks = g.nranks;
  use.why_not = engine_refusal(o);
  // Every rank, where the memory allows (the build did not count this state: symmetry might
  // have spared it).
  auto every_rank = [&]() {
    uint64_t need = g.memory_bytes() + g.size() * kSimBytesPerStep;
    if (!o.max_memory || need <= o.max_memory) return simulate(g, p, o);
    SimResult r;
    r.refused = true;
    r.error = "no symmetry (" + use.why_not + "): simulating every rank would need about " + human_bytes(need) + " (" +
              with_commas(g.size()) + " steps), past the memory limit of " + human_bytes(o.max_memory) +
              " (--max-memory); use fewer ranks, or raise the limit";
    return r;
  };
  if (use.why_not.empty()) use.why_not = translation_refusal(g);
  if (!use.why_not.empty()) return every_rank();
  QuotientRun run;
  Quotient q;
  std::vector<StepId> watch;
  {
    RankPositions rp = rank_positions(g);  // (freed before the run)
    RankSymmetry shift = find_shift(g, p, o, rp, run.port, use.why_not, use.by_text);
    if (shift.none()) return every_rank();
    q = quotient_graph(g, rp, shift);
    for (StepId s : o.watch) watch.push_back(s < g.size() ? q.step_of(g, rp, s) : s);
  }
  CollectiveTimes qtimes;
  SimOptions oq = quotient_options(g, q, run, o, qtimes);
  oq.watch = watch;
  SimResult r = simulate(q.graph, p, oq);
  if (!r.completed && r.error.empty()) {  // who waits for whom, rank by rank: the full graph's
    use.why_not = "the quotient deadlocked; the report needs every rank";
    SimResult full = every_rank();
    full.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();  // both runs
    return full;
  }
  use.used = true;
  use.shift = q.shift;
  use.quotient_steps = q.graph.size();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string one_class_refusal(const StepGraph& one, const Platform& p, const SimOptions& o, std::vector<uint32_t>* port) {
  if (std::string why = engine_refusal(o); !why.empty()) return why;
  if (one.only_rank != 0) return "not rank 0's program";
  if (!one.prove_shift) return "no schedule text to prove a shift from";
  if (!o.watch.empty() || o.runtime.collective_times) return "steps watched or collectives costed alone";
  for (StepId s = 0; s < one.size(); ++s) {
    StepKind k = one.kind(s);
    if (k == StepKind::Collective) return "a collective (its other members are not built)";
    if ((k == StepKind::Send || k == StepKind::Recv) && one.local(s)) return "an MPI point-to-point message (matched first in, first out)";
  }
  const RankShift shift{1, one.nranks, one.nranks};
  if (std::string why = one.prove_shift(RankSymmetry{{}, one.nranks}, shift); !why.empty()) return why;
  PlatformCheck check(p, o);
  std::vector<uint32_t> ports;
  std::string why;
  if (!check.invariant(message_pairs(one), RankSymmetry{{shift}, one.nranks}, ports, why))
    return "the platform tells the ranks apart (" + why + ")";
  if (port) *port = std::move(ports);
  return "";
}

bool simulate_one_class(const StepGraph& one, const Platform& p, const SimOptions& o, SymmetryUse& use, SimResult& out) {
  auto t0 = std::chrono::steady_clock::now();
  QuotientRun run;
  if (!one_class_refusal(one, p, o, &run.port).empty()) return false;
  const uint32_t n = one.nranks;
  const RankSymmetry group{{RankShift{1, n, n}}, n};
  // Rank 0's program as the quotient: its i-th send of a statement is taken by its i-th receive
  // of that statement (the receiver runs rank 0's program moved, and receives once per send of
  // the statement's executions, in order: shift_proof.cpp).
  StepGraph g = one;
  g.only_rank = -1;
  g.prove_shift = nullptr;
  std::vector<uint32_t> peer(one.size());
  std::map<uint32_t, std::pair<std::vector<StepId>, std::vector<StepId>>> by_stmt;  // statement -> its sends, its receives
  for (StepId s = 0; s < one.size(); ++s) {
    StepKind k = one.kind(s);
    if (k != StepKind::Send && k != StepKind::Recv) continue;
    peer[s] = one.peer(s);
    auto& lists = by_stmt[one.stmt(s)];
    (k == StepKind::Send ? lists.first : lists.second).push_back(s);
  }
  for (const auto& [stmt, lists] : by_stmt) {
    if (lists.first.size() != lists.second.size()) return false;  // (not a shift's program: the proof would have refused)
    for (size_t i = 0; i < lists.first.size(); ++i) {
      g.set_ref(lists.first[i], lists.second[i]);
      g.set_ref(lists.second[i], lists.first[i]);
    }
  }
  Quotient q;
  {
    RankPositions rp = rank_positions(g);
    q = quotient_graph(g, rp, group);
  }
  for (StepId s = 0; s < q.graph.size(); ++s)  // (the quotient keeps rank 0's steps in their order)
    q.dst[s] = q.graph.kind(s) == StepKind::Send ? peer[s] : 0;
  q.full_steps = uint64_t{one.size()} * n;
  if (!run_built_quotient(one, q, run, p, o, t0, use, out)) return false;
  use.one_program = true;
  return true;
}

RankSymmetry text_shifts(const StepGraph& g) {
  RankSymmetry group{{}, g.nranks};
  if (!g.prove_shift || g.nranks < 2) return group;
  const std::vector<RankShift> candidates = candidate_shifts(g.nranks);
  std::vector<char> refused(candidates.size(), 0);
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t c = 0; c < candidates.size() && !grew; ++c) {
      const RankShift& shift = candidates[c];
      if (refused[c] || !group.disjoint(shift) || uint64_t{group.size()} * shift.count > g.nranks) continue;
      if (!g.prove_shift(group, shift).empty()) {
        refused[c] = 1;
        continue;
      }
      group = group.with(shift);
      grew = true;
    }
  }
  return group;
}

std::string representatives_refusal(const StepGraph& part, const RankSymmetry& group, const Platform& p, const SimOptions& o,
                                    std::vector<uint32_t>* port) {
  if (std::string why = engine_refusal(o); !why.empty()) return why;
  if (group.none()) return "no shift proved from the text";
  if (part.only_rank >= 0 || part.built_ranks.empty()) return "not a representatives' build";
  if (!o.watch.empty()) return "steps watched";
  std::vector<uint32_t> reps;
  for (uint32_t c = 0; c < group.classes(); ++c) reps.push_back(group.representative(c));
  std::sort(reps.begin(), reps.end());
  if (reps != part.built_ranks) return "built for other ranks";
  for (StepId s = 0; s < part.size(); ++s) {
    StepKind k = part.kind(s);
    if (k == StepKind::Send || k == StepKind::Recv) {
      if (!part.local(s)) return "a choreographic transfer";
      const P2PInfo& pi = part.p2p_info(s);
      if (pi.peer == kAnyRank || (part.flags(s) & (kFlagAnySource | kFlagAnyTag))) return "a wildcard receive";
    }
    if (k == StepKind::Collective) {
      const Instance& in = part.instances[part.coll(s).instance];
      if (!in.complete || !in.consistent) return "a collective whose members never all issue it alike";
    }
  }
  if (!part.never_ready.empty()) return "a step never becomes ready";
  PlatformCheck check(p, o);
  std::vector<uint32_t> ports;
  std::string why;
  if (!check.invariant(message_pairs(part, o.runtime.collective_times, &group), group, ports, why))
    return "the platform tells the ranks apart (" + why + ")";
  if (port) *port = std::move(ports);
  return "";
}

bool simulate_representatives(const StepGraph& part, const RankSymmetry& group, const Platform& p, const SimOptions& o, SymmetryUse& use,
                              SimResult& out) {
  auto t0 = std::chrono::steady_clock::now();
  QuotientRun run;
  if (!representatives_refusal(part, group, p, o, &run.port).empty()) return false;
  // A message from a representative to a rank not built is taken, in the quotient, by the
  // receive of that rank's representative that stands for the rank's own: the i-th send from a to
  // b = g(c) (c its class's representative) with tag t is c's i-th receive from g⁻¹(a) with tag t
  // (first in, first out on each pair and tag; c runs b's program moved back by g).
  StepGraph g = part;
  g.prove_shift = nullptr;
  {
    std::map<std::tuple<uint32_t, uint32_t, int32_t>, std::vector<StepId>> recvs;  // (rank, source, tag): unmatched, in order
    std::map<std::tuple<uint32_t, uint32_t, int32_t>, uint32_t> sent;              // (rank, destination, tag): sends so far
    for (StepId s = 0; s < g.size(); ++s)
      if (g.kind(s) == StepKind::Recv && g.local(s) && g.p2p_info(s).match == kNoStep)
        recvs[{g.rank(s), g.p2p_info(s).peer, g.p2p_info(s).tag}].push_back(s);
    for (StepId s = 0; s < g.size(); ++s) {
      if (g.kind(s) != StepKind::Send || !g.local(s)) continue;
      const P2PInfo pi = g.p2p_info(s);
      if (pi.match != kNoStep) continue;
      const uint32_t a = g.rank(s), b = pi.peer;
      const uint32_t i = sent[{a, b, pi.tag}]++;
      const uint32_t c = group.representative(group.class_of(b));
      const uint32_t from = group.moved(a, group.times(b, c));  // g⁻¹(a): moving b to c moves a there
      auto it = recvs.find({c, from, pi.tag});
      if (it == recvs.end() || i >= it->second.size()) return false;  // (a message nobody takes: the full graph says who waits)
      StepId r = it->second[i];
      if (g.range_bytes(g.range(s)) != g.range_bytes(g.range(r))) return false;  // (a size mismatch: the full graph reports it)
      g.p2p[g.ref(s)].match = r;
      g.p2p[g.ref(r)].match = s;
    }
    for (StepId s = 0; s < g.size(); ++s)
      if ((g.kind(s) == StepKind::Send || g.kind(s) == StepKind::Recv) && g.local(s) && g.p2p_info(s).match == kNoStep) return false;
  }
  Quotient q;
  {
    RankPositions rp = rank_positions(g);
    q = quotient_graph(g, rp, group);
  }
  // Each representative's steps stand for one on each rank of its class.
  q.full_steps = uint64_t{part.size()} * group.size();
  if (!run_built_quotient(part, q, run, p, o, t0, use, out)) return false;
  use.representatives_only = true;
  return true;
}

}  // namespace sg::sim
