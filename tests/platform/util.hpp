// What the platform tests share (tests/platform/test_*.cpp, one executable, test_platform):
// parsing a spec that must parse or must fail, route link names, and, with SimGrid, running a
// check in a child process (a process can hold one SimGrid engine only), holding routes against
// Host::route_to and timing lone messages.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>
#include "sim/platform.hpp"

#ifdef STEPGRAPH_HAVE_SIMGRID
#include <sys/wait.h>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "sim/simgrid_platform.hpp"
#endif

namespace platform_test {

using namespace sg::sim;

// Where a platform's errors go (read_platform, size_platform, parse_platform, load_xml_platform),
// and what the tests read of the first: its message, the file it points into ("" where it points
// nowhere in particular), and the text it points at.
struct Reported {
  sg::SourceManager sm;
  sg::Diagnostics diags;
  const sg::Diagnostic* first() const { return diags.all().empty() ? nullptr : &diags.all().front(); }
  std::string message() const { return first() ? first()->message : std::string(); }
  bool located() const { return first() && first()->loc.valid(); }
  std::string file() const { return located() ? sm.file(first()->loc.file).name() : std::string(); }
  uint32_t line() const { return located() ? first()->loc.line : 0; }
  uint32_t col() const { return located() ? first()->loc.col : 0; }
  std::string pointed() const {
    if (!located()) return {};
    std::string_view l = sm.file(first()->loc.file).line(first()->loc.line);
    size_t from = first()->loc.col - 1;
    return from > l.size() ? std::string() : std::string(l.substr(from, first()->length));
  }
};

inline Platform parse_ok(const std::string& spec, uint32_t n) {
  Platform p;
  Reported e;
  INFO(spec << " -n " << n);
  bool ok = parse_platform(spec, n, p, e.sm, e.diags);
  INFO(e.message());
  REQUIRE(ok);
  return p;
}

inline std::string parse_err(const std::string& spec, uint32_t n) {
  Platform p;
  Reported e;
  INFO(spec << " -n " << n);
  REQUIRE_FALSE(parse_platform(spec, n, p, e.sm, e.diags));
  return e.message();
}

inline bool rel_eq(double a, double b, double tol) { return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b)); }

inline std::vector<std::string> route_names(const Platform& p, uint32_t a, uint32_t b, double* lat = nullptr) {
  std::vector<uint32_t> ids;
  double l = 0;
  p.route(a, b, ids, l);
  if (lat) *lat = l;
  std::vector<std::string> names;
  for (uint32_t id : ids) names.push_back(p.links[id].name);
  return names;
}

#ifdef STEPGRAPH_HAVE_SIMGRID
namespace s4u = simgrid::s4u;

// Runs `f` in a child process (a process holds one SimGrid engine) and returns what it returned,
// or why it died. "" is success.
inline std::string in_child(const std::function<std::string()>& f) {
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

inline std::unique_ptr<s4u::Engine> quiet_engine() {
  static char a0[] = "test_platform", a1[] = "--log=root.thres:critical";
  static char* argv[] = {a0, a1, nullptr};
  int argc = 2;
  return std::make_unique<s4u::Engine>(&argc, argv);
}

// Each host pair's route against Host::route_to: link names, latency, bottleneck bandwidth.
inline std::string compare_routes(const Platform& p, const std::vector<s4u::Host*>& hosts) {
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
        out << p.spec << ": " << a << " -> " << b << ": ours [" << mine << "] " << lat << " s " << p.route_bw(a, b) << " B/s; SimGrid's ["
            << theirs << "] " << sg_lat << " s " << sg_bw << " B/s\n";
    }
  return out.str();
}

// One message at a time between every host pair (itself included), `bytes` each, in SimGrid;
// each must take what Platform::lone_message_time says (relative `tol`).
inline std::string lone_messages(const Platform& p, const std::vector<s4u::Host*>& hosts, const std::vector<double>& sizes, double tol,
                                 std::string* worst = nullptr) {
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
#endif

}  // namespace platform_test
