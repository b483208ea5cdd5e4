// The `torus` kind's SimGrid zone: SimGrid's create_torus_zone. SimGrid builds only.
#include "sim/platform/zones_simgrid.hpp"

namespace sg::sim::detail {

// The zone builder the table names (sim/platform/kinds.cpp), declared with its type.
ZoneFn torus_zone;

void torus_zone(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& out) {
  std::vector<unsigned long> dims(p.torus.dims.begin(), p.torus.dims.end());
  s4u::create_torus_zone("torus", nullptr, dims, cluster_callbacks(p), p.torus.bw, p.torus.lat, s4u::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
  hosts_by_name(p, e, out);
}

}  // namespace sg::sim::detail
