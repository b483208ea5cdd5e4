// What every platform kind must do: errors that name the bad key and value, a normalised spec
// that parses back to the same platform, well-formed routes, and, with SimGrid, routes that are
// SimGrid's own (every host pair of small instances, held against Host::route_to) and lone
// messages that take exactly what lone_message_time says. A process can hold one SimGrid engine
// only, so each SimGrid check runs in a child process. A new kind adds its specs to the lists here.
#include "tests/platform/util.hpp"

#include <fstream>
#include <set>

using namespace sg::sim;
using namespace platform_test;

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
           Case{"star:bw=0Gbps", 4, "star: bw=0Gbps: below 1Bps (8bps)"},
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

TEST_CASE("@FILE: a spec read from a file, which may not name another file", "[platform]") {
  std::string dir = "/tmp/stepgraph_test_spec_file." + std::to_string(getpid());
  std::string spec = dir + ".spec", self = dir + ".self";
  {
    std::ofstream(spec) << "star:bw=100Gbps  # a comment\n\nlat=1us\n";
    std::ofstream(self) << "@" << self << "\n";  // once read without end: a stack overflow
  }
  Platform p;
  Reported e;
  REQUIRE(parse_platform("@" + spec, 4, p, e.sm, e.diags));
  CHECK(p.spec == "star:hosts=4,bw=100Gbps,lat=1us,model=ideal");
  CHECK_FALSE(parse_platform("@" + self, 4, p, e.sm, e.diags));
  CHECK(e.message() == "platform file '" + self + "' names another (@" + self + "): it must hold the spec itself");
  CHECK_FALSE(e.located());
  std::remove(spec.c_str());
  std::remove(self.c_str());
}

TEST_CASE("the normalised spec parses back to the same platform, whatever the rank count", "[platform]") {
  for (const char* spec : {"star", "star:bw=25GBps,lat=2us,speed=10Tf,model=ideal", "fat-tree:leaves=4,per_leaf=4,oversub=2",
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
       {"star:hosts=5", "fat-tree:down=4x3,up=1x2", "fat-tree:down=2x2x2,up=1x2x2,links=1x2x1", "fat-tree:down=3x2x2,up=2x2x3,links=2x1x1",
        "fat-tree:leaves=4,per_leaf=4,oversub=4", "torus:3x4x2", "dragonfly:groups=3,chassis=2,routers=3,nodes=2",
        "dragonfly:groups=4,chassis=3,routers=4,nodes=1", "nodes:count=3,gpus=4,nics=2"}) {
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
      Reported rep;
      if (!parse_platform(spec, 1, p, rep.sm, rep.diags)) return "parse: " + rep.message();
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
  for (const char* spec : {"star:hosts=3,model=lv08", "star:hosts=3,lat=1ms,model=lv08", "torus:2x3,lat=2us,bw=10GBps,model=cm02",
                           "torus:3,lat=5ms,model=cm02", "nodes:count=2,gpus=2,model=lv08"}) {
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      Reported rep;
      if (!parse_platform(spec, 1, p, rep.sm, rep.diags)) return "parse: " + rep.message();
      auto e = quiet_engine();
      std::vector<s4u::Host*> hosts;
      build_simgrid(p, *e, hosts);
      return compare_routes(p, hosts) + lone_messages(p, hosts, {1.0, 1e6, 1e8}, 1e-9);
    });
    INFO(spec);
    CHECK(r == "");
  }
}
#endif
