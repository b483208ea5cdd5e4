#include "sim/memo_collectives.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "core/graph/collective_alone.hpp"
#include "core/graph/expand_collectives.hpp"
#include "core/pipeline.hpp"
#include "sim/call_cost.hpp"
#include "sim/symmetry.hpp"

namespace sg::sim {

namespace {

// One collective alone, expanded: the same for every instance of its kind, size and layout.
struct Alone {
  std::unique_ptr<StepGraph> g;
  ExpandedInstance report;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // (source, destination) of its sends, each once
};

void put(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }
template <class T>
void put(std::string& key, T v) {
  put(key, &v, sizeof v);
}

// Per member of a collective run alone (its ranks are the members' places): its messages to and
// from each peer, their bytes and the seconds they streamed (from when each began to move to its
// arrival, less the route's latency).
template <class Host>
std::vector<std::vector<CollectiveTimes::Use>> member_uses(const StepGraph& a, const SimResult& r, uint32_t members, const Host& host,
                                                           const Platform& p, uint32_t window) {
  std::map<std::pair<uint32_t, uint32_t>, std::pair<double, double>> pair;  // (from, to): bytes, seconds
  std::set<std::pair<uint32_t, uint32_t>> windowed;
  std::map<std::pair<uint32_t, uint32_t>, double> lat;
  std::vector<uint32_t> ids;
  for (StepId x = 0; x < a.size() && x < r.arrivals.size() && x < r.transfer_starts.size(); ++x) {
    if (a.kind(x) != StepKind::Send || a.peer(x) == kAnyRank) continue;
    if (!std::isfinite(r.arrivals[x]) || !std::isfinite(r.transfer_starts[x])) continue;
    std::pair<uint32_t, uint32_t> uv{a.rank(x), a.peer(x)};
    if (uv.first >= members || uv.second >= members || uv.first == uv.second) continue;
    auto [lit, fresh] = lat.try_emplace(uv, 0.0);
    if (fresh) {
      double l = 0;
      p.route(host(uv.first), host(uv.second), ids, l);
      lit->second = p.lat_factor * l;
    }
    bool entry = false;
    const CallCost* cc = a.call_cost(x, entry);
    if ((cc ? cc->window : window) > 0) windowed.insert(uv);
    auto& [bytes, secs] = pair[uv];
    bytes += static_cast<double>(a.range_bytes(a.range(x)));
    secs += std::max(0.0, r.arrivals[x] - r.transfer_starts[x] - lit->second);
  }
  std::vector<std::vector<CollectiveTimes::Use>> out(members);
  for (const auto& [uv, bs] : pair) {
    if (bs.first <= 0 || bs.second <= 0) continue;
    bool w = windowed.count(uv) > 0, local = same_node(p, host(uv.first), host(uv.second));
    out[uv.first].push_back({uv.second, true, w, local, bs.first, bs.second});
    out[uv.second].push_back({uv.first, false, w, local, bs.first, bs.second});
  }
  // Each member's load, by direction, window and node boundary (the port it takes), is the mean
  // of the members' that have such messages: a tree's inner members and leaves load their ports
  // alike, as the members of a ring do, so that a shift that keeps the members' times keeps their
  // ports' loads too (CollectiveTimes::uses_alike). What a port carries alone still fits it (a
  // mean of members' loads is at most the largest).
  auto cls = [](const CollectiveTimes::Use& v) { return (v.out ? 4u : 0u) + (v.windowed ? 2u : 0u) + (v.local ? 1u : 0u); };
  std::array<double, 8> bytes{}, secs{}, have{};
  std::vector<std::array<double, 16>> own(members);
  for (uint32_t k = 0; k < members; ++k) {
    own[k].fill(0);
    for (const CollectiveTimes::Use& v : out[k]) own[k][2 * cls(v)] += v.bytes, own[k][2 * cls(v) + 1] += v.flow_s;
    for (uint32_t c = 0; c < 8; ++c)
      if (own[k][2 * c] > 0) bytes[c] += own[k][2 * c], secs[c] += own[k][2 * c + 1], have[c] += 1;
  }
  for (uint32_t k = 0; k < members; ++k)
    for (CollectiveTimes::Use& v : out[k]) {
      uint32_t c = cls(v);
      v.bytes *= bytes[c] / have[c] / own[k][2 * c];
      v.flow_s *= secs[c] / have[c] / own[k][2 * c + 1];
    }
  return out;
}

}  // namespace

bool memo_collectives(const StepGraph& g, Session& s, const AlgoChoice& choice, const Platform& p, const SimOptions& o, CollectiveMemo& out,
                      Diagnostics& diags, const RankSymmetry* stands_for) {
  auto t0 = std::chrono::steady_clock::now();
  out = CollectiveMemo{};
  out.times.table.assign(g.instances.size(), CollectiveTimes::kNone);
  std::map<std::string, Alone> alones;                                // by kind, op, root, members, bytes, layout
  std::map<std::string, uint32_t> shapes;                             // by the above and the routes: index into out.shapes
  std::map<std::pair<const Alone*, uint32_t>, uint32_t> seen;         // (alone, group) -> shape: a group's routes are read once
  std::map<std::pair<const Alone*, uint32_t>, std::string> seen_key;  // (stands_for) its shape's key
  std::set<std::pair<const Alone*, uint32_t>> images_checked;         // (stands_for) groups whose images were compared
  std::vector<uint32_t> shape_table;                                  // per shape: its table of times
  std::vector<uint32_t> ids;
  std::vector<uint32_t> shape_of(g.instances.size(), ~0u);
  for (uint32_t i = 0; i < g.instances.size(); ++i) {
    const Instance& in = g.instances[i];
    const GroupInfo& group = g.groups[in.group];
    if (!in.complete || !in.consistent || group.count < 2) continue;
    if (!g.partial() && in.steps_cnt != group.count) continue;
    // A representatives' build: the full instances this one stands for (each member step stands
    // for one step on each rank of its class; an instance has group.count of them).
    uint64_t weight = 1;
    if (stands_for) {
      uint64_t steps = uint64_t{in.steps_cnt} * stands_for->size();
      if (steps % group.count) {
        out.images_alike = false;
        out.images_why = "an instance whose members are not whole classes";
      }
      weight = steps / group.count;
    }
    StepId s0 = g.instance_steps[in.steps_off];
    const CollInfo& c = g.coll(s0);
    uint32_t per_node = gpus_in_group(group, choice.gpus_per_node);
    std::string akey;
    put(akey, static_cast<uint8_t>(c.kind));
    put(akey, static_cast<uint8_t>(c.op));
    bool rooted = c.kind == CollKind::Bcast || c.kind == CollKind::Reduce;
    put(akey, rooted ? group.index_of(c.root) : int64_t{-1});  // (others carry a root nobody reads)
    put(akey, group.count);
    put(akey, g.range_bytes(g.range(s0)));
    put(akey, c.into.cnt ? g.range_bytes(c.into) : uint64_t{0});
    put(akey, per_node);
    auto [ait, added] = alones.try_emplace(akey);
    Alone& a = ait->second;
    if (added) {
      Diagnostics scratch;
      auto alone = collective_alone(g, i, scratch);
      if (!alone) {
        auto& d = diags.error(g.loc(s0), "cannot cost this collective on its own");
        for (const Diagnostic& x : scratch.all())
          if (x.severity == Severity::Error) d.notes.push_back({x.loc, x.message});
        return false;
      }
      // Its members as consecutive ranks, as many to a node as the instance has.
      AlgoChoice here = choice;
      here.gpus_per_node = per_node;
      ExpandReport rep;
      a.g = expand_collectives(*alone, s, here, library_instantiation(s), diags, &rep);
      if (!a.g) return false;
      a.report = rep.instances.empty() ? ExpandedInstance{} : rep.instances[0];
      a.report.members = group.count;
      std::map<std::pair<uint32_t, uint32_t>, bool> pairs;
      for (StepId x = 0; x < a.g->size(); ++x)
        if (a.g->kind(x) == StepKind::Send && a.g->peer(x) != kAnyRank && pairs.emplace(std::pair{a.g->rank(x), a.g->peer(x)}, true).second)
          a.pairs.push_back({a.g->rank(x), a.g->peer(x)});
    }
    auto host_of = [&](uint32_t rank) { return o.map.empty() ? rank : o.map[rank]; };
    auto host = [&](uint32_t k) { return host_of(group.member(k)); };
    // The routes the algorithm uses, as the engines read them, with the links renamed in the
    // order they first appear (two groups whose messages share links alike share a shape).
    auto route_key = [&](std::string key, const auto& host_at) {
      std::unordered_map<uint32_t, uint32_t> rename;
      for (auto [u, v] : a.pairs) {
        double lat = 0;
        p.route(host_at(u), host_at(v), ids, lat);
        put(key, lat);
        put(key, p.route_bw(host_at(u), host_at(v)));
        put(key, same_node(p, host_at(u), host_at(v)));
        put(key, static_cast<uint32_t>(ids.size()));
        for (uint32_t l : ids) {
          put(key, rename.try_emplace(l, static_cast<uint32_t>(rename.size())).first->second);
          put(key, p.links[l].bw);
          put(key, p.links[l].shared);
        }
      }
      for (uint32_t k = 0; k < group.count && !p.host_speeds.empty(); ++k) put(key, p.host_speeds[host_at(k)]);
      return key;
    };
    auto [sit, fresh] = seen.try_emplace({&a, in.group}, 0u);
    if (fresh) {
      std::string key = route_key(akey, host);
      if (stands_for) seen_key[{&a, in.group}] = key;
      auto [shit, new_shape] = shapes.try_emplace(key, static_cast<uint32_t>(out.shapes.size()));
      if (new_shape) {
        auto t1 = std::chrono::steady_clock::now();
        SimOptions so = o;
        so.map.assign(group.count, 0);
        for (uint32_t k = 0; k < group.count; ++k) so.map[k] = host(k);
        // The analytic engine (α-β) shares a costed collective's ports with other traffic: it
        // needs what each member moved alone, and how long it streamed (the run's trace).
        const bool uses = o.model == Model::Analytic && !o.loggp.enabled;
        so.trace = uses;
        so.progress = nullptr;
        so.quotient = nullptr;
        so.runtime.collective_times = nullptr;
        so.watch.clear();
        so.rank_ends = true;  // (a member's exit is its last step: exactly when it ended)
        SymmetryUse sym;
        SimResult r = simulate_symmetric(*a.g, p, so, sym);
        std::string what = expansion_line(a.report);
        if (!r.error.empty() || !r.completed) {
          out.run_failed = true;
          diags.error(g.loc(s0), "costing " + what + " alone: " + (r.error.empty() ? std::string("it deadlocked") : r.error));
          return false;
        }
        MemoShape sh;
        sh.kind = c.kind;
        sh.members = group.count;
        sh.bytes = a.report.bytes;
        sh.line = what;
        sh.steps = a.g->size();
        sh.symmetry = sym.line();
        std::vector<double> t(group.count, 0);
        for (uint32_t k = 0; k < group.count && k < r.rank_ends.size(); ++k) t[k] = r.rank_ends[k];
        sh.seconds = *std::max_element(t.begin(), t.end());
        sh.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        out.shapes.push_back(sh);
        shape_table.push_back(out.times.add(t));
        if (uses) out.times.add_uses(shape_table.back(), member_uses(*a.g, r, group.count, host, p, o.runtime.window), sh.seconds);
      }
      sit->second = shit->second;
    }
    shape_of[i] = sit->second;
    out.shapes[sit->second].instances += weight;
    out.instances += weight;
    out.expanded_steps += a.g->size() * weight;
    // A representatives' build: each shift's image of the group (an instance not built) has the
    // same shape, and each member's time is its image's (sim/symmetry.cpp's times_invariant, on
    // the instances the full graph would have).
    if (stands_for && out.images_alike && images_checked.insert({&a, in.group}).second) {
      const std::string& key = seen_key.at({&a, in.group});
      const uint32_t table = shape_table[sit->second];
      std::vector<uint32_t> img(group.count), order(group.count);
      for (const RankShift& sh : stands_for->shifts) {
        for (uint32_t k = 0; k < group.count; ++k) img[k] = sh.moved(group.member(k));
        std::vector<uint32_t> sorted = img;
        std::sort(sorted.begin(), sorted.end());
        for (uint32_t k = 0; k < group.count; ++k)
          order[k] = static_cast<uint32_t>(std::lower_bound(sorted.begin(), sorted.end(), img[k]) - sorted.begin());
        std::string ikey;
        put(ikey, static_cast<uint8_t>(c.kind));
        put(ikey, static_cast<uint8_t>(c.op));
        put(ikey, rooted ? int64_t{order[static_cast<uint32_t>(group.index_of(c.root))]} : int64_t{-1});
        put(ikey, group.count);
        put(ikey, g.range_bytes(g.range(s0)));
        put(ikey, c.into.cnt ? g.range_bytes(c.into) : uint64_t{0});
        uint32_t most = 0, run = 0, node = ~0u;  // (gpus_in_group, on the image's members)
        for (uint32_t k = 0; k < group.count && choice.gpus_per_node; ++k) {
          uint32_t at = sorted[k] / choice.gpus_per_node;
          run = at == node ? run + 1 : 1;
          node = at;
          most = std::max(most, run);
        }
        put(ikey, most);
        bool alike = route_key(ikey, [&](uint32_t k) { return host_of(sorted[k]); }) == key;
        for (uint32_t k = 0; alike && k < group.count; ++k)
          alike = out.times.seconds[out.times.off[table] + k] == out.times.seconds[out.times.off[table] + order[k]] &&
                  out.times.uses_alike(table, k, table, order[k]);
        if (!alike) {
          out.images_alike = false;
          out.images_why =
              "a collective's image under " + sh.describe() + " is costed otherwise (line " + std::to_string(g.loc(s0).line) + ")";
          break;
        }
      }
    }
  }
  for (uint32_t i = 0; i < g.instances.size(); ++i)
    if (shape_of[i] != ~0u) out.times.table[i] = shape_table[shape_of[i]];
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

}  // namespace sg::sim
