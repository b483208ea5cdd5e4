// The xml platform kind (sim/platform/xml.cpp, xml_simgrid.cpp): a SimGrid platform file's path,
// with model=; with SimGrid, its hosts in file order and its routes, in this process
// (build_simgrid) and from a child process (load_xml_platform).
#include "tests/platform/util.hpp"

#include <filesystem>
#include <fstream>

using namespace sg::sim;
using namespace platform_test;

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
  CHECK(p.spec == path + ",model=ideal");
  CHECK_FALSE(p.has_routes());
  std::vector<uint32_t> ids;
  double lat = 0;
  CHECK_THROWS_AS(p.route(0, 1, ids, lat), std::logic_error);
  Platform q = parse_ok(path + ",model=ideal", 3);
  CHECK(q.ideal);
  CHECK(parse_err(path + ",bw=1Gbps", 3).find("takes only model=") != std::string::npos);
  CHECK(parse_err((dir / "missing.xml").string(), 3).find("No such file or directory") != std::string::npos);
  std::filesystem::remove_all(dir);
}

#ifdef STEPGRAPH_HAVE_SIMGRID
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
    Reported rep;
    if (!parse_platform(path + ",model=ideal", 3, p, rep.sm, rep.diags)) return "parse: " + rep.message();
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
    Reported rep;
    if (!parse_platform(path, 4, p, rep.sm, rep.diags)) return "parse: " + rep.message();
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
  Reported e;
  REQUIRE(load_xml_platform(q, e.diags));
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
  CHECK(q.describe() == "xml, 3 hosts from " + path + ", 3 links, model ideal");
  Platform four = parse_ok(path, 4);
  CHECK_FALSE(load_xml_platform(four, e.diags));
  CHECK(e.message().find("3 hosts, but 4 ranks need 4") != std::string::npos);
  CHECK_FALSE(e.located());
  std::string broken = (dir / "broken.xml").string();
  std::ofstream(broken) << "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\"><host id=\"a\"/></zone>";
  Platform b = parse_ok(broken, 1);
  Reported e2;
  CHECK_FALSE(load_xml_platform(b, e2.diags));
  INFO(e2.message());
  CHECK(e2.message().find("platform file " + broken + ": Parse error") != std::string::npos);
  std::filesystem::remove_all(dir);
}
#endif
