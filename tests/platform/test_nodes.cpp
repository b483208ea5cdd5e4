// The `nodes` platform kind (sim/platform/nodes.cpp): NVLink inside a node, NICs between nodes,
// host names.
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("nodes: NVLink inside a node, one NIC per GPU (or nics= per node) between nodes", "[platform]") {
  Platform p = parse_ok("nodes:count=16,gpus=8,nvlink=900GBps,nic=400Gbps", 128);
  CHECK(p.kind == PlatformKind::Nodes);
  CHECK(p.hosts == 128);
  CHECK(p.nodes.nics == 8);
  CHECK(p.speed == 1e15);
  CHECK(p.spec == "nodes:count=16,gpus=8,nics=8,nvlink=900GBps,nic=400Gbps,nvlink_lat=1us,nic_lat=2us,model=ideal");
  CHECK(p.host_name(13) == "node-1-gpu-5");  // node-major
  double lat = 0;
  CHECK(route_names(p, 8, 13, &lat) == std::vector<std::string>{"node-1-gpu-0_nvlink_UP", "node-1-gpu-5_nvlink_DOWN"});
  CHECK(lat == 1e-6);
  CHECK(p.route_bw(8, 13) == 900e9);
  CHECK(route_names(p, 3, 13, &lat) == std::vector<std::string>{"node-0-nic-3_UP", "node-1-nic-5_DOWN"});
  CHECK(lat == 2e-6);
  CHECK(p.route_bw(3, 13) == 50e9);

  Platform q = parse_ok("nodes:gpus=4,nics=2,nvlink_lat=500ns,nic_lat=5us", 10);  // count sized: 3 nodes
  CHECK(q.nodes.count == 3);
  CHECK(q.hosts == 12);
  CHECK(route_names(q, 1, 6) == std::vector<std::string>{"node-0-nic-0_UP", "node-1-nic-1_DOWN"});
  CHECK(route_names(q, 2, 4) == std::vector<std::string>{"node-0-nic-1_UP", "node-1-nic-0_DOWN"});
  CHECK(q.nodes.nvlink == 450e9);
  CHECK(q.nodes.nic == 50e9);
}
