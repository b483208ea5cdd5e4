// The xml kind in SimGrid: loading the file into the engine and asking SimGrid for its hosts and
// every route (xml_zone, which build_simgrid calls through the table), and load_xml_platform,
// which does the same in a child process. SimGrid builds only.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "sim/platform/zones_simgrid.hpp"
#include "sim/simgrid_platform.hpp"

namespace sg::sim::detail {

// The zone builder the table names (sim/platform/kinds.cpp), declared with its type.
ZoneFn xml_zone;

namespace {

// Hosts in the order the XML file creates them (a host fires on_creation when sealed: the parser
// seals each as it reads it; sealing its zone fires it again).
std::vector<s4u::Host*>* g_xml_hosts = nullptr;

}  // namespace

void xml_zone(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts) {
  static bool connected = false;
  if (!connected) {
    s4u::Host::on_creation_cb([](s4u::Host& h) {
      if (g_xml_hosts) g_xml_hosts->push_back(&h);
    });
    connected = true;
  }
  std::vector<s4u::Host*> seen;
  g_xml_hosts = &seen;
  try {
    e.load_platform(p.xml);
  } catch (const std::exception& ex) {
    g_xml_hosts = nullptr;
    std::string m = "platform file ";
    m += p.xml;
    m += ": ";
    m += ex.what();
    throw std::runtime_error(m);
  }
  g_xml_hosts = nullptr;
  hosts.clear();
  std::unordered_set<s4u::Host*> have;
  for (s4u::Host* h : seen)
    if (have.insert(h).second) hosts.push_back(h);
  for (s4u::Host* h : e.get_all_hosts())  // anything the signal missed, in SimGrid's (name) order
    if (have.insert(h).second) hosts.push_back(h);
  if (hosts.empty()) throw std::runtime_error("platform file " + p.xml + ": no hosts");
  if (hosts.size() < p.ranks)
    throw std::runtime_error("platform file " + p.xml + ": " + std::to_string(hosts.size()) + " hosts, but " + std::to_string(p.ranks) +
                             " ranks need " + std::to_string(p.ranks));

  const uint32_t n = static_cast<uint32_t>(hosts.size());
  p.host_names.clear();
  p.host_speeds.clear();
  for (s4u::Host* h : hosts) {
    p.host_names.push_back(h->get_name());
    p.host_speeds.push_back(h->get_speed());
  }
  p.speed = p.host_speeds[0];

  std::vector<LinkInfo> links;
  std::unordered_map<const s4u::Link*, uint32_t> ids;
  std::vector<std::vector<XmlRoute>> routes(n, std::vector<XmlRoute>(n));
  std::vector<s4u::Link*> route;
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = 0; b < n; b++) {
      route.clear();
      double lat = 0;
      hosts[a]->route_to(hosts[b], route, &lat);
      XmlRoute& r = routes[a][b];
      r.latency = lat;
      for (s4u::Link* l : route) {
        auto [it, fresh] = ids.try_emplace(l, static_cast<uint32_t>(links.size()));
        if (fresh)
          links.push_back(
              LinkInfo{l->get_name(), l->get_bandwidth(), l->get_latency(), l->get_sharing_policy() != s4u::Link::SharingPolicy::FATPIPE});
        r.links.push_back(it->second);
      }
    }
  set_table_routes(p, std::move(links), routes);
}

}  // namespace sg::sim::detail

namespace sg::sim {

namespace s4u = simgrid::s4u;

namespace {

// The child's answer to load_xml_platform: a flat binary record.
struct Writer {
  std::string out;
  void u32(uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f64(double v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out += s;
  }
};
struct Reader {
  const std::string& in;
  size_t at = 0;
  bool ok = true;
  bool take(void* dst, size_t n) {
    if (!ok || in.size() - at < n) return ok = false;
    std::memcpy(dst, in.data() + at, n);
    at += n;
    return true;
  }
  uint32_t u32() {
    uint32_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  double f64() {
    double v = 0;
    take(&v, sizeof v);
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    if (!ok || in.size() - at < n) {
      ok = false;
      return {};
    }
    std::string s = in.substr(at, n);
    at += n;
    return s;
  }
};

std::string resolve_in_child(Platform p) {
  Writer w;
  try {
    std::vector<std::string> args = {"stepgraph", "--log=root.thres:critical"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    auto* e = new s4u::Engine(&argc, argv.data());  // left to the child's _exit
    std::vector<s4u::Host*> hosts;
    build_simgrid(p, *e, hosts);
    w.u32(1);
    w.u32(p.hosts);
    for (uint32_t h = 0; h < p.hosts; h++) {
      w.str(p.host_names[h]);
      w.f64(p.host_speeds[h]);
    }
    w.u32(static_cast<uint32_t>(p.links.size()));
    for (const LinkInfo& l : p.links) {
      w.str(l.name);
      w.f64(l.bw);
      w.f64(l.lat);
      w.u32(l.shared ? 1 : 0);
    }
    std::vector<uint32_t> ids;
    for (uint32_t a = 0; a < p.hosts; a++)
      for (uint32_t b = 0; b < p.hosts; b++) {
        double lat = 0;
        p.route(a, b, ids, lat);
        w.u32(static_cast<uint32_t>(ids.size()));
        for (uint32_t id : ids) w.u32(id);
      }
  } catch (const std::exception& ex) {
    w.out.clear();
    w.u32(0);
    w.str(ex.what());
  }
  return w.out;
}

}  // namespace

bool load_xml_platform(Platform& p, Diagnostics& diags) {
  auto refuse = [&](std::string message) {
    diags.error(Loc{}, std::move(message));
    return false;
  };
  if (p.kind != PlatformKind::Xml) return true;
  int fd[2];
  if (pipe(fd) != 0) {
    return refuse(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::string why = std::strerror(errno);
    close(fd[0]);
    close(fd[1]);
    return refuse("cannot fork: " + why);
  }
  if (pid == 0) {
    close(fd[0]);
    std::string out = resolve_in_child(p);
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = write(fd[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd[1]);
    _exit(0);
  }
  close(fd[1]);
  std::string in;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || in.empty()) {
    std::string err = "platform file " + p.xml + ": SimGrid could not load it";
    if (WIFSIGNALED(status)) err += " (it died with signal " + std::to_string(WTERMSIG(status)) + ")";
    return refuse(std::move(err));
  }
  Reader r{in};
  if (r.u32() != 1) {
    std::string err = r.str();
    if (err.empty()) err = "platform file " + p.xml + ": SimGrid could not load it";
    return refuse(std::move(err));
  }
  uint32_t n = r.u32();
  std::vector<std::string> names(n);
  std::vector<double> speeds(n);
  for (uint32_t h = 0; h < n && r.ok; h++) {
    names[h] = r.str();
    speeds[h] = r.f64();
  }
  std::vector<LinkInfo> links(r.u32());
  for (LinkInfo& l : links) {
    if (!r.ok) break;
    l.name = r.str();
    l.bw = r.f64();
    l.lat = r.f64();
    l.shared = r.u32() != 0;
  }
  std::vector<std::vector<XmlRoute>> routes(n, std::vector<XmlRoute>(n));
  for (uint32_t a = 0; a < n && r.ok; a++)
    for (uint32_t b = 0; b < n && r.ok; b++) {
      XmlRoute& route = routes[a][b];
      route.links.resize(r.u32());
      for (uint32_t& id : route.links) {
        id = r.u32();
        if (id >= links.size()) r.ok = false;
      }
      for (uint32_t id : route.links)
        if (r.ok) route.latency += links[id].lat;
    }
  if (!r.ok || r.at != in.size()) return refuse("platform file " + p.xml + ": a garbled answer from the process that loaded it");
  p.host_names = std::move(names);
  p.host_speeds = std::move(speeds);
  p.speed = p.host_speeds.empty() ? 0 : p.host_speeds[0];
  set_table_routes(p, std::move(links), routes);
  return true;
}

}  // namespace sg::sim
