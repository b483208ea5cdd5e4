// The `fat-tree` platform kind (sim/platform/fat_tree.cpp): SimGrid's parameters, the leaf-spine
// short form, oversubscription, and in SimGrid an all-to-all on an oversubscribed tree.
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("fat-tree: SimGrid's parameters, the leaf-spine short form, oversubscription", "[platform]") {
  Platform p = parse_ok("fat-tree:levels=2,down=4x3,up=1x2,links=1x1,bw=10GBps,lat=100ns", 10);
  CHECK(p.kind == PlatformKind::FatTree);
  CHECK(p.hosts == 12);
  CHECK(p.fat_tree.down == std::vector<uint32_t>{4, 3});
  CHECK(p.fat_tree.up == std::vector<uint32_t>{1, 2});
  CHECK(p.spec == "fat-tree:levels=2,down=4x3,up=1x2,links=1x1,bw=10GBps,lat=100ns,model=ideal");
  // 12 loopbacks; 12 host-leaf and 3 x 2 leaf-spine duplex links
  CHECK(p.links.size() == 12 + 2 * (12 + 6));
  double lat = 0;
  CHECK(route_names(p, 0, 1, &lat).size() == 2);  // same leaf: up, down
  CHECK(rel_eq(lat, 2e-7, 1e-15));
  CHECK(route_names(p, 0, 5, &lat).size() == 4);  // across a spine
  CHECK(rel_eq(lat, 4e-7, 1e-15));
  CHECK(p.route_bw(0, 5) == 10e9);

  Platform s = parse_ok("fat-tree:leaves=4,per_leaf=8,oversub=2", 32);
  CHECK(s.fat_tree.down == std::vector<uint32_t>{8, 4});
  CHECK(s.fat_tree.up == std::vector<uint32_t>{1, 4});
  CHECK(s.fat_tree.links == std::vector<uint32_t>{1, 1});
  CHECK(s.hosts == 32);
  CHECK(s.spec == "fat-tree:leaves=4,per_leaf=8,oversub=2,bw=100Gbps,lat=1us,model=ideal");

  Platform d = parse_ok("fat-tree", 40);  // 16 per leaf, as many leaves as the ranks need, non-blocking
  CHECK(d.fat_tree.down == std::vector<uint32_t>{16, 3});
  CHECK(d.fat_tree.up == std::vector<uint32_t>{1, 16});
  CHECK(d.hosts == 48);
  CHECK(d.spec == "fat-tree:leaves=3,per_leaf=16,bw=100Gbps,lat=1us,model=ideal");

  Platform t = parse_ok("fat-tree:down=2x2x2,up=1x2x2,links=1x2x1", 8);  // levels from down
  CHECK(t.fat_tree.down.size() == 3);
  CHECK(t.hosts == 8);
  CHECK(parse_ok("fattree:down=4x4", 16).fat_tree.up == std::vector<uint32_t>{1, 1});
}

#ifdef STEPGRAPH_HAVE_SIMGRID
TEST_CASE("simgrid: an all-to-all is slower on an oversubscribed fat tree", "[platform][simgrid]") {
  // 16 hosts, 4 per leaf; every host sends 1 MB to every other at once.
  auto alltoall = [](const char* spec) {
    double t = -1;
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      Reported rep;
      if (!parse_platform(spec, 16, p, rep.sm, rep.diags)) return "parse: " + rep.message();
      auto e = quiet_engine();
      std::vector<s4u::Host*> hosts;
      build_simgrid(p, *e, hosts);
      s4u::Actor::create("driver", hosts[0], [&]() {
        std::vector<s4u::CommPtr> comms;
        for (uint32_t a = 0; a < p.hosts; a++)
          for (uint32_t b = 0; b < p.hosts; b++)
            if (a != b) comms.push_back(s4u::Comm::sendto_async(hosts[a], hosts[b], 1000000));
        for (auto& c : comms) c->wait();
      });
      e->run();
      return std::to_string(s4u::Engine::get_clock());
    });
    INFO(spec << ": " << r);
    REQUIRE_NOTHROW(t = std::stod(r));
    return t;
  };
  double full = alltoall("fat-tree:leaves=4,per_leaf=4,bw=100Gbps,lat=1us,model=ideal");
  double over = alltoall("fat-tree:leaves=4,per_leaf=4,oversub=4,bw=100Gbps,lat=1us,model=ideal");
  // Non-blocking: each host link carries 15 MB each way: about 15 MB / 12.5 GB/s = 1.2 ms.
  double host_bound = 15e6 / 12.5e9;
  INFO("non-blocking " << full << " s, oversubscribed 4:1 " << over << " s, host-link bound " << host_bound << " s");
  CHECK(full >= host_bound);
  CHECK(full <= 1.1 * host_bound);
  // 4:1: each leaf's one uplink carries 4 x 12 MB each way: 3.2 x the host-link bound.
  CHECK(over >= 3 * host_bound);
}
#endif
