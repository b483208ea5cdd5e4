// Building a Platform into a SimGrid 3.32 engine.
#include "sim/simgrid_platform.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace sg::sim {

namespace s4u = simgrid::s4u;
using NetPoint = simgrid::kernel::routing::NetPoint;

void configure_simgrid(const Platform& p) {
  switch (p.model) {
    case NetModel::Ideal:
      // CM02: latency and bandwidth factors 1, weight-S 0 (SimGrid's surf_network_model_init_CM02).
      s4u::Engine::set_config("network/model:CM02");
      // No 5% reverse flow on the back route of every communication.
      s4u::Engine::set_config("network/crosstraffic:0");
      // No rate bound TCP-gamma / (2 latency): a bound of 0 is no bound in the max-min solver.
      s4u::Engine::set_config("network/TCP-gamma:0");
      break;
    case NetModel::Cm02: s4u::Engine::set_config("network/model:CM02"); break;
    case NetModel::Lv08: s4u::Engine::set_config("network/model:LV08"); break;
  }
}

namespace {

s4u::Link* make_loopback(s4u::NetZone* zone, const Platform& p, uint32_t h) {
  return zone->create_link(p.host_name(h) + "_loopback", p.loopback_bw)
      ->set_sharing_policy(s4u::Link::SharingPolicy::FATPIPE)
      ->set_latency(p.loopback_lat)
      ->seal();
}

s4u::SplitDuplexLink* make_duplex(s4u::NetZone* zone, const std::string& name, double bw, double lat) {
  s4u::SplitDuplexLink* l = zone->create_split_duplex_link(name, bw);
  l->set_latency(lat);
  l->seal();
  return l;
}

// The callbacks of SimGrid's cluster zones: host i named as Platform::host_name, its loopback.
s4u::ClusterCallbacks cluster_callbacks(const Platform& p) {
  auto netpoint = [&p](s4u::NetZone* zone, const std::vector<unsigned long>& /*coord*/,
                       unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
    s4u::Host* h = zone->create_host(p.host_name(static_cast<uint32_t>(id)), p.speed);
    return {h->get_netpoint(), nullptr};
  };
  auto loopback = [&p](s4u::NetZone* zone, const std::vector<unsigned long>& /*coord*/, unsigned long id) {
    return make_loopback(zone, p, static_cast<uint32_t>(id));
  };
  return s4u::ClusterCallbacks(netpoint, loopback, {});
}

void build_star(const Platform& p) {
  s4u::NetZone* zone = s4u::create_star_zone("star");
  for (uint32_t h = 0; h < p.hosts; h++) {
    s4u::Host* host = zone->create_host(p.host_name(h), p.speed);
    // Full duplex: one SimGrid split-duplex link per host, lat/2 each way, so up + down = lat.
    s4u::SplitDuplexLink* l = make_duplex(zone, p.host_name(h) + "_link", p.star.bw, p.star.lat / 2);
    s4u::Link* lb = make_loopback(zone, p, h);
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {s4u::LinkInRoute(l, s4u::LinkInRoute::Direction::UP)}, true);
    zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr, {s4u::LinkInRoute(lb)}, false);
  }
  zone->seal();
}

void build_nodes(const Platform& p) {
  const NodesParams& nd = p.nodes;
  s4u::NetZone* zone = s4u::create_star_zone("nodes");
  std::vector<s4u::Host*> hosts(p.hosts);
  std::vector<s4u::SplitDuplexLink*> nvlink(p.hosts);
  for (uint32_t n = 0; n < nd.count; n++) {
    for (uint32_t g = 0; g < nd.gpus; g++) {
      uint32_t h = n * nd.gpus + g;
      hosts[h] = zone->create_host(p.host_name(h), p.speed);
      nvlink[h] = make_duplex(zone, p.host_name(h) + "_nvlink", nd.nvlink, nd.nvlink_lat / 2);
      s4u::Link* lb = make_loopback(zone, p, h);
      zone->add_route(hosts[h]->get_netpoint(), hosts[h]->get_netpoint(), nullptr, nullptr, {s4u::LinkInRoute(lb)},
                      false);
    }
    std::vector<s4u::SplitDuplexLink*> nics(nd.nics);
    for (uint32_t k = 0; k < nd.nics; k++) {
      std::string name = "node-" + std::to_string(n);
      name += "-nic-";
      name += std::to_string(k);
      nics[k] = make_duplex(zone, name, nd.nic, nd.nic_lat / 2);
    }
    // Between nodes: the GPU's NIC up, the network (non-blocking), the peer's NIC down.
    for (uint32_t g = 0; g < nd.gpus; g++)
      zone->add_route(hosts[n * nd.gpus + g]->get_netpoint(), nullptr, nullptr, nullptr,
                      {s4u::LinkInRoute(nics[g / (nd.gpus / nd.nics)], s4u::LinkInRoute::Direction::UP)}, true);
    // Inside a node: NVLink up to the NVSwitch, NVLink down to the peer (bypass routes).
    for (uint32_t a = 0; a < nd.gpus; a++)
      for (uint32_t b = 0; b < nd.gpus; b++) {
        if (a == b) continue;
        uint32_t ha = n * nd.gpus + a, hb = n * nd.gpus + b;
        zone->add_bypass_route(hosts[ha]->get_netpoint(), hosts[hb]->get_netpoint(), nullptr, nullptr,
                               {s4u::LinkInRoute(nvlink[ha], s4u::LinkInRoute::Direction::UP),
                                s4u::LinkInRoute(nvlink[hb], s4u::LinkInRoute::Direction::DOWN)});
      }
  }
  zone->seal();
}

void build_torus(const Platform& p) {
  std::vector<unsigned long> dims(p.torus.dims.begin(), p.torus.dims.end());
  s4u::create_torus_zone("torus", nullptr, dims, cluster_callbacks(p), p.torus.bw, p.torus.lat,
                         s4u::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
}

void build_fat_tree(const Platform& p) {
  const FatTreeParams& f = p.fat_tree;
  s4u::FatTreeParams params(static_cast<unsigned>(f.down.size()), {f.down.begin(), f.down.end()},
                            {f.up.begin(), f.up.end()}, {f.links.begin(), f.links.end()});
  s4u::create_fatTree_zone("fat-tree", nullptr, params, cluster_callbacks(p), f.bw, f.lat,
                           s4u::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
}

void build_dragonfly(const Platform& p) {
  const DragonflyParams& d = p.dragonfly;
  s4u::DragonflyParams params({d.groups, d.blue}, {d.chassis, d.black}, {d.routers, d.green}, d.nodes);
  s4u::create_dragonfly_zone("dragonfly", nullptr, params, cluster_callbacks(p), d.bw, d.lat,
                             s4u::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
}

bool same(double a, double b) { return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)); }

// Hosts in the order the XML file creates them (a host fires on_creation when sealed: the parser
// seals each as it reads it; sealing its zone fires it again).
std::vector<s4u::Host*>* g_xml_hosts = nullptr;

void build_xml(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts) {
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
    throw std::runtime_error("platform file " + p.xml + ": " + std::to_string(hosts.size()) + " hosts, but " +
                             std::to_string(p.ranks) + " ranks need " + std::to_string(p.ranks));

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
          links.push_back(LinkInfo{l->get_name(), l->get_bandwidth(), l->get_latency(),
                                   l->get_sharing_policy() != s4u::Link::SharingPolicy::FATPIPE});
        r.links.push_back(it->second);
      }
    }
  set_table_routes(p, std::move(links), routes);
}

}  // namespace

void build_simgrid(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts) {
  std::vector<s4u::Link*> links;
  build_simgrid(p, e, hosts, links);
}

void build_simgrid(Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts, std::vector<s4u::Link*>& links) {
  configure_simgrid(p);
  hosts.clear();
  links.clear();
  switch (p.kind) {
    case PlatformKind::Star: build_star(p); break;
    case PlatformKind::Nodes: build_nodes(p); break;
    case PlatformKind::Torus: build_torus(p); break;
    case PlatformKind::FatTree: build_fat_tree(p); break;
    case PlatformKind::Dragonfly: build_dragonfly(p); break;
    case PlatformKind::Xml: build_xml(p, e, hosts); break;
  }
  if (p.kind != PlatformKind::Xml) {
    hosts.reserve(p.hosts);
    for (uint32_t h = 0; h < p.hosts; h++) {
      s4u::Host* host = e.host_by_name_or_null(p.host_name(h));
      if (!host) throw std::runtime_error("platform " + p.spec + ": SimGrid has no host " + p.host_name(h));
      hosts.push_back(host);
    }
  }
  // Every link of p.links, found by name, must be SimGrid's link with the same characteristics:
  // the generated routes name SimGrid's links, so this catches a SimGrid whose zones differ.
  links.reserve(p.links.size());
  for (const LinkInfo& li : p.links) {
    s4u::Link* l = s4u::Link::by_name_or_null(li.name);
    if (!l || !same(l->get_bandwidth(), li.bw) || !same(l->get_latency(), li.lat)) {
      std::string m = "platform " + p.spec;
      m += ": SimGrid's link ";
      m += li.name;
      m += l ? " differs from the generated one (bandwidth or latency)" : " does not exist (a SimGrid other than 3.32?)";
      throw std::runtime_error(m);
    }
    links.push_back(l);
  }
}

namespace {

// The child's answer to resolve_xml_platform: a flat binary record.
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

bool resolve_xml_platform(Platform& p, std::string& err) {
  if (p.kind != PlatformKind::Xml) return true;
  int fd[2];
  if (pipe(fd) != 0) {
    err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return false;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    err = std::string("cannot fork: ") + std::strerror(errno);
    close(fd[0]);
    close(fd[1]);
    return false;
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
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || in.empty()) {
    err = "platform file " + p.xml + ": SimGrid could not load it";
    if (WIFSIGNALED(status)) err += " (it died with signal " + std::to_string(WTERMSIG(status)) + ")";
    return false;
  }
  Reader r{in};
  if (r.u32() != 1) {
    err = r.str();
    if (err.empty()) err = "platform file " + p.xml + ": SimGrid could not load it";
    return false;
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
  if (!r.ok || r.at != in.size()) {
    err = "platform file " + p.xml + ": a garbled answer from the process that loaded it";
    return false;
  }
  p.host_names = std::move(names);
  p.host_speeds = std::move(speeds);
  p.speed = p.host_speeds.empty() ? 0 : p.host_speeds[0];
  set_table_routes(p, std::move(links), routes);
  return true;
}

}  // namespace sg::sim
