// The `fat-tree` kind's SimGrid zone: SimGrid's create_fatTree_zone. SimGrid builds only.
#include "sim/platform/zones_simgrid.hpp"

namespace sg::sim::detail {

// The zone builder the table names (sim/platform/kinds.cpp), declared with its type.
ZoneFn fat_tree_zone;

void fat_tree_zone(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& out) {
  const FatTreeParams& f = p.fat_tree;
  s4u::FatTreeParams params(static_cast<unsigned>(f.down.size()), {f.down.begin(), f.down.end()}, {f.up.begin(), f.up.end()},
                            {f.links.begin(), f.links.end()});
  s4u::create_fatTree_zone("fat-tree", nullptr, params, cluster_callbacks(p), f.bw, f.lat, s4u::Link::SharingPolicy::SPLITDUPLEX)->seal();
  hosts_by_name(p, e, out);
}

}  // namespace sg::sim::detail
