// The `star` platform kind (sim/platform/star.cpp): sizes, units, the loopback, the models, the
// default platform (a star), and in SimGrid the cross traffic of the non-ideal models on a star.
#include "tests/platform/util.hpp"

using namespace sg::sim;
using namespace platform_test;

TEST_CASE("star: sized from the rank count, lat end to end, model", "[platform]") {
  Platform p = parse_ok("star:bw=100Gbps,lat=1us", 8);
  CHECK(p.kind == PlatformKind::Star);
  CHECK(p.hosts == 8);
  CHECK(p.star.bw == 12.5e9);
  CHECK(p.star.lat == 1e-6);
  CHECK(p.speed == 1e12);
  // No model named: the one default of every platform, ideal (the built-in platform's too).
  CHECK(p.model == NetModel::Ideal);
  CHECK(p.ideal);
  CHECK(p.lat_factor == 1);
  CHECK(p.bw_factor == 1);
  CHECK_FALSE(p.crosstraffic);
  CHECK(p.spec == "star:hosts=8,bw=100Gbps,lat=1us,model=ideal");
  Platform lv = parse_ok("star:bw=100Gbps,lat=1us,model=lv08", 8);  // SimGrid's default, named
  CHECK(lv.model == NetModel::Lv08);
  CHECK_FALSE(lv.ideal);
  CHECK(lv.lat_factor == 13.01);
  CHECK(lv.bw_factor == 0.97);
  CHECK(lv.crosstraffic);
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
  CHECK(d.spec == "star:hosts=3,bw=100Gbps,lat=1us,model=ideal");
  CHECK(rel_eq(d.lone_message_time(0, 1, 1e6), 1e-6 + 1e6 / 12.5e9, 1e-15));
  CHECK(rel_eq(parse_ok("star:model=lv08", 3).lone_message_time(0, 1, 1e6), 13.01e-6 + 1e6 / (0.97 * 12.5e9), 1e-15));
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

#ifdef STEPGRAPH_HAVE_SIMGRID
TEST_CASE("simgrid: cross traffic is on in cm02 and off in the ideal model", "[platform][simgrid]") {
  // Two hosts send 1 MB to each other at once. With cross traffic each flow also loads the other
  // flow's links with 5% of its rate: each up link carries 1.05 flows.
  auto exchange = [](const char* spec) {
    std::string r = in_child([spec]() -> std::string {
      Platform p;
      Reported rep;
      if (!parse_platform(spec, 2, p, rep.sm, rep.diags)) return "parse: " + rep.message();
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
#endif
