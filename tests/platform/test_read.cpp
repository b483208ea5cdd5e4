// A platform read once and sized per rank count (read_platform, size_platform): what requests
// carry (api::SimRequest, sim::PointSpec). Sizing a read spec gives what parsing it at that N
// gives; syntax errors are found when it is read, value errors when it is sized, and both point
// into the string or the @FILE it came from.
#include "tests/platform/util.hpp"

#include <fstream>

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("a spec read once sizes for every N as parsing it there would", "[platform][read]") {
  for (const char* spec : {"star:bw=25GBps,lat=2us", "fat-tree:per_leaf=4,oversub=2", "torus:lat=100ns", "dragonfly", "nodes:gpus=4",
                           "dgx-h100", "star:hosts=64"}) {
    PlatformChoice c;
    std::string err;
    INFO(spec);
    REQUIRE(read_platform(spec, c, err));
    CHECK(c.given == spec);
    CHECK_FALSE(c.defaulted());
    for (uint32_t n : {1u, 3u, 8u, 17u, 64u}) {
      INFO("N = " << n);
      Platform sized, parsed;
      std::string e1, e2;
      bool a = size_platform(c, n, sized, e1), b = parse_platform(spec, n, parsed, e2);
      REQUIRE(a == b);
      CHECK(e1 == e2);
      if (!a) continue;
      CHECK(sized.spec == parsed.spec);
      CHECK(sized.hosts == parsed.hosts);
      CHECK(sized.links.size() == parsed.links.size());
      CHECK(sized.ranks == n);
    }
  }
}

TEST_CASE("syntax errors when read, value errors when sized, each located", "[platform][read]") {
  PlatformChoice c;
  std::string err;
  PlatformErrorAt at;
  CHECK_FALSE(read_platform("ring:bw=1Gbps", c, err, &at));
  CHECK(err.find("unknown platform 'ring'") == 0);
  CHECK(at.offset == 0);
  CHECK(at.length == 4);
  CHECK_FALSE(read_platform("  ", c, err));
  CHECK(err.find("empty platform spec") == 0);
  // Read (its items are well formed), refused when sized: the value is checked against the kind.
  REQUIRE(read_platform("star:lat=2h", c, err, &at));
  Platform p;
  CHECK_FALSE(size_platform(c, 4, p, err, &at));
  CHECK(err == "star: lat=2h: unknown unit 'h' (time units: ns us ms s)");
  CHECK(at.file.empty());
  CHECK(at.offset == 9);
  CHECK(at.length == 2);
  // Too few hosts is a matter of N.
  REQUIRE(read_platform("star:hosts=4", c, err));
  CHECK(size_platform(c, 4, p, err));
  CHECK_FALSE(size_platform(c, 5, p, err));
}

TEST_CASE("an @FILE is read once: its gamma line kept, errors pointing into the file", "[platform][read]") {
  std::string path = "/tmp/stepgraph_test_read." + std::to_string(getpid()) + ".platform";
  { std::ofstream(path) << "# from stepgraph calibrate\n# gamma=0.12ns\nstar:bw=100Gbps\n  lat=2h  # a typo\n"; }
  PlatformChoice c;
  std::string err;
  PlatformErrorAt at;
  REQUIRE(read_platform("@" + path, c, err, &at));
  CHECK(c.gamma == "0.12ns");
  CHECK(c.given == "@" + path);
  // The file changes after it was read: the choice holds what was read.
  { std::ofstream(path) << "nonsense\n"; }
  Platform p;
  CHECK_FALSE(size_platform(c, 4, p, err, &at));
  CHECK(err.find("star: lat=2h") == 0);
  CHECK(at.file == path);
  CHECK(at.offset == std::string("# from stepgraph calibrate\n# gamma=0.12ns\nstar:bw=100Gbps\n  lat=").size());
  CHECK_FALSE(read_platform("@" + path, c, err, &at));  // now unknown platform 'nonsense', in the file
  CHECK(at.file == path);
  CHECK(at.offset == 0);
  std::remove(path.c_str());
}

TEST_CASE("the default platform reads and says it is the default", "[platform][read]") {
  PlatformChoice c = default_platform();
  CHECK(c.defaulted());
  CHECK(c.given.empty());
  CHECK(c.spec == default_platform_spec());
  Platform p;
  std::string err;
  REQUIRE(size_platform(c, 8, p, err));
  CHECK(p.hosts == 8);
  PlatformChoice unread;
  CHECK_THROWS_AS(size_platform(unread, 8, p, err), std::logic_error);
}
