// The unit parsers the platform spec uses (core/base/units.hpp, named sg::sim::parse_bandwidth and
// so on by sim/platform.hpp): bandwidth (b = bit, B = byte), time, flop rate.
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("units: bandwidth (b = bit, B = byte), time, flops", "[platform]") {
  std::string why;
  double v = 0;
  struct Case {
    const char* text;
    double want;
  };
  for (Case c : {Case{"100Gbps", 12.5e9}, Case{"1GBps", 1e9}, Case{"8bps", 1}, Case{"1Bps", 1}, Case{"1Mbps", 125e3}, Case{"1MBps", 1e6},
                 Case{"1Kbps", 125}, Case{"1kBps", 1e3}, Case{"1KBps", 1e3}, Case{"400Gbps", 50e9}, Case{"900GBps", 900e9},
                 Case{"1Tbps", 125e9}, Case{"2TBps", 2e12}, Case{"2KiBps", 2048}, Case{"1GiBps", 1073741824.0}, Case{"1.5e1Gbps", 1.875e9},
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

  for (Case c : {Case{"1us", 1e-6}, Case{"500ns", 5e-7}, Case{"2ms", 2e-3}, Case{"1s", 1}, Case{"1.5us", 1.5e-6}, Case{"0s", 0},
                 Case{"3e-6s", 3e-6}}) {
    INFO(c.text);
    REQUIRE(parse_time(c.text, v, why));
    CHECK(rel_eq(v, c.want, 1e-15));
  }
  for (const char* bad : {"1", "1min", "1sec", "us", "-1us", "1 us s"}) {
    INFO(bad);
    CHECK_FALSE(parse_time(bad, v, why));
  }

  for (Case c : {Case{"100Tf", 1e14}, Case{"1Gf", 1e9}, Case{"2.5Mf", 2.5e6}, Case{"1f", 1}, Case{"1Kf", 1e3}, Case{"1kf", 1e3},
                 Case{"1Pf", 1e15}, Case{"3Gflops", 3e9}}) {
    INFO(c.text);
    REQUIRE(parse_flops(c.text, v, why));
    CHECK(rel_eq(v, c.want, 1e-15));
  }
  for (const char* bad : {"1", "1TF", "1Tb", "f", "1Kif"}) {
    INFO(bad);
    CHECK_FALSE(parse_flops(bad, v, why));
  }
}
