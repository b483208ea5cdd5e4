// The `dragonfly` platform kind (sim/platform/dragonfly.cpp): SimGrid's parameters, sizes from the
// ranks.
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("dragonfly: SimGrid's parameters, sizes from the ranks", "[platform]") {
  Platform p = parse_ok("dragonfly:groups=3,chassis=2,routers=3,nodes=2,blue=2,green=3,bw=10GBps,lat=200ns", 36);
  CHECK(p.hosts == 36);
  CHECK(p.dragonfly.groups == 3);
  CHECK(p.dragonfly.blue == 2);
  CHECK(p.dragonfly.black == 1);
  CHECK(p.dragonfly.green == 3);
  CHECK(p.spec == "dragonfly:groups=3,chassis=2,routers=3,nodes=2,blue=2,green=3,bw=10GBps,lat=200ns,model=ideal");
  CHECK(p.route_bw(0, 35) == 10e9);  // the node links (x1) are the bottleneck
  double lat = 0;
  CHECK(route_names(p, 0, 1, &lat).size() == 2);  // same router
  CHECK(rel_eq(lat, 4e-7, 1e-15));
  Platform d = parse_ok("dragonfly", 64);  // nodes=2, chassis=1, groups = routers = 6
  CHECK(d.dragonfly.groups == 6);
  CHECK(d.dragonfly.routers == 6);
  CHECK(d.hosts == 72);
  CHECK(parse_ok("dragonfly:routers=8,nodes=4", 64).dragonfly.groups == 2);
  CHECK(parse_ok("dragonfly:groups=2,chassis=2,nodes=1", 64).dragonfly.routers == 16);
  CHECK(parse_ok("dragonfly:groups=2,chassis=2,routers=2", 64).dragonfly.nodes == 8);
}
