// The `nodes` kind's SimGrid zone: a StarZone over the NICs, with a bypass route over NVLink for
// every ordered GPU pair of a node. SimGrid builds only.
#include "sim/platform/zones_simgrid.hpp"

namespace sg::sim::detail {

// The zone builder the table names (sim/platform/kinds.cpp), declared with its type.
ZoneFn nodes_zone;

void nodes_zone(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& out) {
  const NodesParams& nd = p.nodes;
  s4u::NetZone* zone = s4u::create_star_zone("nodes");
  std::vector<s4u::Host*> hosts(p.hosts);
  std::vector<s4u::SplitDuplexLink*> nvlink(p.hosts);
  for (uint32_t n = 0; n < nd.count; n++) {
    for (uint32_t g = 0; g < nd.gpus; g++) {
      uint32_t h = n * nd.gpus + g;
      hosts[h] = zone->create_host(p.host_name(h), p.speed);
      nvlink[h] = make_duplex(zone, p.host_name(h) + "_nvlink", nd.nvlink, nd.nvlink_lat / 2);
      s4u::Link* lb = make_loopback(zone, p, h);
      zone->add_route(hosts[h]->get_netpoint(), hosts[h]->get_netpoint(), nullptr, nullptr, {s4u::LinkInRoute(lb)}, false);
    }
    std::vector<s4u::SplitDuplexLink*> nics(nd.nics);
    for (uint32_t k = 0; k < nd.nics; k++) {
      std::string name = "node-" + std::to_string(n);
      name += "-nic-";
      name += std::to_string(k);
      nics[k] = make_duplex(zone, name, nd.nic, nd.nic_lat / 2);
    }
    // Between nodes: the GPU's NIC up, the network (non-blocking), the peer's NIC down.
    for (uint32_t g = 0; g < nd.gpus; g++)
      zone->add_route(hosts[n * nd.gpus + g]->get_netpoint(), nullptr, nullptr, nullptr,
                      {s4u::LinkInRoute(nics[g / (nd.gpus / nd.nics)], s4u::LinkInRoute::Direction::UP)}, true);
    // Inside a node: NVLink up to the NVSwitch, NVLink down to the peer (bypass routes).
    for (uint32_t a = 0; a < nd.gpus; a++)
      for (uint32_t b = 0; b < nd.gpus; b++) {
        if (a == b) continue;
        uint32_t ha = n * nd.gpus + a, hb = n * nd.gpus + b;
        zone->add_bypass_route(hosts[ha]->get_netpoint(), hosts[hb]->get_netpoint(), nullptr, nullptr,
                               {s4u::LinkInRoute(nvlink[ha], s4u::LinkInRoute::Direction::UP),
                                s4u::LinkInRoute(nvlink[hb], s4u::LinkInRoute::Direction::DOWN)});
      }
  }
  zone->seal();
  hosts_by_name(p, e, out);
}

}  // namespace sg::sim::detail
