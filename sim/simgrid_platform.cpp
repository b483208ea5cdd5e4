// Building a Platform into a SimGrid 3.32 engine.
#include "sim/simgrid_platform.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cmath>
#include <stdexcept>

#include "sim/platform/kind.hpp"

namespace sg::sim {

namespace s4u = simgrid::s4u;

void configure_simgrid(const Platform& p) {
  switch (p.model) {
    case NetModel::Ideal:
      // CM02: latency and bandwidth factors 1, weight-S 0 (SimGrid's surf_network_model_init_CM02).
      s4u::Engine::set_config("network/model:CM02");
      // No 5% reverse flow on the back route of every communication.
      s4u::Engine::set_config("network/crosstraffic:0");
      // No rate bound TCP-gamma / (2 latency) that matters: a gamma so large that the bound is
      // no bound. (Not 0, which the max-min solver also reads as no bound: CM02 takes
      // min(a comm's own rate, gamma / (2 latency)), so with 0 a comm's set_rate, a protocol's
      // channel share, would be lost.)
      s4u::Engine::set_config("network/TCP-gamma:1e300");
      break;
    case NetModel::Cm02: s4u::Engine::set_config("network/model:CM02"); break;
    case NetModel::Lv08: s4u::Engine::set_config("network/model:LV08"); break;
  }
}

namespace {

bool same(double a, double b) { return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

void build_simgrid(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts) {
  std::vector<s4u::Link*> links;
  build_simgrid(p, e, hosts, links);
}

void build_simgrid(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts, std::vector<s4u::Link*>& links) {
  configure_simgrid(p);
  hosts.clear();
  links.clear();
  // The kind's zone (sim/platform/<kind>_simgrid.cpp, found in the table of kinds) sets hosts.
  if (const detail::Kind* k = detail::find_kind(p.kind); k && k->zone) k->zone(p, e, hosts);
  // Every link of p.links, found by name, must be SimGrid's link with the same characteristics:
  // the generated routes name SimGrid's links, so this catches a SimGrid whose zones differ.
  links.reserve(p.links.size());
  for (const LinkInfo& li : p.links) {
    s4u::Link* l = s4u::Link::by_name_or_null(li.name);
    if (!l || !same(l->get_bandwidth(), li.bw) || !same(l->get_latency(), li.lat)) {
      std::string m = "platform " + p.spec;
      m += ": SimGrid's link ";
      m += li.name;
      m += l ? " differs from the generated one (bandwidth or latency)" : " does not exist (a SimGrid other than 3.32?)";
      throw std::runtime_error(m);
    }
    links.push_back(l);
  }
}

}  // namespace sg::sim
