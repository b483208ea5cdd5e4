#include "cli/shared.hpp"

#include <iostream>

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

}  // namespace sg::cli
