// The --algo parser (parse_algo_choice): COLL=SCHEDULE[,…], `nccl`, `openmpi` and their
// options, checked against the library's catalogue (algorithm_choice.cpp).
#include "core/graph/algorithm_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace sg {

bool parse_algo_choice(const std::string& spec, AlgoChoice& out, Diagnostics& diags) {
  auto kinds = []() {
    std::string s;
    for (size_t i = 0; i < kCollKindCount; ++i) {
      if (i) s += ", ";
      s += coll_name(static_cast<CollKind>(i));
    }
    return s;
  };
  if (spec.empty()) return diags.fail("empty --algo (write e.g. allreduce=ring,bcast=binomial, or nccl:gpus=8)");
  std::stringstream ss(spec);
  std::string item;
  std::array<bool, kCollKindCount> seen{};
  bool seen_default = false;
  while (std::getline(ss, item, ',')) {
    if (item == "openmpi" || item == "nccl" || item.rfind("nccl:", 0) == 0) {
      if (seen_default) return diags.fail("--algo names a default twice (openmpi or nccl)");
      seen_default = true;
      if (item == "openmpi") {
        out.defaults = AlgoDefault::OpenMpi;
        continue;
      }
      out.defaults = AlgoDefault::Nccl;
      if (item == "nccl") continue;
      std::string opt = item.substr(5);
      unsigned long g = 0;
      size_t used = 0;
      if (opt.rfind("gpus=", 0) == 0 && opt.size() > 5 && opt[5] != '-' && opt[5] != '+') {
        try {
          g = std::stoul(opt.substr(5), &used);
        } catch (const std::logic_error&) {  // invalid_argument, out_of_range
          used = 0;
        }
      }
      if (used == 0 || 5 + used != opt.size() || g == 0 || g > 1024) {
        std::string err = "--algo nccl takes gpus=G (GPUs per node, 1 to 1024), got 'nccl:";
        err += opt;
        err += "'";
        return diags.fail(std::move(err));
      }
      out.gpus_per_node = static_cast<uint32_t>(g);
      continue;
    }
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      std::string err = "--algo needs COLLECTIVE=ALGORITHM, openmpi or nccl[:gpus=G], got '";
      err += item;
      err += "' (collectives: ";
      err += kinds();
      err += ")";
      return diags.fail(std::move(err));
    }
    std::string kname = item.substr(0, eq), aname = item.substr(eq + 1);
    CollKind k;
    if (!parse_coll_kind(kname, k)) {
      std::string err = "unknown collective '";
      err += kname;
      err += "' in --algo (choose from ";
      err += kinds();
      err += ")";
      return diags.fail(std::move(err));
    }
    size_t ki = static_cast<size_t>(k);
    if (seen[ki]) {
      std::string err = "--algo names ";
      err += kname;
      err += " twice";
      return diags.fail(std::move(err));
    }
    seen[ki] = true;
    const AlgoName* hit = nullptr;
    for (const AlgoName& a : algorithms_for(k))
      if (aname == a.name || aname == a.schedule) hit = &a;
    if (!hit) {
      std::string err = "unknown algorithm '";
      err += aname;
      err += "' for ";
      err += kname;
      err += " (choose from ";
      bool first = true;
      for (const AlgoName& a : algorithms_for(k)) {
        if (!first) err += ", ";
        err += a.name;
        first = false;
      }
      err += ")";
      return diags.fail(std::move(err));
    }
    out.schedule[ki] = hit->schedule;
  }
  return true;
}

}  // namespace sg
