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
    Reported e;
    INFO(spec);
    REQUIRE(read_platform(spec, c, e.sm, e.diags));
    CHECK(c.given == spec);
    CHECK_FALSE(c.defaulted());
    for (uint32_t n : {1u, 3u, 8u, 17u, 64u}) {
      INFO("N = " << n);
      Platform sized, parsed;
      Reported e1, e2;
      bool a = size_platform(c, n, sized, e1.sm, e1.diags), b = parse_platform(spec, n, parsed, e2.sm, e2.diags);
      REQUIRE(a == b);
      CHECK(e1.message() == e2.message());
      CHECK(e1.file() == e2.file());
      CHECK(e1.col() == e2.col());
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
  {
    Reported e;
    CHECK_FALSE(read_platform("ring:bw=1Gbps", c, e.sm, e.diags));
    CHECK(e.message().find("unknown platform 'ring'") == 0);
    CHECK(e.file() == "--platform");
    CHECK(e.col() == 1);
    CHECK(e.pointed() == "ring");
    CHECK(render_diagnostic(*e.first(), e.sm).find("--platform:1:1: error: unknown platform 'ring'") == 0);
  }
  {
    Reported e;
    CHECK_FALSE(read_platform("  ", c, e.sm, e.diags));
    CHECK(e.message().find("empty platform spec") == 0);
    CHECK_FALSE(e.located());
  }
  // Read (its items are well formed), refused when sized: the value is checked against the kind.
  Reported e;
  REQUIRE(read_platform("star:lat=2h", c, e.sm, e.diags));
  CHECK_FALSE(e.diags.has_errors());
  Platform p;
  CHECK_FALSE(size_platform(c, 4, p, e.sm, e.diags));
  CHECK(e.message() == "star: lat=2h: unknown unit 'h' (time units: ns us ms s)");
  CHECK(e.file() == "--platform");
  CHECK(e.line() == 1);
  CHECK(e.col() == 10);
  CHECK(e.first()->length == 2);
  CHECK(render_diagnostic(*e.first(), e.sm) ==
        "--platform:1:10: error: star: lat=2h: unknown unit 'h' (time units: ns us ms s)\n  star:lat=2h\n           ^~\n");
  // Too few hosts is a matter of N.
  Reported few;
  REQUIRE(read_platform("star:hosts=4", c, few.sm, few.diags));
  CHECK(size_platform(c, 4, p, few.sm, few.diags));
  CHECK_FALSE(size_platform(c, 5, p, few.sm, few.diags));
  CHECK_FALSE(few.located());
}

TEST_CASE("an @FILE is read once: its gamma line kept, errors pointing into the file", "[platform][read]") {
  std::string path = "/tmp/stepgraph_test_read." + std::to_string(getpid()) + ".platform";
  { std::ofstream(path) << "# from stepgraph calibrate\n# gamma=0.12ns\nstar:bw=100Gbps\n  lat=2h  # a typo\n"; }
  PlatformChoice c;
  Reported e;
  REQUIRE(read_platform("@" + path, c, e.sm, e.diags));
  CHECK(c.gamma == "0.12ns");
  CHECK(c.given == "@" + path);
  // The file changes after it was read: the choice holds what was read.
  { std::ofstream(path) << "nonsense\n"; }
  Platform p;
  CHECK_FALSE(size_platform(c, 4, p, e.sm, e.diags));
  CHECK(e.message().find("star: lat=2h") == 0);
  CHECK(e.file() == path);
  CHECK(e.line() == 4);
  CHECK(e.col() == 7);
  CHECK(e.pointed() == "2h");
  Reported again;
  CHECK_FALSE(read_platform("@" + path, c, again.sm, again.diags));  // now unknown platform 'nonsense', in the file
  CHECK(again.file() == path);
  CHECK(again.line() == 1);
  CHECK(again.col() == 1);
  std::remove(path.c_str());
}

TEST_CASE("the default platform reads and says it is the default", "[platform][read]") {
  PlatformChoice c = default_platform();
  CHECK(c.defaulted());
  CHECK(c.given.empty());
  CHECK(c.spec == default_platform_spec());
  Platform p;
  Reported e;
  REQUIRE(size_platform(c, 8, p, e.sm, e.diags));
  CHECK(p.hosts == 8);
  PlatformChoice unread;
  CHECK_THROWS_AS(size_platform(unread, 8, p, e.sm, e.diags), std::logic_error);
}
