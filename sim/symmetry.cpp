// One rank per class of ranks alike: the platform's half of the proof and the quotient's run
// (symmetry.hpp).
#include "sim/symmetry.hpp"

#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "core/base/sizes.hpp"
#include "core/graph/symmetry.hpp"
#include "sim/call_cost.hpp"

namespace sg::sim {

std::string SymmetryUse::line() const {
  std::string all = with_commas(nranks) + " rank" + (nranks == 1 ? "" : "s");
  if (!used) return "none: " + why_not + "; simulated all " + all;
  uint32_t copies = nranks / shift;
  return all + " in " + with_commas(shift) + " class" + (shift == 1 ? "" : "es") + " of " + with_commas(copies) +
         " (alike under a shift by " + with_commas(shift) + " rank" + (shift == 1 ? "" : "s") + "): simulated " + with_commas(shift) +
         " rank" + (shift == 1 ? "" : "s") + ", " + with_commas(quotient_steps) + " steps";
}

namespace {

// Why the engine cannot run a quotient ("" if it can).
std::string engine_refusal(const SimOptions& o) {
  if (!o.symmetry) return "--no-symmetry";
  if (o.model != Model::Analytic) return "the SimGrid engine simulates every rank";
  if (o.loggp.enabled) return "the LogGP engine simulates every rank";
  if (o.trace) return "a trace shows every rank";
  return "";
}

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

  // Whether the translation by k of every (source, destination) pair in `pairs` (sources < k)
  // keeps its route's costs, and maps its ports by one permutation of the links that fixes no
  // port; `port` then holds each link's class representative.
  bool invariant(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, uint32_t k, uint32_t n, std::vector<uint32_t>& port,
                 std::string& why) {
    std::unordered_map<uint32_t, uint32_t> perm;  // port link -> its image under the shift
    std::unordered_set<uint32_t> roles[2];        // links used as sending ports, as receiving ports
    for (const auto& [a, d] : pairs) {
      Route first = route(a, d), cur = first;
      for (uint32_t j = 0; j < n / k; ++j) {
        uint32_t a1 = (a + (j + 1) * k) % n, d1 = (d + (j + 1) * k) % n;
        Route next = route(a1, d1);
        if (!(next == first)) {
          why = "the route from rank " + std::to_string(a1) + " to " + std::to_string(d1) + " is not the one from " + std::to_string(a) +
                " to " + std::to_string(d) + ", shifted";
          return false;
        }
        for (int r = 0; r < 2; ++r) {
          if ((cur.port[r] == none_) != (next.port[r] == none_)) {
            why = "a route's port is a loopback where its shifted route's is not";
            return false;
          }
          if (cur.port[r] == none_) continue;
          roles[r].insert(cur.port[r]);
          auto [it, fresh] = perm.emplace(cur.port[r], next.port[r]);
          const LinkInfo &l = p_.links[cur.port[r]], &m = p_.links[next.port[r]];
          if (!fresh && it->second != next.port[r]) {
            why = "link " + l.name + " has two images under the shift";
            return false;
          }
          if (l.bw != m.bw) {
            why = "links " + l.name + " and " + m.name + " differ";
            return false;
          }
        }
        cur = next;
      }
    }
    // Every port's class: its orbit under the permutation, of n / k distinct links (a port the
    // shift fixes would carry the flows of several ranks of one class, where the quotient has one).
    port.assign(p_.links.size(), none_);
    for (const auto& [l0, img] : perm) {
      if (port[l0] != none_) continue;
      uint32_t l = l0, steps = 0;
      do {
        auto it = perm.find(l);
        if (it == perm.end()) {
          why = "link " + p_.links[l].name + " has no image under the shift";
          return false;
        }
        port[l] = l0;
        l = it->second;
        ++steps;
      } while (l != l0 && steps <= n / k);
      if (steps != n / k) {
        why = "the shift maps link " + p_.links[l0].name + " onto itself after " + std::to_string(steps) + " of " + std::to_string(n / k) +
              " steps (ranks of one class share it)";
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

// The distinct (source, destination) pairs of the messages sent by ranks below k.
std::vector<std::pair<uint32_t, uint32_t>> pairs_from(const StepGraph& g, uint32_t k) {
  std::unordered_set<uint64_t> seen;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Send && g.rank(s) < k && seen.insert((uint64_t{g.rank(s)} << 32) | g.peer(s)).second)
      out.emplace_back(g.rank(s), g.peer(s));
  return out;
}

// The smallest shift both the graph and the platform allow, or 0 (why_not says why).
uint32_t find_shift(const StepGraph& g, const Platform& p, const SimOptions& o, const RankPositions& rp, std::vector<uint32_t>& port,
                    std::string& why_not) {
  const uint32_t n = g.nranks;
  uint32_t k0 = 0;
  std::string first_why;
  for (uint32_t k = 1; k < n && !k0; ++k) {
    if (n % k) continue;
    std::string why;
    if (translation_invariant(g, rp, k, why)) k0 = k;
    else if (first_why.empty()) first_why = why;
  }
  if (!k0) {
    why_not = "no shift of the ranks maps the schedule onto itself (" + first_why + ")";
    return 0;
  }
  // The graph's translation by k0 is one by every multiple of k0 too.
  PlatformCheck check(p, o);
  std::string first_platform;
  for (uint32_t k = k0; k < n; k += k0) {
    if (n % k) continue;
    std::string why;
    if (check.invariant(pairs_from(g, k), k, n, port, why)) return k;
    if (first_platform.empty()) first_platform = why;
  }
  why_not = "the platform tells the ranks apart (" + first_platform + ")";
  return 0;
}

}  // namespace

uint32_t rank_symmetry(const StepGraph& g, const Platform& p, const SimOptions& o, std::string& why_not) {
  why_not = translation_refusal(g);
  if (!why_not.empty()) return 0;
  RankPositions rp = rank_positions(g);
  std::vector<uint32_t> port;
  return find_shift(g, p, o, rp, port, why_not);
}

SimResult simulate_symmetric(const StepGraph& g, const Platform& p, const SimOptions& o, SymmetryUse& use) {
  auto t0 = std::chrono::steady_clock::now();
  use = SymmetryUse{};
  use.asked = o.symmetry;
  use.nranks = g.nranks;
  use.why_not = engine_refusal(o);
  if (use.why_not.empty()) use.why_not = translation_refusal(g);
  if (!use.why_not.empty()) return simulate(g, p, o);
  QuotientRun run;
  Quotient q;
  std::vector<StepId> watch;
  {
    RankPositions rp = rank_positions(g);  // (freed before the run)
    uint32_t k = find_shift(g, p, o, rp, run.port, use.why_not);
    if (!k) return simulate(g, p, o);
    q = quotient_graph(g, rp, k);
    for (StepId s : o.watch) watch.push_back(s < g.size() ? q.step_of(g, rp, s) : s);
  }
  run.shift = q.shift;
  run.nranks = q.nranks;
  run.full_steps = q.full_steps;
  run.dst = &q.dst;
  SimOptions oq = o;
  oq.watch = watch;
  oq.quotient = &run;
  SimResult r = simulate(q.graph, p, oq);
  if (!r.completed && r.error.empty()) {  // who waits for whom, rank by rank: the full graph's
    use.why_not = "the quotient deadlocked; the report needs every rank";
    return simulate(g, p, o);
  }
  use.used = true;
  use.shift = q.shift;
  use.quotient_steps = q.graph.size();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sg::sim
