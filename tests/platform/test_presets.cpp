// The presets (sim/platform/presets.cpp): nodes platforms named after the machines people own,
// with their datasheets' numbers, what NCCL's model reads off them, `nodes=` and overrides.
#include "sim/platform/presets.hpp"
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("presets: DGX A100, H100, H200, B200 and GB200 NVL72 with their numbers", "[platform][presets]") {
  Platform h = parse_ok("dgx-h100:nodes=4", 32);
  CHECK(h.kind == PlatformKind::Nodes);
  CHECK(h.hosts == 32);
  CHECK(h.nodes.preset == "dgx-h100");
  CHECK(h.nodes.gpus == 8);
  CHECK(h.nodes.nvlink == 450e9);  // NVLink 4: 900 GB/s both ways
  CHECK(h.nodes.nic == 50e9);      // ConnectX-7, 400 Gb/s
  CHECK(h.speed == 989e12);        // dense BF16
  CHECK(h.spec == "dgx-h100:nodes=4,gpus=8,nics=8,nvlink=450GBps,nic=400Gbps,nvlink_lat=0.6us,nic_lat=2us,transport=ib,model=ideal");
  CHECK(h.nodes.hw.arch == 2);
  CHECK(h.nodes.hw.nvlink_per_gpu == Approx(370.8));
  CHECK(h.nodes.hw.name == "H100");
  CHECK(h.describe().find("H100s in 4 nodes of 8") != std::string::npos);
  CHECK(parse_ok("hgx-h100:nodes=1", 8).nodes.preset == "dgx-h100");  // another name for it

  Platform a = parse_ok("dgx-a100", 16);  // nodes sized from N
  CHECK(a.nodes.count == 2);
  CHECK(a.nodes.nic == 25e9);  // ConnectX-6 HDR, 200 Gb/s
  CHECK(a.nodes.nvlink == 300e9);
  CHECK(a.speed == 312e12);
  CHECK(a.nodes.hw.arch == 1);
  CHECK(a.nodes.hw.amd_cpu);  // 2 AMD EPYC 7742
  CHECK(a.nodes.hw.pcie_GBps == 24.0);

  CHECK(parse_ok("dgx-h200:nodes=2", 16).nodes.hw.name == "H200");
  Platform b = parse_ok("dgx-b200:nodes=1", 8);
  CHECK(b.nodes.hw.arch == 3);
  CHECK(b.nodes.nvlink == 900e9);
  Platform r = parse_ok("gb200-nvl72:nodes=2", 144);
  CHECK(r.nodes.gpus == 72);  // a rack is one NVLink domain: one node to NCCL
  CHECK(r.hosts == 144);
  CHECK(r.speed == 2500e12);
}

TEST_CASE("presets: a key of nodes overrides the datasheet, and NCCL's view follows it", "[platform][presets]") {
  Platform p = parse_ok("dgx-h100:nodes=2,nic=200Gbps,nics=4,transport=ethernet", 16);
  CHECK(p.nodes.nic == 25e9);
  CHECK(p.nodes.nics == 4);
  CHECK(p.nodes.transport == "roce");
  CHECK(p.nodes.hw.nic_GBps == Approx(25.0));
  CHECK(p.nodes.hw.nics_per_node == 4);
  CHECK(p.spec.find("transport=roce") != std::string::npos);
  CHECK(parse_ok("dgx-h100:nodes=1,speed=500Tf", 8).speed == 500e12);
  // A plain nodes: platform is an H100 node to NCCL's model, and says no transport unless given.
  Platform n = parse_ok("nodes:count=2,gpus=8", 16);
  CHECK(n.nodes.hw.arch == 2);
  CHECK(n.nodes.hw.name.empty());
  CHECK(n.spec.find("transport") == std::string::npos);
}

TEST_CASE("presets: mistakes are refused with the key and the presets named", "[platform][presets]") {
  CHECK(parse_err("dgx-h100:count=4", 32).find("the node count is nodes= here") != std::string::npos);
  CHECK(parse_err("nodes:nodes=4", 32).find("the node count is count= here") != std::string::npos);
  CHECK(parse_err("dgx-h100:transport=socket", 8).find("NCCL's socket transport is not modelled") != std::string::npos);
  CHECK(parse_err("dgx-h100:nodes=0", 8).find("nodes=0: must be at least 1") != std::string::npos);
  std::string unknown = parse_err("dgx-h300:nodes=1", 8);
  CHECK(unknown.find("unknown platform 'dgx-h300'") != std::string::npos);
  CHECK(unknown.find("dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72") != std::string::npos);
}
