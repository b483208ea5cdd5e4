// The helpers the SimGrid zone builders share (sim/platform/zones_simgrid.hpp).
#include "sim/platform/zones_simgrid.hpp"

#include <stdexcept>

namespace sg::sim::detail {

using NetPoint = simgrid::kernel::routing::NetPoint;

s4u::Link* make_loopback(s4u::NetZone* zone, const Platform& p, uint32_t h) {
  return zone->create_link(p.host_name(h) + "_loopback", p.loopback_bw)
      ->set_sharing_policy(s4u::Link::SharingPolicy::FATPIPE)
      ->set_latency(p.loopback_lat)
      ->seal();
}

s4u::SplitDuplexLink* make_duplex(s4u::NetZone* zone, const std::string& name, double bw, double lat) {
  s4u::SplitDuplexLink* l = zone->create_split_duplex_link(name, bw);
  l->set_latency(lat);
  l->seal();
  return l;
}

s4u::ClusterCallbacks cluster_callbacks(const Platform& p) {
  auto netpoint = [&p](s4u::NetZone* zone, const std::vector<unsigned long>& /*coord*/,
                       unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
    s4u::Host* h = zone->create_host(p.host_name(static_cast<uint32_t>(id)), p.speed);
    return {h->get_netpoint(), nullptr};
  };
  auto loopback = [&p](s4u::NetZone* zone, const std::vector<unsigned long>& /*coord*/, unsigned long id) {
    return make_loopback(zone, p, static_cast<uint32_t>(id));
  };
  return s4u::ClusterCallbacks(netpoint, loopback, {});
}

void hosts_by_name(const Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts) {
  hosts.reserve(p.hosts);
  for (uint32_t h = 0; h < p.hosts; h++) {
    s4u::Host* host = e.host_by_name_or_null(p.host_name(h));
    if (!host) throw std::runtime_error("platform " + p.spec + ": SimGrid has no host " + p.host_name(h));
    hosts.push_back(host);
  }
}

}  // namespace sg::sim::detail
