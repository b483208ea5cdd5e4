// One simulated point for a test (sim/point.hpp): the spec from its usual pieces, run, and the
// test stopped with the point's own error where it has one.
#pragma once
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/point.hpp"

namespace sgtest {

// A platform spec read as the CLI reads --platform ("" = the default platform).
inline sg::sim::PlatformChoice platform(const std::string& spec) {
  sg::sim::PlatformChoice c;
  if (spec.empty()) return c;
  sg::SourceManager sm;
  sg::Diagnostics diags;
  INFO("platform " << spec);
  REQUIRE(sg::sim::read_platform(spec, c, sm, diags));
  return c;
}

inline sg::sim::PointResult sim_point(const std::string& target, uint32_t n, std::vector<std::pair<std::string, std::string>> sets = {},
                                      const std::string& platform = "", sg::sim::Model m = sg::sim::Model::Analytic, uint32_t window = 0) {
  sg::sim::PointSpec p;
  p.target = target;
  p.n = n;
  p.sets = std::move(sets);
  p.platform = sgtest::platform(platform);
  p.options.model = m;
  p.options.runtime.window = window;
  sg::sim::PointResult r = sg::sim::run_point(p);
  INFO(target << " N = " << n << ": " << r.error << r.diag);
  REQUIRE(r.error.empty());
  return r;
}

}  // namespace sgtest
