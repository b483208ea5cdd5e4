#include "core/graph/passes.hpp"

#include <algorithm>

namespace sg {

const std::vector<Pass>& passes() {
  static const std::vector<Pass> p = {
      {"match", "pair MPI sends and receives", match_p2p},
      {"totals", "refuse byte totals past 64 bits", check_totals},
      {"collectives", "form collective instances", group_collectives},
      {"unused", "warn about buffers no step uses", warn_unused_buffers},
      {"prune", "drop implied dependencies", prune_deps},
      {"validate", "check graph invariants", validate},
  };
  return p;
}

std::vector<std::string> dump_points() {
  std::vector<std::string> v = {"parse", "elaborate"};
  for (const auto& p : passes()) v.push_back(p.name);
  return v;
}

bool run_passes(StepGraph& g, Diagnostics& diags, const std::vector<std::string>& dump_after,
                const std::function<void(const std::string&)>& dump) {
  auto wanted = [&](const std::string& n) {
    return std::find(dump_after.begin(), dump_after.end(), n) != dump_after.end() ||
           std::find(dump_after.begin(), dump_after.end(), "all") != dump_after.end();
  };
  if (wanted("elaborate") && dump) dump("elaborate");
  for (const auto& p : passes()) {
    uint64_t before = diags.error_count();
    p.run(g, diags);
    if (diags.error_count() > before) return false;
    if (wanted(p.name) && dump) dump(p.name);
  }
  return true;
}

}  // namespace sg
