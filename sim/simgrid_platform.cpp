// TEMPORARY stand-in until the platform layer lands.
#include "sim/simgrid_platform.hpp"

namespace sg::sim {

void build_simgrid(Platform& p, simgrid::s4u::Engine& e, std::vector<simgrid::s4u::Host*>& hosts) {
  namespace sg4 = simgrid::s4u;
  if (p.ideal) {
    e.set_config("network/model:CM02");
    e.set_config("network/crosstraffic:0");
  }
  auto* zone = sg4::create_star_zone("star");
  for (uint32_t h = 0; h < p.hosts; ++h) {
    auto* host = zone->create_host("h" + std::to_string(h), p.speed)->seal();
    auto* l = zone->create_split_duplex_link("l" + std::to_string(h), p.links[2 * h].bw)->set_latency(p.links[2 * h].lat)->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{l, sg4::LinkInRoute::Direction::UP}}, true);
    hosts.push_back(host);
  }
  zone->seal();
}

}  // namespace sg::sim
