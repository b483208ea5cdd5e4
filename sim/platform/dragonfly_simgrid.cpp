// The `dragonfly` kind's SimGrid zone: SimGrid's create_dragonfly_zone. SimGrid builds only.
#include "sim/platform/zones_simgrid.hpp"

namespace sg::sim::detail {

// The zone builder the table names (sim/platform/kinds.cpp), declared with its type.
ZoneFn dragonfly_zone;

void dragonfly_zone(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& out) {
  const DragonflyParams& d = p.dragonfly;
  s4u::DragonflyParams params({d.groups, d.blue}, {d.chassis, d.black}, {d.routers, d.green}, d.nodes);
  s4u::create_dragonfly_zone("dragonfly", nullptr, params, cluster_callbacks(p), d.bw, d.lat, s4u::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
  hosts_by_name(p, e, out);
}

}  // namespace sg::sim::detail
