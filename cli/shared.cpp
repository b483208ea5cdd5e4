#include "cli/shared.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "core/dsl/printer.hpp"
#include "core/graph/passes.hpp"

namespace sg::cli {

int fail(const std::string& msg) {
  std::cerr << "stepgraph: error: " << msg << "\n";
  return 2;
}

int prepare(const Common& c, Prepared& p, bool many) {
  std::string err;
  if (!parse_rank_list(c.ranks, p.ns, err)) return fail("bad -n '" + c.ranks + "': " + err);
  if (!many && p.ns.size() != 1) return fail("this command takes one rank count (-n N), got '" + c.ranks + "'");
  for (const auto& kv : c.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      return fail("--set needs NAME=VALUE, got '" + kv + "'");
    p.opts.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (c.max_memory.empty()) {
    p.opts.max_memory = default_memory_limit();
  } else if (!parse_size(c.max_memory, p.opts.max_memory)) {
    return fail("bad --max-memory '" + c.max_memory + "' (use e.g. 3GiB, 512MiB, 1000000)");
  }
  auto points = dump_points();
  for (const auto& d : c.dump_after) {
    if (d != "all" && std::find(points.begin(), points.end(), d) == points.end()) {
      std::string names;
      for (const auto& x : points) names += (names.empty() ? "" : ", ") + x;
      return fail("unknown pass '" + d + "' for --dump-after (passes: " + names + ", all)");
    }
  }
  p.t = p.s.resolve(c.target);
  if (p.s.diags.has_errors() || !p.t.schedule) {
    p.s.diags.print(std::cerr, p.s.sources);
    return 2;
  }
  bool want_parse = std::find(c.dump_after.begin(), c.dump_after.end(), "parse") != c.dump_after.end() ||
                    std::find(c.dump_after.begin(), c.dump_after.end(), "all") != c.dump_after.end();
  if (want_parse) std::cout << "=== after parse ===\n" << print_program(*p.t.program);
  return 0;
}

bool expand_for_cost(std::unique_ptr<StepGraph>& g, Session& s, const AlgoChoice& algo, uint64_t max_memory,
                     ExpandReport& rep, std::unique_ptr<StepGraph>* as_written) {
  if (std::none_of(g->instances.begin(), g->instances.end(), [](const Instance& in) { return in.complete && in.consistent; }))
    return true;
  auto x = expand_collectives(*g, s, algo, s.diags, &rep, max_memory);
  if (!x) return false;
  if (as_written) *as_written = std::move(g);
  g = std::move(x);
  return true;
}

std::string expansion_line(const ExpandedInstance& e) {
  std::string l = coll_name(e.kind);
  l += " over " + std::to_string(e.members) + " rank" + (e.members == 1 ? "" : "s");
  if (e.kind != CollKind::Barrier) l += ", " + human_bytes(e.bytes);
  l += ": ";
  l += !e.schedule.empty() ? e.schedule : e.expanded ? std::string("one no-op step") : std::string("not expanded");
  if (!e.why.empty()) l += " (" + e.why + ")";
  return l;
}

void print_warnings(const Session& s) {
  for (const auto& d : s.diags.all())
    if (d.severity != Severity::Error) std::cerr << render_diagnostic(d, s.sources);
}

std::string rank_ranges(const std::vector<uint32_t>& ns) {
  std::string out;
  for (size_t i = 0; i < ns.size();) {
    size_t j = i;
    while (j + 1 < ns.size() && ns[j + 1] == ns[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ns[i]);
    if (j >= i + 2) out += ".." + std::to_string(ns[j]);
    else if (j == i + 1) out += ", " + std::to_string(ns[j]);
    i = j + 1;
  }
  return out;
}

// "a..b" doubles from a up to b (b included); "a,b,c" as listed; mixtures. For rank counts and
// swept sizes alike: a simulation sweep is read on log axes.
bool parse_geometric(const std::string& text, bool sizes, std::vector<uint64_t>& out, std::string& err) {
  out.clear();
  std::stringstream ss(text);
  std::string item;
  auto value = [&](const std::string& v, uint64_t& x) {
    if (sizes) return parse_size(v, x);
    char* end = nullptr;
    unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end || v[0] == '-') return false;
    x = n;
    return true;
  };
  while (std::getline(ss, item, ',')) {
    auto dots = item.find("..");
    if (dots == std::string::npos) {
      uint64_t x = 0;
      if (!value(item, x)) return err = "bad value '" + item + "'", false;
      out.push_back(x);
      continue;
    }
    uint64_t a = 0, b = 0;
    if (!value(item.substr(0, dots), a) || !value(item.substr(dots + 2), b) || a == 0 || b < a)
      return err = "bad range '" + item + "' (a..b with 0 < a <= b: a, 2a, 4a, … up to b)", false;
    for (uint64_t x = a; x <= b; x *= 2) {
      out.push_back(x);
      if (x > b / 2) break;
    }
    if (out.back() != b) out.push_back(b);
  }
  if (out.empty()) return err = "empty", false;
  return true;
}

// nccl-tests' bus bandwidth factor for a postcondition, and its name.
double bus_factor(ExpectKind k, uint32_t n, std::string& name) {
  double nn = n;
  const char* label = "1";  // assigned once below: GCC 12 warns (-Wrestrict, falsely) on short literals per case
  double f = 1;
  switch (k) {
    case ExpectKind::Allreduce: label = "2(N-1)/N", f = n > 1 ? 2 * (nn - 1) / nn : 0; break;
    case ExpectKind::ReduceScatter:
    case ExpectKind::Allgather:
    case ExpectKind::Alltoall:
    case ExpectKind::Gather:
    case ExpectKind::Scatter: label = "(N-1)/N", f = n > 1 ? (nn - 1) / nn : 0; break;
    default: break;
  }
  name.assign(label);
  return f;
}

// The "size" nccl-tests would print: the bytes per rank of the buffer the postcondition is about
// (the whole gathered buffer for an all-gather, the send buffer for an all-to-all).
uint64_t expected_size(const StepGraph& g, ExpectKind& kind) {
  kind = ExpectKind::Nothing;
  for (const Expectation& e : g.expects) {
    if (e.bufs.empty()) continue;
    kind = e.kind;
    uint64_t b = 0;
    b += g.range_bytes(e.bufs.front());
    return b;
  }
  return 0;
}

}  // namespace sg::cli
