// The stream order (stream_order.hpp): groups of transfers in one global order, found as the
// longest path over the graph whose nodes are messages, collective instances and local steps.
#include "core/graph/stream_order.hpp"

#include <algorithm>
#include <numeric>

namespace sg {

bool stream_transfer(StepKind k) { return k == StepKind::Send || k == StepKind::Recv || k == StepKind::Collective; }

namespace {

struct UnionFind {
  std::vector<StepId> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), StepId{0}); }
  StepId find(StepId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(StepId a, StepId b) {
    a = find(a), b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

// One ordering constraint: level(to) >= level(from) + weight.
struct Edge {
  StepId from, to;
  uint8_t weight;
};

}  // namespace

const std::vector<StepId>& nonblocking_deps_through(const StepGraph& g, StepId h, std::vector<StepId>& out) {
  out.clear();
  std::vector<StepId> todo{h};
  while (!todo.empty()) {
    StepId x = todo.back();
    todo.pop_back();
    for (StepId d : g.deps(x)) {
      if (stream_transfer(g.kind(d)) && g.nonblocking(d)) todo.push_back(d);
      else out.push_back(d);
    }
  }
  return out;
}

bool stream_order(const StepGraph& g, uint32_t rank, StreamOrder& out, Diagnostics& diags) {
  const size_t n = g.size();
  UnionFind uf(n);
  bool ok = true;
  // Messages: a send and its receive are one node.
  for (StepId s = 0; s < n; ++s) {
    StepKind k = g.kind(s);
    if (k != StepKind::Send && k != StepKind::Recv) continue;
    StepId m = g.match(s);
    if (m == kNoStep) {
      bool wild = k == StepKind::Recv && (g.flags(s) & (kFlagAnySource | kFlagAnyTag));
      diags.error(g.loc(s), wild
                                ? "a receive from any source or with any tag cannot run over NCCL, which matches transfers by their order "
                                  "between two fixed ranks (use --transport staged, or name the source and tag)"
                                : std::string("this ") + step_kind_name(k) + " on rank " + std::to_string(g.rank(s)) + " has no matching " +
                                      (k == StepKind::Send ? "receive" : "send") + ", which NCCL would wait for forever");
      ok = false;
      continue;
    }
    uf.join(s, m);
  }
  // Collectives: the members of an instance are one node.
  for (const Instance& in : g.instances) {
    if (!in.complete || !in.consistent) {
      StepId first = g.instance_steps[in.steps_off];
      diags.error(g.loc(first),
                  "this collective is not issued by every member of its group with the same kind, root, operator and size, "
                  "so NCCL would wait for it forever");
      ok = false;
      continue;
    }
    for (uint32_t i = 1; i < in.steps_cnt; ++i) uf.join(g.instance_steps[in.steps_off], g.instance_steps[in.steps_off + i]);
  }
  if (!ok) return false;

  std::vector<Edge> edges;
  edges.reserve(g.dep_total());
  std::vector<StepId> through;
  for (StepId s = 0; s < n; ++s) {
    bool to_transfer = stream_transfer(g.kind(s));
    for (StepId d : g.deps(s)) {
      bool from_transfer = stream_transfer(g.kind(d));
      if (from_transfer && g.nonblocking(d)) {
        // Only its start is needed: a transfer may share its group. Local work needs what the
        // nonblocking transfer itself waited for, which the prune pass may have taken out of the
        // step's own dependencies (a -> s dropped because s -> h -> a): inherited here.
        if (to_transfer) edges.push_back({d, s, 0});
        else
          for (StepId e : nonblocking_deps_through(g, d, through)) edges.push_back({e, s, static_cast<uint8_t>(0)});
        continue;
      }
      edges.push_back({d, s, static_cast<uint8_t>(to_transfer ? 1 : 0)});
    }
    if (g.kind(s) == StepKind::Wait)
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) edges.push_back({*h, s, 0});
  }
  for (Edge& e : edges) e.from = uf.find(e.from), e.to = uf.find(e.to);

  // Longest path by relaxation. Levels are bounded by the number of transfer nodes; one beyond
  // means a cycle through a weight-1 edge: transfers that wait on each other's completion.
  std::vector<uint32_t> level(n, 0);
  uint64_t nodes = 0;
  for (StepId s = 0; s < n; ++s)
    if (uf.find(s) == s && stream_transfer(g.kind(s))) level[s] = 1, ++nodes;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Edge& e : edges) {
      if (e.from == e.to && e.weight == 0) continue;
      uint32_t want = level[e.from] + e.weight;
      if (level[e.to] >= want) continue;
      level[e.to] = want;
      changed = true;
      if (want > nodes + 1) {
        diags.error(g.loc(e.to),
                    "this transfer and one it depends on wait on each other's completion: it can run with buffered sends "
                    "(MPI) but not over NCCL, whose sends complete only when the receiver takes part "
                    "(use --transport staged)");
        return false;
      }
    }
  }

  out = StreamOrder{};
  for (StepId s = 0; s < n; ++s) {
    if (g.rank(s) != rank) continue;
    StepKind k = g.kind(s);
    StepId c = uf.find(s);
    out.level.push_back(level[c]);
    out.groups = std::max(out.groups, level[c]);
    uint64_t key = 0, bytes = 0;
    if (k == StepKind::Send || k == StepKind::Recv) {
      StepId send = k == StepKind::Send ? s : g.match(s);
      key = send;
      bytes = g.range_bytes(g.range(send));
    } else if (k == StepKind::Collective) {
      key = c;  // the instance's first member, the same on every member
    }
    out.key.push_back(key);
    out.bytes.push_back(bytes);
    out.stmt.push_back(g.stmt(s));
    out.kind.push_back(static_cast<uint8_t>(k));
  }
  return true;
}

std::string stream_order_text(const StepGraph& g, uint32_t rank, const StreamOrder& o) {
  // The rank's steps in g, in order: the k-th is the order's k-th.
  std::vector<StepId> mine;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.only_rank >= 0 || g.rank(s) == rank) mine.push_back(s);
  if (mine.size() != o.level.size()) return "(the order does not fit this graph)\n";
  std::string out =
      "# rank " + std::to_string(rank) + ": " + std::to_string(o.groups) + " transfer group" + (o.groups == 1 ? "" : "s") + "\n";
  for (uint32_t lv = 0; lv <= o.groups; ++lv) {
    std::vector<StepId> xfer, local;
    for (StepId k = 0; k < o.level.size(); ++k)
      if (o.level[k] == lv) (stream_transfer(static_cast<StepKind>(o.kind[k])) ? xfer : local).push_back(k);
    std::stable_sort(xfer.begin(), xfer.end(), [&](StepId a, StepId b) { return o.key[a] < o.key[b]; });
    auto line = [&](StepId idx) {
      StepId s = mine[idx];
      StepKind k = g.kind(s);
      std::string t = "  ";
      t += step_kind_name(k);
      if (k != StepKind::Wait) t.append(" ").append(g.range_name(g.range(s)));
      if (k == StepKind::Send) t.append(" to ").append(std::to_string(g.peer(s)));
      if (k == StepKind::Recv) t.append(" from ").append(std::to_string(g.peer(s))).append(g.flags(s) & kFlagReduce ? " reduce" : "");
      Loc l = g.loc(s);
      if (l.valid()) t.append("  (line ").append(std::to_string(l.line)).append(")");
      return t.append("\n");
    };
    if (!xfer.empty()) {
      out += "group " + std::to_string(lv) + " (lane 1):\n";
      for (StepId s : xfer) out += line(s);
    }
    if (!local.empty()) {
      out += (lv ? "after group " + std::to_string(lv) : std::string("before group 1")) + " (lane 0):\n";
      for (StepId s : local) out += line(s);
    }
  }
  return out;
}

}  // namespace sg
