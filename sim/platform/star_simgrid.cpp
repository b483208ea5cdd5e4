// The `star` kind's SimGrid zone: a StarZone, one split-duplex link and one loopback per host.
// SimGrid builds only.
#include "sim/platform/zones_simgrid.hpp"

namespace sg::sim::detail {

// The zone builder the table names (sim/platform/kinds.cpp), declared with its type.
ZoneFn star_zone;

void star_zone(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& out) {
  s4u::NetZone* zone = s4u::create_star_zone("star");
  for (uint32_t h = 0; h < p.hosts; h++) {
    s4u::Host* host = zone->create_host(p.host_name(h), p.speed);
    // Full duplex: one SimGrid split-duplex link per host, lat/2 each way, so up + down = lat.
    s4u::SplitDuplexLink* l = make_duplex(zone, p.host_name(h) + "_link", p.star.bw, p.star.lat / 2);
    s4u::Link* lb = make_loopback(zone, p, h);
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {s4u::LinkInRoute(l, s4u::LinkInRoute::Direction::UP)}, true);
    zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr, {s4u::LinkInRoute(lb)}, false);
  }
  zone->seal();
  hosts_by_name(p, e, out);
}

}  // namespace sg::sim::detail
