// Platforms' numbers in range (sim/platform/kind.hpp: bandwidth 1 B/s to 1 PB/s, latency 0 to 1
// hour, speed 1 f to 1 Ef), in a spec and in an XML file alike, with the place the error points
// to (a located diagnostic): the value in the spec string, the line and column in the file. And the
// files a platform names: only regular ones, with the OS's reason when they cannot be read.
#include "tests/platform/util.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace sg::sim;
using namespace platform_test;

namespace {

struct Refused {
  std::string err;
  std::string file;  // the file it points into ("--platform": the spec string; "": nowhere in particular)
  uint32_t line = 0, col = 0;
  std::string pointed;  // the text the error points at (in the spec or the file)
};

Refused refused(const std::string& spec, uint32_t n = 4) {
  Platform p;
  Reported e;
  INFO(spec);
  REQUIRE_FALSE(parse_platform(spec, n, p, e.sm, e.diags));
  CHECK(e.diags.error_count() == 1);
  return Refused{e.message(), e.file(), e.line(), e.col(), e.pointed()};
}

struct TempDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("stepgraph_numbers_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(dir); }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

std::string xml_with_link(const std::string& link_attrs, const std::string& host_speed = "1Gf") {
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
         "  <zone id=\"world\" routing=\"Full\">\n"
         "    <!-- <link id=\"commented\" bandwidth=\"-1Bps\"/> is not a link -->\n"
         "    <host id=\"a\" speed=\"" +
         host_speed +
         "\"/>\n"
         "    <host id=\"b\" speed=\"1Gf\"/>\n"
         "    <link id=\"l\" " +
         link_attrs +
         "/>\n"
         "    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
         "  </zone>\n</platform>\n";
}

}  // namespace

TEST_CASE("a spec's bandwidths, latencies and speeds must be in range, and the error points at the value", "[platform][range]") {
  Refused tiny = refused("star:bw=1e-300bps");
  CHECK(tiny.err.find("star: bw=1e-300bps: below 1Bps") != std::string::npos);
  CHECK(tiny.file == "--platform");
  CHECK(tiny.line == 1);
  CHECK(tiny.col == 9);
  CHECK(tiny.pointed == "1e-300bps");

  Refused huge = refused("  star: hosts=4, bw = 2PBps ");  // the offset counts from the string as given
  CHECK(huge.err.find("above 1PBps") != std::string::npos);
  CHECK(huge.pointed == "2PBps");

  CHECK(refused("star:lat=3601s").err.find("above 1 hour") != std::string::npos);
  CHECK(refused("star:bw=0bps").err.find("below 1Bps") != std::string::npos);
  CHECK(refused("star:speed=0f").pointed == "0f");
  CHECK(refused("star:speed=2000Pf").err.find("above 1Ef") != std::string::npos);
  CHECK(refused("star:loopback=1e16Bps").pointed == "1e16Bps");
  CHECK(refused("star:loopback_lat=4000000ms").pointed == "4000000ms");
  CHECK(refused("torus:4x4,lat=1e9s", 16).pointed == "1e9s");
  CHECK(refused("fat-tree:leaves=2,per_leaf=2,oversub=1,bw=1e-3Bps").pointed == "1e-3Bps");
  CHECK(refused("dragonfly:groups=1,chassis=1,routers=4,nodes=1,lat=7200s").pointed == "7200s");
  CHECK(refused("nodes:count=1,gpus=4,nvlink=1e-10GBps").pointed == "1e-10GBps");
  CHECK(refused("nodes:count=1,gpus=4,nic_lat=1e10us").pointed == "1e10us");
  // 1e400 is no finite number: refused as one, not read as inf.
  CHECK(refused("star:bw=1e400bps").err.find("not a number") != std::string::npos);

  // The edges themselves are in range.
  Platform lo = parse_ok("star:bw=1Bps,lat=0s,speed=1f", 4);
  CHECK(lo.star.bw == 1);
  Platform hi = parse_ok("star:bw=1PBps,lat=3600s,speed=1000Pf", 4);
  CHECK(hi.star.bw == 1e15);
  CHECK(hi.star.lat == 3600);
}

TEST_CASE("other spec errors point at what they are about too", "[platform][range]") {
  CHECK(refused("star:foo=1").pointed == "foo");
  CHECK(refused("torus:4x4,oops", 16).pointed == "oops");
  CHECK(refused("torus:4x0", 16).pointed == "4x0");
  CHECK(refused("torus:dims=4xx4", 16).pointed == "4xx4");
  CHECK(refused("ring:bw=1Gbps").pointed == "ring");
  CHECK(refused("star:bw=5xbps").pointed == "5xbps");
  CHECK(refused("star:model=fast").pointed == "fast");
  Refused twice = refused("star:bw=1Gbps, bw=2Gbps");
  CHECK(twice.err.find("given twice") != std::string::npos);
  CHECK(twice.pointed == "bw=2Gbps");
  // An error about the whole platform points nowhere in particular.
  CHECK(refused("star:hosts=2", 4).file.empty());
}

TEST_CASE("an XML file's numbers are checked before SimGrid reads them, at their line and column", "[platform][range][xml]") {
  TempDir t;
  // SimGrid aborts on a negative bandwidth; takes a negative latency; never ends a transfer on 0.
  for (const auto& [attrs, value] : std::vector<std::pair<std::string, std::string>>{
           {"bandwidth=\"-5MBps\" latency=\"50us\"", "-5MBps"},
           {"bandwidth=\"5MBps\" latency=\"-50us\"", "-50us"},
           {"bandwidth=\"0\" latency=\"50us\"", "0"},
           {"bandwidth=\"1e-300bps\"", "1e-300bps"},
           {"bandwidth=\"2h\" latency=\"2h\"", "2h"},  // a bandwidth SimGrid cannot read is SimGrid's to report; 2 hours is ours
           {"bandwidth=\"54Mbps,0.1bps\"", "0.1bps"},  // a wifi link's rates, each checked
       }) {
    std::string path = t.write("bad.xml", xml_with_link(attrs));
    Refused r = refused(path);
    INFO(attrs << ": " << r.err);
    CHECK(r.file == path);
    CHECK(r.pointed == value);
    CHECK(r.err.find("link 'l'") != std::string::npos);
  }
  // Line 8, the link's (the commented-out link on line 5 is no link).
  std::string path = t.write("neg.xml", xml_with_link("bandwidth=\"-5MBps\""));
  Refused r = refused(path);
  CHECK(r.line == 8);
  CHECK(r.pointed == "-5MBps");

  // A host's speed, and its pstates.
  CHECK(refused(t.write("s.xml", xml_with_link("bandwidth=\"1GBps\"", "-1Gf"))).pointed == "-1Gf");
  CHECK(refused(t.write("p.xml", xml_with_link("bandwidth=\"1GBps\"", "1Gf, 0f"))).pointed == "0f");

  // SimGrid's units: 1h is 3600 s, in range; Ki/Mi prefixes; a bare number is in bytes/s.
  parse_ok(t.write("ok.xml", xml_with_link("bandwidth=\"100MiBps\" latency=\"1h\"", "1e6")), 2);
  parse_ok(t.write("ok2.xml", xml_with_link("bandwidth=\"125000000\" latency=\"0\"", "1kiloflops")), 2);
  // A cluster's loopback_bw of 0 means none.
  parse_ok(t.write("cl.xml",
                   "<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"h-\" suffix=\"\" radical=\"0-3\" "
                   "speed=\"1Gf\" bw=\"125MBps\" lat=\"50us\" loopback_bw=\"0\"/>\n</platform>\n"),
           4);
  Refused cl = refused(t.write("cl2.xml",
                               "<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"h-\" suffix=\"\" "
                               "radical=\"0-3\" speed=\"1Gf\" bw=\"125MBps\" lat=\"50us\" bb_bw='-1GBps'/>\n</platform>\n"));
  CHECK(cl.pointed == "-1GBps");
  CHECK(cl.err.find("cluster 'c': bb_bw=-1GBps") != std::string::npos);
}

#ifdef STEPGRAPH_HAVE_SIMGRID
TEST_CASE("simgrid: an XML file in range loads as before", "[platform][range][xml][simgrid]") {
  TempDir t;
  Platform p = parse_ok(t.write("ok.xml", xml_with_link("bandwidth=\"100MiBps\" latency=\"1h\"")), 2);
  Reported e;
  REQUIRE(load_xml_platform(p, e.diags));
  CHECK(p.hosts == 2);
  CHECK(p.links.size() == 1);
  CHECK(p.links[0].lat == 3600);
}
#endif

TEST_CASE("an @FILE spec's error points into the file", "[platform][range]") {
  TempDir t;
  std::string path = t.write("cal.platform", "# written by hand\n# gamma=0.1ns\nstar:\n  bw=100Gbps,\n  lat=7200s  # too long\n");
  // (Each "@" is appended: GCC 12 warns falsely, -Wrestrict, on "@" + path.)
  std::string spec = "@";
  Refused r = refused(spec.append(path));
  CHECK(r.file == path);
  CHECK(r.line == 5);
  CHECK(r.pointed == "7200s");
  CHECK(r.err.find("above 1 hour") != std::string::npos);
  spec = "@";
  parse_ok(spec.append(t.write("ok.platform", "star:\n  bw=100Gbps,\n  lat=1us\n")), 4);
}

TEST_CASE("a platform file must be a regular file, and one that cannot be read says why", "[platform][files]") {
  TempDir t;
  std::string fifo = (t.dir / "fifo.xml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Neither reads for ever (a FIFO without a writer would block in open, /dev/zero never ends).
  CHECK(parse_err(fifo, 2).find("is not a regular file") != std::string::npos);
  std::string at_fifo = "@";
  CHECK(parse_err(at_fifo.append(fifo), 2).find("is not a regular file") != std::string::npos);
  CHECK(parse_err("@/dev/zero", 2).find("is not a regular file") != std::string::npos);
  CHECK(parse_err((t.dir / "missing.xml").string(), 2).find("No such file or directory") != std::string::npos);
  std::string file = t.write("plain", "x");
  file += "/under.xml";
  CHECK(parse_err(file, 2).find("Not a directory") != std::string::npos);
  std::filesystem::create_directories(t.dir / "dir.xml");
  CHECK(parse_err((t.dir / "dir.xml").string(), 2).find("Is a directory") != std::string::npos);
}
