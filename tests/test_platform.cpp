// The platform layer: spec parsing (every kind, every unit, the errors), the generated routes,
// and, with SimGrid, that those routes are the ones SimGrid's zones use (every host pair of small
// instances, held against Host::route_to) and that in the ideal model a lone message takes
// exactly latency + bytes / bandwidth. A process can hold one SimGrid engine only, so each
// SimGrid check runs in a child process.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/platform.hpp"
#include <unistd.h>

#ifdef STEPGRAPH_HAVE_SIMGRID
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <sys/wait.h>

#include "sim/simgrid_platform.hpp"
#endif

using namespace sg::sim;

namespace {

Platform parse_ok(const std::string& spec, uint32_t n) {
  Platform p;
  std::string err;
  INFO(spec << " -n " << n);
  bool ok = parse_platform(spec, n, p, err);
  INFO(err);
  REQUIRE(ok);
  return p;
}

std::string parse_err(const std::string& spec, uint32_t n) {
  Platform p;
  std::string err;
  INFO(spec << " -n " << n);
  REQUIRE_FALSE(parse_platform(spec, n, p, err));
  return err;
}

bool rel_eq(double a, double b, double tol) { return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b)); }

std::vector<std::string> route_names(const Platform& p, uint32_t a, uint32_t b, double* lat = nullptr) {
  std::vector<uint32_t> ids;
  double l = 0;
  p.route(a, b, ids, l);
  if (lat) *lat = l;
  std::vector<std::string> names;
  for (uint32_t id : ids) names.push_back(p.links[id].name);
  return names;
}

}  // namespace

TEST_CASE("units: bandwidth (b = bit, B = byte), time, flops", "[platform]") {
  std::string why;
  double v = 0;
  struct Case {
    const char* text;
    double want;
  };
  for (Case c : {Case{"100Gbps", 12.5e9}, Case{"1GBps", 1e9}, Case{"8bps", 1}, Case{"1Bps", 1}, Case{"1Mbps", 125e3},
                 Case{"1MBps", 1e6}, Case{"1Kbps", 125}, Case{"1kBps", 1e3}, Case{"1KBps", 1e3},
                 Case{"400Gbps", 50e9}, Case{"900GBps", 900e9}, Case{"1Tbps", 125e9}, Case{"2TBps", 2e12},
                 Case{"2KiBps", 2048}, Case{"1GiBps", 1073741824.0}, Case{"1.5e1Gbps", 1.875e9},
                 Case{"0.5GBps", 5e8}, Case{" 100Gbps ", 12.5e9}}) {
    INFO(c.text);
    REQUIRE(parse_bandwidth(c.text, v, why));
    CHECK(rel_eq(v, c.want, 1e-15));
  }
  for (const char* bad : {"100", "100Gb", "100gbps", "fast", "-1Gbps", "GBps", "", "1Gbpss", "1 Gbps x"}) {
    INFO(bad);
    CHECK_FALSE(parse_bandwidth(bad, v, why));
    CHECK_FALSE(why.empty());
  }
  CHECK((parse_bandwidth("100", v, why), why.find("no unit") != std::string::npos));
  CHECK((parse_bandwidth("100Gb", v, why), why.find("unknown unit 'Gb'") != std::string::npos));

  for (Case c : {Case{"1us", 1e-6}, Case{"500ns", 5e-7}, Case{"2ms", 2e-3}, Case{"1s", 1}, Case{"1.5us", 1.5e-6},
                 Case{"0s", 0}, Case{"3e-6s", 3e-6}}) {
    INFO(c.text);
    REQUIRE(parse_time(c.text, v, why));
    CHECK(rel_eq(v, c.want, 1e-15));
  }
  for (const char* bad : {"1", "1min", "1sec", "us", "-1us", "1 us s"}) {
    INFO(bad);
    CHECK_FALSE(parse_time(bad, v, why));
  }

  for (Case c : {Case{"100Tf", 1e14}, Case{"1Gf", 1e9}, Case{"2.5Mf", 2.5e6}, Case{"1f", 1}, Case{"1Kf", 1e3},
                 Case{"1kf", 1e3}, Case{"1Pf", 1e15}, Case{"3Gflops", 3e9}}) {
    INFO(c.text);
    REQUIRE(parse_flops(c.text, v, why));
    CHECK(rel_eq(v, c.want, 1e-15));
  }
  for (const char* bad : {"1", "1TF", "1Tb", "f", "1Kif"}) {
    INFO(bad);
    CHECK_FALSE(parse_flops(bad, v, why));
  }
}

TEST_CASE("star: sized from the rank count, lat end to end, model", "[platform]") {
  Platform p = parse_ok("star:bw=100Gbps,lat=1us", 8);
  CHECK(p.kind == PlatformKind::Star);
  CHECK(p.hosts == 8);
  CHECK(p.star.bw == 12.5e9);
  CHECK(p.star.lat == 1e-6);
  CHECK(p.speed == 1e12);
  CHECK(p.model == NetModel::Lv08);
  CHECK_FALSE(p.ideal);
  CHECK(p.lat_factor == 13.01);
  CHECK(p.bw_factor == 0.97);
  CHECK(p.crosstraffic);
  CHECK(p.spec == "star:hosts=8,bw=100Gbps,lat=1us,model=lv08");
  CHECK(p.links.size() == 3 * 8);
  double lat = 0;
  CHECK(route_names(p, 2, 5, &lat) == std::vector<std::string>{"host-2_link_UP", "host-5_link_DOWN"});
  CHECK(lat == 1e-6);  // lat/2 + lat/2, exactly
  CHECK(p.route_bw(2, 5) == 12.5e9);
  CHECK(route_names(p, 3, 3) == std::vector<std::string>{"host-3_loopback"});
  CHECK(p.route_bw(3, 3) == 12.5e9);  // the loopback defaults to the host link's bandwidth, latency 0
  CHECK(p.loopback_lat == 0);
  CHECK_FALSE(p.links[2].shared);
  CHECK(p.host_name(7) == "host-7");

  Platform q = parse_ok(" star : hosts = 16 , bw=25GBps, lat=500ns, speed=100Tf, loopback=1TBps, loopback_lat=10ns, model=ideal", 4);
  CHECK(q.hosts == 16);
  CHECK(q.star.bw == 25e9);
  CHECK(q.star.lat == 5e-7);
  CHECK(q.speed == 1e14);
  CHECK(q.loopback_bw == 1e12);
  CHECK(q.loopback_lat == 1e-8);
  CHECK(q.ideal);
  CHECK(q.tcp_gamma == 0);
  CHECK_FALSE(q.crosstraffic);
  CHECK(q.spec == "star:hosts=16,bw=25GBps,lat=500ns,speed=100Tf,loopback=1TBps,loopback_lat=10ns,model=ideal");
  CHECK(q.lone_message_time(0, 1, 1e6) == 5e-7 + 1e6 / 25e9);

  Platform d = parse_ok("star", 3);  // every key has a default
  CHECK(d.spec == "star:hosts=3,bw=100Gbps,lat=1us,model=lv08");
  CHECK(rel_eq(d.lone_message_time(0, 1, 1e6), 13.01e-6 + 1e6 / (0.97 * 12.5e9), 1e-15));
  CHECK(parse_ok("star:model=cm02", 2).model == NetModel::Cm02);
  CHECK(parse_ok("star:model=LV08", 2).model == NetModel::Lv08);
}

TEST_CASE("the default platform", "[platform]") {
  Platform p = parse_ok(default_platform_spec(), 64);
  CHECK(p.kind == PlatformKind::Star);
  CHECK(p.ideal);
  CHECK(p.hosts == 64);
  CHECK(p.spec == "star:hosts=64,bw=100Gbps,lat=1us,model=ideal");
  CHECK(p.lone_message_time(0, 63, 64.0 * 1024 * 1024) == 1e-6 + 64.0 * 1024 * 1024 / 12.5e9);
  CHECK(p.describe() == "star, 64 hosts on a non-blocking switch, 100Gbps per host, 1us end to end, 192 links, model ideal");
}

TEST_CASE("fat-tree: SimGrid's parameters, the leaf-spine short form, oversubscription", "[platform]") {
  Platform p = parse_ok("fat-tree:levels=2,down=4x3,up=1x2,links=1x1,bw=10GBps,lat=100ns", 10);
  CHECK(p.kind == PlatformKind::FatTree);
  CHECK(p.hosts == 12);
  CHECK(p.fat_tree.down == std::vector<uint32_t>{4, 3});
  CHECK(p.fat_tree.up == std::vector<uint32_t>{1, 2});
  CHECK(p.spec == "fat-tree:levels=2,down=4x3,up=1x2,links=1x1,bw=10GBps,lat=100ns,model=lv08");
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
  CHECK(s.spec == "fat-tree:leaves=4,per_leaf=8,oversub=2,bw=100Gbps,lat=1us,model=lv08");

  Platform d = parse_ok("fat-tree", 40);  // 16 per leaf, as many leaves as the ranks need, non-blocking
  CHECK(d.fat_tree.down == std::vector<uint32_t>{16, 3});
  CHECK(d.fat_tree.up == std::vector<uint32_t>{1, 16});
  CHECK(d.hosts == 48);
  CHECK(d.spec == "fat-tree:leaves=3,per_leaf=16,bw=100Gbps,lat=1us,model=lv08");

  Platform t = parse_ok("fat-tree:down=2x2x2,up=1x2x2,links=1x2x1", 8);  // levels from down
  CHECK(t.fat_tree.down.size() == 3);
  CHECK(t.hosts == 8);
  CHECK(parse_ok("fattree:down=4x4", 16).fat_tree.up == std::vector<uint32_t>{1, 1});
}

TEST_CASE("torus: dimensions given or sized from the ranks; minimal dimension-order routes", "[platform]") {
  Platform p = parse_ok("torus:4x4x4,bw=100Gbps,lat=1us", 64);
  CHECK(p.torus.dims == std::vector<uint32_t>{4, 4, 4});
  CHECK(p.hosts == 64);
  CHECK(p.spec == "torus:4x4x4,bw=100Gbps,lat=1us,model=lv08");
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

TEST_CASE("dragonfly: SimGrid's parameters, sizes from the ranks", "[platform]") {
  Platform p = parse_ok("dragonfly:groups=3,chassis=2,routers=3,nodes=2,blue=2,green=3,bw=10GBps,lat=200ns", 36);
  CHECK(p.hosts == 36);
  CHECK(p.dragonfly.groups == 3);
  CHECK(p.dragonfly.blue == 2);
  CHECK(p.dragonfly.black == 1);
  CHECK(p.dragonfly.green == 3);
  CHECK(p.spec == "dragonfly:groups=3,chassis=2,routers=3,nodes=2,blue=2,green=3,bw=10GBps,lat=200ns,model=lv08");
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

TEST_CASE("nodes: NVLink inside a node, one NIC per GPU (or nics= per node) between nodes", "[platform]") {
  Platform p = parse_ok("nodes:count=16,gpus=8,nvlink=900GBps,nic=400Gbps", 128);
  CHECK(p.kind == PlatformKind::Nodes);
  CHECK(p.hosts == 128);
  CHECK(p.nodes.nics == 8);
  CHECK(p.speed == 1e15);
  CHECK(p.spec == "nodes:count=16,gpus=8,nics=8,nvlink=900GBps,nic=400Gbps,nvlink_lat=1us,nic_lat=2us,model=lv08");
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

TEST_CASE("xml: a path, with model=; routes come from SimGrid", "[platform]") {
  auto dir = std::filesystem::temp_directory_path() / ("stepgraph_platform_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "two.xml").string();
  {
    std::ofstream f(path);
    f << R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <host id="b" speed="2Gf"/>
    <host id="a" speed="1Gf"/>
    <host id="c" speed="1Gf"/>
    <link id="l1" bandwidth="1GBps" latency="10us"/>
    <link id="l2" bandwidth="2GBps" latency="5us"/>
    <route src="b" dst="a"><link_ctn id="l1"/></route>
    <route src="a" dst="c"><link_ctn id="l2"/></route>
    <route src="b" dst="c"><link_ctn id="l1"/><link_ctn id="l2"/></route>
  </zone>
</platform>
)";
  }
  Platform p = parse_ok(path, 3);
  CHECK(p.kind == PlatformKind::Xml);
  CHECK(p.xml == path);
  CHECK(p.spec == path + ",model=lv08");
  CHECK_FALSE(p.has_routes());
  std::vector<uint32_t> ids;
  double lat = 0;
  CHECK_THROWS_AS(p.route(0, 1, ids, lat), std::logic_error);
  Platform q = parse_ok(path + ",model=ideal", 3);
  CHECK(q.ideal);
  CHECK(parse_err(path + ",bw=1Gbps", 3).find("takes only model=") != std::string::npos);
  CHECK(parse_err((dir / "missing.xml").string(), 3).find("cannot be read") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("errors name the bad key and value", "[platform]") {
  struct Case {
    const char* spec;
    uint32_t n;
    const char* want;
  };
  for (Case c : {
           Case{"", 4, "empty platform spec"},
           Case{"ring:bw=1Gbps", 4, "unknown platform 'ring'"},
           Case{"star:bww=1Gbps", 4, "star: unknown key 'bww' (keys: hosts, bw, lat, speed, loopback, loopback_lat, model)"},
           Case{"star:bw=100", 4, "star: bw=100: '100' has no unit"},
           Case{"star:bw=100Gb", 4, "star: bw=100Gb: unknown unit 'Gb'"},
           Case{"star:bw=0Gbps", 4, "star: bw=0Gbps: a bandwidth must be positive"},
           Case{"star:lat=1", 4, "star: lat=1: '1' has no unit (time units: ns us ms s)"},
           Case{"star:lat=1min", 4, "star: lat=1min: unknown unit 'min'"},
           Case{"star:speed=1TF", 4, "star: speed=1TF: unknown unit 'TF'"},
           Case{"star:bw=", 4, "star: bw= has no value"},
           Case{"star:bw=1Gbps,bw=2Gbps", 4, "star: bw= is given twice"},
           Case{"star:fast", 4, "star: 'fast' is not key=value"},
           Case{"star:hosts=4", 8, "star: 4 hosts, but 8 ranks need 8"},
           Case{"star:hosts=0", 1, "star: hosts=0: must be at least 1"},
           Case{"star:hosts=two", 1, "star: hosts=two: 'two' is not a whole number"},
           Case{"star:model=fast", 1, "star: model=fast: unknown model (ideal, lv08 or cm02)"},
           Case{"torus:4x4", 32, "torus: 16 hosts, but 32 ranks need 32"},
           Case{"torus:4x0", 1, "torus: dimensions '4x0': every entry must be at least 1"},
           Case{"torus:4xx4", 1, "torus: dimensions '4xx4'"},
           Case{"torus:4x4,2x2", 1, "torus: the dimensions are given twice"},
           Case{"fat-tree:levels=2,down=4", 1, "fat-tree: levels=2: down= has 1 entries"},
           Case{"fat-tree:down=4x4,up=1", 1, "fat-tree: up=1: needs 2 entries, one per level"},
           Case{"fat-tree:up=1x2", 1, "fat-tree: down= is required"},
           Case{"fat-tree:down=4x4,leaves=2", 1, "fat-tree: give either levels/down/up/links"},
           Case{"fat-tree:per_leaf=8,oversub=3", 8, "fat-tree: oversub=3: per_leaf / oversub = 8 / 3 must be a whole number"},
           Case{"fat-tree:per_leaf=8,oversub=0", 8, "fat-tree: oversub=0: a positive number"},
           Case{"dragonfly:groups=5,routers=4", 8, "dragonfly: groups=5 exceeds routers=4"},
           Case{"dragonfly:groups=2,chassis=1,routers=2,nodes=1", 8, "dragonfly: 4 hosts, but 8 ranks need 8"},
           Case{"nodes:gpus=8,nics=3", 8, "nodes: nics=3: must divide gpus=8"},
           Case{"nodes:count=2,gpus=8", 32, "nodes: 16 hosts, but 32 ranks need 32"},
           Case{"nodes:nvlink=fast", 8, "nodes: nvlink=fast: 'fast' is not a number"},
           Case{"dragonfly", 1000000, "dragonfly: these sizes make"},
       }) {
    std::string err = parse_err(c.spec, c.n);
    INFO(c.spec << " -> " << err);
    CHECK(err.find(c.want) != std::string::npos);
  }
}

TEST_CASE("the normalised spec parses back to the same platform, whatever the rank count", "[platform]") {
  for (const char* spec :
       {"star", "star:bw=25GBps,lat=2us,speed=10Tf,model=ideal", "fat-tree:leaves=4,per_leaf=4,oversub=2",
        "fat-tree:down=4x3,up=1x2,links=1x2", "torus:3x4x2,lat=100ns", "torus", "dragonfly",
        "dragonfly:groups=3,chassis=2,routers=3,nodes=2,blue=2,black=3,green=4,loopback=1TBps",
        "nodes:gpus=4,nics=1,nic=200Gbps,model=cm02", default_platform_spec()}) {
    Platform p = parse_ok(spec, 12);
    Platform q = parse_ok(p.spec, 1);
    INFO(spec << " -> " << p.spec);
    CHECK(q.spec == p.spec);
    CHECK(q.hosts == p.hosts);
    REQUIRE(q.links.size() == p.links.size());
    for (size_t i = 0; i < p.links.size(); i++) {
      CHECK(q.links[i].name == p.links[i].name);
      CHECK(q.links[i].bw == p.links[i].bw);
      CHECK(q.links[i].lat == p.links[i].lat);
    }
    CHECK(q.model == p.model);
    CHECK(q.speed == p.speed);
  }
}

TEST_CASE("every route of every generated kind is well formed", "[platform]") {
  for (const char* spec :
       {"star:hosts=5", "fat-tree:down=4x3,up=1x2", "fat-tree:down=2x2x2,up=1x2x2,links=1x2x1",
        "fat-tree:down=3x2x2,up=2x2x3,links=2x1x1", "fat-tree:leaves=4,per_leaf=4,oversub=4", "torus:3x4x2",
        "dragonfly:groups=3,chassis=2,routers=3,nodes=2", "dragonfly:groups=4,chassis=3,routers=4,nodes=1",
        "nodes:count=3,gpus=4,nics=2"}) {
    Platform p = parse_ok(spec, 1);
    INFO(p.spec);
    std::vector<uint32_t> ids;
    std::set<uint32_t> used;
    for (uint32_t a = 0; a < p.hosts; a++)
      for (uint32_t b = 0; b < p.hosts; b++) {
        double lat = -1;
        p.route(a, b, ids, lat);
        REQUIRE(!ids.empty());
        std::set<uint32_t> distinct(ids.begin(), ids.end());
        CHECK(distinct.size() == ids.size());  // no link twice
        double sum = 0;
        for (uint32_t id : ids) {
          REQUIRE(id < p.links.size());
          sum += p.links[id].lat;
          used.insert(id);
        }
        CHECK(lat == sum);
        CHECK(p.route_bw(a, b) > 0);
      }
    double unused = 0;
    CHECK_THROWS_AS(p.route(p.hosts, 0, ids, unused), std::out_of_range);
    // Every link is on some route (in a torus, a dimension of 2 has a spare link per pair;
    // SimGrid's fat trees and dragonflies have links their routing never takes).
    if (p.kind == PlatformKind::Star || p.kind == PlatformKind::Nodes) CHECK(used.size() == p.links.size());
  }
}

#ifdef STEPGRAPH_HAVE_SIMGRID
namespace {

namespace s4u = simgrid::s4u;

// Runs `f` in a child process (a process holds one SimGrid engine) and returns what it returned,
// or why it died. "" is success.
std::string in_child(const std::function<std::string()>& f) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = f();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t w = write(fds[1], out.data() + off, out.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t r = 0;
  while ((r = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(r));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = "child died (status " + std::to_string(status) + ")";
    if (!out.empty()) why += ": " + out;
    return why;
  }
  return out;
}

std::unique_ptr<s4u::Engine> quiet_engine() {
  static char a0[] = "test_platform", a1[] = "--log=root.thres:critical";
  static char* argv[] = {a0, a1, nullptr};
  int argc = 2;
  return std::make_unique<s4u::Engine>(&argc, argv);
}

// Each host pair's route against Host::route_to: link names, latency, bottleneck bandwidth.
std::string compare_routes(const Platform& p, const std::vector<s4u::Host*>& hosts) {
  std::ostringstream out;
  int reported = 0;
  std::vector<uint32_t> ids;
  std::vector<s4u::Link*> sg_links;
  for (uint32_t a = 0; a < p.hosts; a++)
    for (uint32_t b = 0; b < p.hosts; b++) {
      double lat = 0, sg_lat = 0;
      p.route(a, b, ids, lat);
      sg_links.clear();
      hosts[a]->route_to(hosts[b], sg_links, &sg_lat);
      std::string mine, theirs;
      double sg_bw = std::numeric_limits<double>::infinity();
      for (uint32_t id : ids) mine += p.links[id].name + " ";
      for (s4u::Link* l : sg_links) {
        theirs += l->get_name() + " ";
        sg_bw = std::min(sg_bw, l->get_bandwidth());
      }
      if ((mine != theirs || lat != sg_lat || p.route_bw(a, b) != sg_bw) && reported++ < 5)
        out << p.spec << ": " << a << " -> " << b << ": ours [" << mine << "] " << lat << " s " << p.route_bw(a, b)
            << " B/s; SimGrid's [" << theirs << "] " << sg_lat << " s " << sg_bw << " B/s\n";
    }
  return out.str();
}

// One message at a time between every host pair (itself included), `bytes` each, in SimGrid;
// each must take what Platform::lone_message_time says (relative `tol`).
std::string lone_messages(const Platform& p, const std::vector<s4u::Host*>& hosts, const std::vector<double>& sizes,
                          double tol, std::string* worst = nullptr) {
  std::ostringstream out;
  int reported = 0;
  double max_err = 0;
  s4u::Actor::create("driver", hosts[0], [&]() {
    for (double bytes : sizes)
      for (uint32_t a = 0; a < p.hosts; a++)
        for (uint32_t b = 0; b < p.hosts; b++) {
          double t0 = s4u::Engine::get_clock();
          s4u::Comm::sendto_async(hosts[a], hosts[b], static_cast<uint64_t>(bytes))->wait();
          double took = s4u::Engine::get_clock() - t0;
          double want = p.lone_message_time(a, b, bytes);
          double err = std::fabs(took - want) / want;
          max_err = std::max(max_err, err);
          // took is a difference of two clock readings: allow their rounding (a few ulps of
          // the clock), which matters only for the picosecond loopback messages.
          double clock_ulps = 4 * std::numeric_limits<double>::epsilon() * s4u::Engine::get_clock();
          if (std::fabs(took - want) > tol * want + clock_ulps && reported++ < 5)
            out << p.spec << ": " << bytes << " B " << a << " -> " << b << " took " << took << " s, expected " << want
                << " s (relative error " << err << ")\n";
        }
  });
  s4u::Engine::get_instance()->run();
  if (worst) *worst = std::to_string(max_err);
  return out.str();
}

const char* kGenerated[] = {
    "star:hosts=5,bw=100Gbps,lat=1us,model=ideal",
    "star:hosts=3,bw=10GBps,lat=3us,loopback=50GBps,loopback_lat=100ns,model=ideal",
    "star:hosts=2,lat=1ms,model=ideal",  // TCP-gamma would bound the rate to 4 MiB / 2 ms
    "fat-tree:levels=2,down=4x3,up=1x2,links=1x1,bw=10GBps,lat=100ns,model=ideal",
    "fat-tree:down=2x2x2,up=1x2x2,links=1x2x1,model=ideal",
    "fat-tree:down=3x2x2,up=2x2x3,links=2x1x1,bw=40Gbps,model=ideal",
    "fat-tree:leaves=4,per_leaf=4,oversub=4,model=ideal",
    "torus:3x4x2,bw=100Gbps,lat=1us,model=ideal",
    "torus:4x4,lat=250ns,model=ideal",
    "torus:5,model=ideal",
    "dragonfly:groups=3,chassis=2,routers=3,nodes=2,blue=2,green=3,bw=10GBps,lat=200ns,model=ideal",
    "dragonfly:groups=4,chassis=3,routers=4,nodes=1,black=2,model=ideal",
    "dragonfly:groups=2,chassis=1,routers=2,nodes=2,model=ideal",
    "nodes:count=3,gpus=4,nics=2,model=ideal",
    "nodes:count=2,gpus=2,nvlink=900GBps,nic=400Gbps,nvlink_lat=700ns,nic_lat=3us,model=ideal",
};

}  // namespace

TEST_CASE("simgrid: every route is SimGrid's, and a lone message takes latency + bytes / bandwidth", "[platform][simgrid]") {
  for (const char* spec : kGenerated) {
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      std::string err;
      if (!parse_platform(spec, 1, p, err)) return "parse: " + err;
      auto e = quiet_engine();
      std::vector<s4u::Host*> hosts;
      std::vector<s4u::Link*> links;
      build_simgrid(p, *e, hosts, links);
      if (hosts.size() != p.hosts) return "hosts: " + std::to_string(hosts.size());
      if (links.size() != p.links.size()) return "links: " + std::to_string(links.size());
      std::string out = compare_routes(p, hosts);
      out += lone_messages(p, hosts, {1.0, 1e6}, 1e-9);
      return out;
    });
    INFO(spec);
    CHECK(r == "");
  }
}

TEST_CASE("simgrid: the non-ideal models' lone message is what lone_message_time says", "[platform][simgrid]") {
  for (const char* spec : {"star:hosts=3,model=lv08", "star:hosts=3,lat=1ms,model=lv08",
                           "torus:2x3,lat=2us,bw=10GBps,model=cm02", "torus:3,lat=5ms,model=cm02",
                           "nodes:count=2,gpus=2,model=lv08"}) {
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      std::string err;
      if (!parse_platform(spec, 1, p, err)) return "parse: " + err;
      auto e = quiet_engine();
      std::vector<s4u::Host*> hosts;
      build_simgrid(p, *e, hosts);
      return compare_routes(p, hosts) + lone_messages(p, hosts, {1.0, 1e6, 1e8}, 1e-9);
    });
    INFO(spec);
    CHECK(r == "");
  }
}

TEST_CASE("simgrid: cross traffic is on in cm02 and off in the ideal model", "[platform][simgrid]") {
  // Two hosts send 1 MB to each other at once. With cross traffic each flow also loads the other
  // flow's links with 5% of its rate: each up link carries 1.05 flows.
  auto exchange = [](const char* spec) {
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      std::string err;
      if (!parse_platform(spec, 2, p, err)) return "parse: " + err;
      auto e = quiet_engine();
      std::vector<s4u::Host*> hosts;
      build_simgrid(p, *e, hosts);
      s4u::Actor::create("driver", hosts[0], [&]() {
        auto c1 = s4u::Comm::sendto_async(hosts[0], hosts[1], 1000000);
        auto c2 = s4u::Comm::sendto_async(hosts[1], hosts[0], 1000000);
        c1->wait();
        c2->wait();
      });
      e->run();
      return std::to_string(s4u::Engine::get_clock() * 1e9);  // ns
    });
    INFO(spec << ": " << r);
    double t = -1;
    REQUIRE_NOTHROW(t = std::stod(r) * 1e-9);
    return t;
  };
  CHECK(rel_eq(exchange("star:hosts=2,model=ideal"), 1e-6 + 1e6 / 12.5e9, 1e-6));
  CHECK(rel_eq(exchange("star:hosts=2,model=cm02"), 1e-6 + 1.05e6 / 12.5e9, 1e-6));
}

TEST_CASE("simgrid: an all-to-all is slower on an oversubscribed fat tree", "[platform][simgrid]") {
  // 16 hosts, 4 per leaf; every host sends 1 MB to every other at once.
  auto alltoall = [](const char* spec) {
    double t = -1;
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      std::string err;
      if (!parse_platform(spec, 16, p, err)) return "parse: " + err;
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

TEST_CASE("simgrid: xml platform, hosts in file order, routes from SimGrid", "[platform][simgrid]") {
  auto dir = std::filesystem::temp_directory_path() / ("stepgraph_platform_xml_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "three.xml").string();
  {
    std::ofstream f(path);
    f << R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <host id="b" speed="2Gf"/>
    <host id="a" speed="1Gf"/>
    <host id="c" speed="1Gf"/>
    <link id="l1" bandwidth="1GBps" latency="10us"/>
    <link id="l2" bandwidth="2GBps" latency="5us"/>
    <link id="lo" bandwidth="10GBps" latency="0us" sharing_policy="FATPIPE"/>
    <route src="b" dst="a"><link_ctn id="l1"/></route>
    <route src="a" dst="c"><link_ctn id="l2"/></route>
    <route src="b" dst="c"><link_ctn id="l1"/><link_ctn id="l2"/></route>
    <route src="a" dst="a"><link_ctn id="lo"/></route>
    <route src="b" dst="b"><link_ctn id="lo"/></route>
    <route src="c" dst="c"><link_ctn id="lo"/></route>
  </zone>
</platform>
)";
  }
  std::string r = in_child([path]() -> std::string {
    Platform p;
    std::string err;
    if (!parse_platform(path + ",model=ideal", 3, p, err)) return "parse: " + err;
    auto e = quiet_engine();
    std::vector<s4u::Host*> hosts;
    build_simgrid(p, *e, hosts);
    std::ostringstream out;
    if (p.hosts != 3 || p.host_names != std::vector<std::string>{"b", "a", "c"}) out << "hosts not in file order\n";
    if (p.host_speeds != std::vector<double>{2e9, 1e9, 1e9} || p.speed != 2e9) out << "speeds\n";
    if (p.links.size() != 3) out << p.links.size() << " links\n";
    double lat = 0;
    std::vector<uint32_t> ids;
    p.route(0, 2, ids, lat);  // b -> c: l1 l2
    if (ids.size() != 2 || p.links[ids[0]].name != "l1" || p.links[ids[1]].name != "l2" || !rel_eq(lat, 15e-6, 1e-15))
      out << "route b -> c\n";
    if (p.route_bw(0, 2) != 1e9) out << "bw b -> c\n";
    out << compare_routes(p, hosts);
    out << lone_messages(p, hosts, {1.0, 1e6}, 1e-9);
    return out.str();
  });
  CHECK(r == "");
  std::string r2 = in_child([path]() -> std::string {
    Platform p;
    std::string err;
    if (!parse_platform(path, 4, p, err)) return "parse: " + err;
    auto e = quiet_engine();
    std::vector<s4u::Host*> hosts;
    try {
      build_simgrid(p, *e, hosts);
    } catch (const std::runtime_error& ex) {
      return ex.what();
    }
    return "no error";
  });
  CHECK(r2.find("3 hosts, but 4 ranks need 4") != std::string::npos);

  // The same, from this process, with the SimGrid work in a child process.
  Platform q = parse_ok(path, 2);
  std::string err;
  REQUIRE(resolve_xml_platform(q, err));
  CHECK(q.hosts == 3);
  CHECK(q.host_names == std::vector<std::string>{"b", "a", "c"});
  CHECK(q.host_speeds == std::vector<double>{2e9, 1e9, 1e9});
  CHECK(q.speed == 2e9);
  CHECK(q.links.size() == 3);
  CHECK(route_names(q, 0, 2) == std::vector<std::string>{"l1", "l2"});
  CHECK(route_names(q, 2, 0) == std::vector<std::string>{"l2", "l1"});  // Full routes are symmetrical
  CHECK(route_names(q, 1, 1) == std::vector<std::string>{"lo"});
  CHECK_FALSE(q.links[0].shared == q.links[2].shared);
  CHECK(q.route_bw(0, 2) == 1e9);
  CHECK(q.describe() == "xml, 3 hosts from " + path + ", 3 links, model lv08");
  Platform four = parse_ok(path, 4);
  CHECK_FALSE(resolve_xml_platform(four, err));
  CHECK(err.find("3 hosts, but 4 ranks need 4") != std::string::npos);
  std::string broken = (dir / "broken.xml").string();
  std::ofstream(broken) << "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\"><host id=\"a\"/></zone>";
  Platform b = parse_ok(broken, 1);
  CHECK_FALSE(resolve_xml_platform(b, err));
  INFO(err);
  CHECK(err.find("platform file " + broken + ": Parse error") != std::string::npos);
  std::filesystem::remove_all(dir);
}
#endif
