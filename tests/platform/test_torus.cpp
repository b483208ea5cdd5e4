// The `torus` platform kind (sim/platform/torus.cpp): dimensions given or sized from the ranks,
// minimal dimension-order routes.
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("torus: dimensions given or sized from the ranks; minimal dimension-order routes", "[platform]") {
  Platform p = parse_ok("torus:4x4x4,bw=100Gbps,lat=1us", 64);
  CHECK(p.torus.dims == std::vector<uint32_t>{4, 4, 4});
  CHECK(p.hosts == 64);
  CHECK(p.spec == "torus:4x4x4,bw=100Gbps,lat=1us,model=ideal");
  CHECK(p.links.size() == 64 * (1 + 2 * 3));
  CHECK(parse_ok("torus:dims=3x5", 15).torus.dims == std::vector<uint32_t>{3, 5});
  CHECK(parse_ok("torus", 64).torus.dims == std::vector<uint32_t>{4, 4, 4});
  CHECK(parse_ok("torus", 7).torus.dims == std::vector<uint32_t>{2, 2, 2});
  CHECK(parse_ok("torus", 12).torus.dims == std::vector<uint32_t>{3, 2, 2});
  CHECK(parse_ok("torus", 2).torus.dims == std::vector<uint32_t>{2});
  CHECK(parse_ok("torus", 1).torus.dims == std::vector<uint32_t>{1});
  for (std::vector<uint32_t> dims : {std::vector<uint32_t>{4, 4, 4}, {5, 3}, {2, 3, 2}, {6}}) {
    std::string spec = "torus:";
    for (size_t i = 0; i < dims.size(); i++) {
      if (i) spec += 'x';
      spec += std::to_string(dims[i]);
    }
    Platform t = parse_ok(spec, 1);
    for (uint32_t a = 0; a < t.hosts; a++)
      for (uint32_t b = 0; b < t.hosts; b++) {
        uint32_t hops = 0, pa = a, pb = b;
        for (uint32_t d : dims) {
          uint32_t x = pa % d, y = pb % d, delta = x > y ? x - y : y - x;
          hops += std::min(delta, d - delta);
          pa /= d, pb /= d;
        }
        double lat = 0;
        INFO(spec << " " << a << " -> " << b);
        CHECK(route_names(t, a, b, &lat).size() == (a == b ? 1 : hops));
        CHECK(rel_eq(lat, a == b ? 0.0 : hops * 1e-6, 1e-12));
      }
  }
}
