// Platform specs: parsing, the generated kinds' links and routes (SimGrid's, computed without it).
//
// The route functions below follow SimGrid 3.32's zones line by line (src/kernel/routing/
// {Star,Torus,FatTree,Dragonfly}Zone.cpp), quirks included, because the analytic backend must see
// the very links SimGrid's model shares. The link names are SimGrid's too, which holds as long as
// the process builds one such zone (FatTreeZone and DragonflyZone number links with static
// counters; SimGrid allows one Engine per process anyway).
#include "sim/platform.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/base/units.hpp"

namespace sg::sim {

const char* kind_name(PlatformKind k) {
  switch (k) {
    case PlatformKind::Star: return "star";
    case PlatformKind::FatTree: return "fat-tree";
    case PlatformKind::Torus: return "torus";
    case PlatformKind::Dragonfly: return "dragonfly";
    case PlatformKind::Nodes: return "nodes";
    case PlatformKind::Xml: return "xml";
  }
  return "?";
}

const char* model_name(NetModel m) {
  switch (m) {
    case NetModel::Lv08: return "lv08";
    case NetModel::Cm02: return "cm02";
    case NetModel::Ideal: return "ideal";
  }
  return "?";
}

const char* default_platform_spec() { return "star:bw=100Gbps,lat=1us,model=ideal"; }

// ---------------------------------------------------------------------------------------------
// Routing tables
// ---------------------------------------------------------------------------------------------
namespace detail {

struct Routing {
  virtual ~Routing() = default;
  // Appends the links of the route from a to b (both < hosts) to `ids`.
  virtual void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const = 0;
};

namespace {

// Star: host i owns links 3i (up), 3i+1 (down), 3i+2 (loopback).
struct StarRouting final : Routing {
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    if (a == b) {
      ids.push_back(3 * a + 2);
      return;
    }
    ids.push_back(3 * a);      // StarZone: links_up of the source …
    ids.push_back(3 * b + 1);  // … then links_down of the destination
  }
};

// Nodes: per node, 3 links per GPU (NVLink up, down, loopback) then 2 per NIC (up, down).
struct NodesRouting final : Routing {
  uint32_t gpus = 0, nics = 0;
  uint32_t per_node() const { return 3 * gpus + 2 * nics; }
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    uint32_t na = a / gpus, ga = a % gpus, nb = b / gpus, gb = b % gpus;
    if (a == b) {
      ids.push_back(na * per_node() + 3 * ga + 2);
      return;
    }
    if (na == nb) {  // the bypass route inside a node: NVLink up, NVSwitch, NVLink down
      ids.push_back(na * per_node() + 3 * ga);
      ids.push_back(nb * per_node() + 3 * gb + 1);
      return;
    }
    uint32_t per_nic = gpus / nics;
    ids.push_back(na * per_node() + 3 * gpus + 2 * (ga / per_nic));
    ids.push_back(nb * per_node() + 3 * gpus + 2 * (gb / per_nic) + 1);
  }
};

// Torus (TorusZone::get_local_route): host i owns links i*(1+2D) (loopback), then per dimension
// j the link to its neighbour +1 in j: up at +1+2j, down at +2+2j.
struct TorusRouting final : Routing {
  std::vector<uint64_t> dims, prefix;  // prefix[j] = dims[0] * … * dims[j-1]
  uint64_t stride() const { return 1 + 2 * dims.size(); }
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    if (a == b) {
      ids.push_back(static_cast<uint32_t>(a * stride()));
      return;
    }
    const size_t dsize = dims.size();
    uint64_t current = a;
    while (current != b) {
      uint64_t next = 0, link = 0;
      uint64_t dim_product = 1;
      for (size_t j = 0; j < dsize; j++) {
        const uint64_t cur_dim = dims[j];
        if ((current / dim_product) % cur_dim != (b / dim_product) % cur_dim) {
          // The direction is decided from the source's coordinate, as SimGrid does.
          const uint64_t my = (a / prefix[j]) % cur_dim, target = (b / prefix[j]) % cur_dim;
          if ((target > my && target <= my + cur_dim / 2) ||
              (my > cur_dim / 2 && (my + cur_dim / 2) % cur_dim >= target)) {
            next = (current / dim_product) % cur_dim == cur_dim - 1 ? current + dim_product - dim_product * cur_dim
                                                                      : current + dim_product;
            link = current * stride() + 1 + 2 * j;  // the current node's link, up
          } else {
            next = (current / dim_product) % cur_dim == 0 ? current - dim_product + dim_product * cur_dim
                                                          : current - dim_product;
            link = next * stride() + 2 + 2 * j;  // the next node's link, down
          }
          break;
        }
        dim_product *= cur_dim;
      }
      ids.push_back(static_cast<uint32_t>(link));
      current = next;
    }
  }
};

// Fat tree (FatTreeZone): the node and link structure SimGrid builds, and its d-mod-k routing.
struct FtNode {
  int64_t id = 0;  // SimGrid's id (hosts 0…H-1, switches counting down from 2H-1), used in names
  uint32_t level = 0, position = 0;
  std::vector<uint32_t> label;
  std::vector<int32_t> children, parents;  // FtLink indices per port, -1: none
};
struct FtLink {
  uint32_t up_node = 0, down_node = 0;  // node indices
  uint32_t up_link = 0, down_link = 0;  // Platform link ids
};
struct FatTreeRouting final : Routing {
  uint32_t levels = 0;
  std::vector<uint32_t> down, up, nports;  // num_children_per_node_, num_parents_per_node_, num_port_lower_level_
  std::vector<FtNode> nodes;               // hosts first, then switches level by level
  std::vector<FtLink> ftlinks;
  std::vector<uint32_t> loopback;  // per host

  bool is_in_sub_tree(const FtNode& root, const FtNode& node) const {
    if (root.level <= node.level) return false;
    for (uint32_t i = 0; i < node.level; i++)
      if (root.label[i] != node.label[i]) return false;
    for (uint32_t i = root.level; i < levels; i++)
      if (root.label[i] != node.label[i]) return false;
    return true;
  }

  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    if (a == b) {
      ids.push_back(loopback[a]);
      return;
    }
    const FtNode& source = nodes[a];
    const FtNode& destination = nodes[b];
    const FtNode* current = &source;
    while (!is_in_sub_tree(*current, destination)) {  // up, d-mod-k
      uint64_t d = destination.position;
      for (uint32_t i = 0; i < current->level; i++) d /= up[i];
      uint64_t k = static_cast<uint64_t>(up[current->level]) * nports[current->level];
      d = d % k;
      const FtLink& l = ftlinks[static_cast<size_t>(current->parents[d])];
      ids.push_back(l.up_link);
      current = &nodes[l.up_node];
    }
    // Down. As in SimGrid, the inner loop goes on over the new node's ports after a step down.
    size_t guard = 0;
    while (current != &destination) {
      if (current->level == 0 || ++guard > 4 * (levels + 1))
        throw std::logic_error("fat-tree: no route down from " + std::to_string(current->id));
      uint32_t d = source.position % nports[current->level - 1];
      for (uint32_t i = d * down[current->level - 1]; i < current->children.size(); i++) {
        if (i % down[current->level - 1] == destination.label[current->level - 1]) {
          const FtLink& l = ftlinks[static_cast<size_t>(current->children[i])];
          ids.push_back(l.down_link);
          current = &nodes[l.down_node];
        }
      }
    }
  }
};

// Dragonfly (DragonflyZone): routers indexed (group * chassis + chassis) * routers + blade.
struct DfRouter {
  uint32_t group = 0, chassis = 0, blade = 0;
  int64_t blue = -1;
  std::vector<int64_t> black, green, my_nodes;  // my_nodes: per node, up then down
};
struct DragonflyRouting final : Routing {
  uint32_t groups = 0, chassis = 0, blades = 0, nodes = 0;
  std::vector<DfRouter> routers;
  std::vector<uint32_t> loopback;  // per host

  static uint32_t at(int64_t id) {
    if (id < 0) throw std::logic_error("dragonfly: route through a missing link");
    return static_cast<uint32_t>(id);
  }
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    if (a == b) {
      ids.push_back(loopback[a]);
      return;
    }
    auto coords = [this](uint32_t r, uint32_t& g, uint32_t& c, uint32_t& bl, uint32_t& n) {
      g = r / (chassis * blades * nodes);
      r %= chassis * blades * nodes;
      c = r / (blades * nodes);
      r %= blades * nodes;
      bl = r / nodes;
      n = r % nodes;
    };
    uint32_t mg, mc, mb, mn, tg, tc, tb, tn;
    coords(a, mg, mc, mb, mn);
    coords(b, tg, tc, tb, tn);
    const uint32_t cb = chassis * blades;
    const DfRouter* my_router = &routers[mg * cb + mc * blades + mb];
    const DfRouter* target_router = &routers[tg * cb + tc * blades + tb];
    const DfRouter* current = my_router;
    ids.push_back(at(my_router->my_nodes[2 * mn]));
    if (target_router != my_router) {
      if (target_router->group != current->group) {
        if (current->blade != tg) {
          ids.push_back(at(current->green[tg]));
          current = &routers[mg * cb + mc * blades + tg];
        }
        if (current->chassis != 0) {
          ids.push_back(at(current->black[0]));
          current = &routers[mg * cb + tg];
        }
        ids.push_back(at(current->blue));
        current = &routers[tg * cb + mg];
      }
      if (target_router->blade != current->blade) {
        ids.push_back(at(current->green[tb]));
        current = &routers[tg * cb + tb];
      }
      if (target_router->chassis != current->chassis) ids.push_back(at(current->black[tc]));
    }
    ids.push_back(at(target_router->my_nodes[2 * tn + 1]));
  }
};

// Xml: one route per ordered pair, as SimGrid answered.
struct TableRouting final : Routing {
  uint32_t hosts = 0;
  std::vector<uint64_t> offsets;  // hosts * hosts + 1
  std::vector<uint32_t> ids;
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& out) const override {
    uint64_t r = static_cast<uint64_t>(a) * hosts + b;
    out.insert(out.end(), ids.begin() + static_cast<std::ptrdiff_t>(offsets[r]),
               ids.begin() + static_cast<std::ptrdiff_t>(offsets[r + 1]));
  }
};

}  // namespace
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Platform
// ---------------------------------------------------------------------------------------------
void Platform::route(uint32_t a, uint32_t b, std::vector<uint32_t>& link_ids, double& latency) const {
  link_ids.clear();
  latency = 0;
  if (!routing) throw std::logic_error("platform " + spec + ": routes not built yet (build_simgrid fills an XML platform's)");
  if (a >= hosts || b >= hosts)
    throw std::out_of_range("platform " + spec + ": host " + std::to_string(std::max(a, b)) + " of " +
                            std::to_string(hosts));
  routing->route(a, b, link_ids);
  for (uint32_t id : link_ids) latency += links[id].lat;
}

double Platform::route_bw(uint32_t a, uint32_t b) const {
  std::vector<uint32_t> ids;
  double lat = 0;
  route(a, b, ids, lat);
  double bw = std::numeric_limits<double>::infinity();
  for (uint32_t id : ids) bw = std::min(bw, links[id].bw);
  return bw;
}

double Platform::lone_message_time(uint32_t a, uint32_t b, double bytes) const {
  std::vector<uint32_t> ids;
  double lat = 0;
  route(a, b, ids, lat);
  double bw = std::numeric_limits<double>::infinity();
  for (uint32_t id : ids) bw = std::min(bw, links[id].bw);
  if (tcp_gamma > 0 && lat > 0) bw = std::min(bw, tcp_gamma / (2 * lat));
  return lat_factor * lat + (bytes > 0 ? bytes / (bw_factor * bw) : 0.0);
}

std::string Platform::host_name(uint32_t h) const {
  if (kind == PlatformKind::Xml) return h < host_names.size() ? host_names[h] : std::string();
  if (kind == PlatformKind::Nodes) {
    std::string s = "node-";
    s += std::to_string(h / nodes.gpus);
    s += "-gpu-";
    s += std::to_string(h % nodes.gpus);
    return s;
  }
  return "host-" + std::to_string(h);
}

namespace {

std::string fmt_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string fmt_bw(double bytes_per_s) {
  double bits = bytes_per_s * 8;
  const char* units[] = {"bps", "Kbps", "Mbps", "Gbps", "Tbps", "Pbps"};
  int u = 0;
  while (u < 5 && bits >= 1000) {
    bits /= 1000;
    u++;
  }
  std::string s = fmt_num(bits);
  s += units[u];
  return s;
}

std::string fmt_time(double s) {
  if (s == 0) return "0s";
  if (s < 1e-6) return fmt_num(s * 1e9) + "ns";
  if (s < 1e-3) return fmt_num(s * 1e6) + "us";
  if (s < 1) return fmt_num(s * 1e3) + "ms";
  return fmt_num(s) + "s";
}

}  // namespace

std::string Platform::describe() const {
  std::string s = kind_name(kind);
  s += ", ";
  s += std::to_string(hosts);
  s += kind == PlatformKind::Nodes ? " GPUs" : " hosts";
  switch (kind) {
    case PlatformKind::Star:
      s += " on a non-blocking switch, ";
      s += fmt_bw(star.bw);
      s += " per host, ";
      s += fmt_time(star.lat);
      s += " end to end";
      break;
    case PlatformKind::FatTree:
    case PlatformKind::Torus:
    case PlatformKind::Dragonfly: {
      double bw = kind == PlatformKind::FatTree ? fat_tree.bw : kind == PlatformKind::Torus ? torus.bw : dragonfly.bw;
      double lat = kind == PlatformKind::FatTree ? fat_tree.lat : kind == PlatformKind::Torus ? torus.lat : dragonfly.lat;
      s += ", links of ";
      s += fmt_bw(bw);
      s += " and ";
      s += fmt_time(lat);
      s += " per hop";
      break;
    }
    case PlatformKind::Nodes:
      s += " in ";
      s += std::to_string(nodes.count);
      s += " nodes of ";
      s += std::to_string(nodes.gpus);
      s += ", NVLink ";
      s += fmt_bw(nodes.nvlink);
      s += " per GPU, ";
      s += std::to_string(nodes.nics);
      s += " NICs of ";
      s += fmt_bw(nodes.nic);
      s += " per node";
      break;
    case PlatformKind::Xml:
      s += " from ";
      s += xml;
      break;
  }
  s += ", ";
  s += std::to_string(links.size());
  s += " links, model ";
  s += model_name(model);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Spec parsing
// ---------------------------------------------------------------------------------------------
namespace {

constexpr uint64_t kMaxHosts = 1u << 26;  // 67 M hosts: far past anything simulated
constexpr uint64_t kMaxLinks = 1u << 25;  // 33.5 M links, about 2.5 GB of link descriptions

struct Spec {
  std::string kind_text;
  std::vector<std::pair<std::string, std::string>> items;  // key, value (value empty: a bare item)
  std::map<std::string, std::string> given;                // key -> value as given (trimmed)
};

bool parse_count(const std::string& text, uint64_t& out, std::string& why) {
  std::string t = trim(text);
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    why = "'" + t + "' is not a whole number";
    return false;
  }
  auto r = std::from_chars(t.data(), t.data() + t.size(), out);
  if (r.ec != std::errc() || out > kMaxHosts) {
    why = "'" + t + "' is too large";
    return false;
  }
  return true;
}

bool parse_list(const std::string& text, std::vector<uint32_t>& out, std::string& why) {
  out.clear();
  std::string t = trim(text);
  size_t start = 0;
  while (true) {
    size_t x = t.find('x', start);
    std::string part = t.substr(start, x == std::string::npos ? std::string::npos : x - start);
    uint64_t v = 0;
    if (!parse_count(part, v, why)) {
      why = "'" + t + "': " + why + " (a list is written AxBxC)";
      return false;
    }
    if (v == 0) {
      why = "'" + t + "': every entry must be at least 1";
      return false;
    }
    out.push_back(static_cast<uint32_t>(v));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return true;
}

std::string join_list(const std::vector<uint32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); i++) {
    if (i) s += 'x';
    s += std::to_string(v[i]);
  }
  return s;
}

uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint64_t ceil_sqrt(uint64_t m) {
  uint64_t x = static_cast<uint64_t>(std::sqrt(static_cast<double>(m)));
  while (x * x < m) x++;
  while (x > 1 && (x - 1) * (x - 1) >= m) x--;
  return std::max<uint64_t>(x, 1);
}

// The torus dimensions sized for n hosts: the smallest largest dimension, then the fewest hosts;
// three dimensions, largest first, 1s dropped.
std::vector<uint32_t> torus_dims_for(uint64_t n) {
  uint64_t best_a = 0, best_b = 0, best_c = 0, best_prod = 0;
  for (uint64_t a = 1;; a++) {
    if (a * a * a < n) continue;
    for (uint64_t b = 1; b <= a; b++)
      for (uint64_t c = 1; c <= b; c++) {
        uint64_t p = a * b * c;
        if (p >= n && (best_prod == 0 || p < best_prod)) {
          best_prod = p;
          best_a = a, best_b = b, best_c = c;
        }
      }
    break;
  }
  std::vector<uint32_t> d;
  for (uint64_t v : {best_a, best_b, best_c})
    if (v > 1) d.push_back(static_cast<uint32_t>(v));
  if (d.empty()) d.push_back(1);
  return d;
}

// The builder of one platform: the keys the kind takes, what was given, the links made.
class Builder {
 public:
  Builder(const std::string& kind, Spec& s, Platform& p, std::string& err) : kind_(kind), s_(s), p_(p), err_(err) {}

  bool fail(const std::string& msg) {
    err_ = kind_ + ": " + msg;
    return false;
  }
  bool fail_key(const std::string& key, const std::string& why) {
    std::string v = s_.given.count(key) ? s_.given.at(key) : "";
    err_ = kind_;
    err_ += ": ";
    err_ += key;
    err_ += '=';
    err_ += v;
    err_ += ": ";
    err_ += why;
    return false;
  }

  // Every key must be one of `keys` (a bare item only where `bare_ok`).
  bool check_keys(std::initializer_list<const char*> keys, bool bare_ok) {
    for (auto& [k, v] : s_.items) {
      if (v.empty() && bare_ok) continue;
      if (std::find_if(keys.begin(), keys.end(), [&k = k](const char* x) { return k == x; }) == keys.end()) {
        std::string list;
        for (const char* x : keys) {
          if (!list.empty()) list += ", ";
          list += x;
        }
        if (v.empty()) return fail("'" + k + "' is not key=value (keys: " + list + ")");
        return fail("unknown key '" + k + "' (keys: " + list + ")");
      }
    }
    return true;
  }

  bool has(const char* key) const { return s_.given.count(key) != 0; }

  bool bw(const char* key, const char* def, double& out) {
    std::string why;
    if (!has(key)) return parse_bandwidth(def, out, why);
    if (!parse_bandwidth(s_.given.at(key), out, why)) return fail_key(key, why);
    if (out <= 0) return fail_key(key, "a bandwidth must be positive");
    return true;
  }
  bool time(const char* key, const char* def, double& out) {
    std::string why;
    if (!has(key)) return parse_time(def, out, why);
    if (!parse_time(s_.given.at(key), out, why)) return fail_key(key, why);
    return true;
  }
  bool count(const char* key, uint64_t& out, bool& given) {
    given = has(key);
    if (!given) return true;
    std::string why;
    if (!parse_count(s_.given.at(key), out, why)) return fail_key(key, why);
    if (out == 0) return fail_key(key, "must be at least 1");
    return true;
  }
  bool list(const char* key, std::vector<uint32_t>& out) {
    std::string why;
    if (!parse_list(s_.given.at(key), out, why)) return fail_key(key, why);
    return true;
  }

  // speed, loopback, loopback_lat, model: every kind takes them.
  bool common(double default_speed, double loopback_default) {
    std::string why;
    p_.speed = default_speed;
    if (has("speed")) {
      if (!parse_flops(s_.given.at("speed"), p_.speed, why)) return fail_key("speed", why);
      if (p_.speed <= 0) return fail_key("speed", "must be positive");
    }
    p_.loopback_bw = loopback_default;
    if (has("loopback") && !bw("loopback", "", p_.loopback_bw)) return false;
    if (!time("loopback_lat", "0s", p_.loopback_lat)) return false;
    return model();
  }

  bool model() {
    if (has("model")) {
      std::string m = s_.given.at("model");
      std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
      if (m == "ideal")
        p_.model = NetModel::Ideal;
      else if (m == "lv08" || m == "default")
        p_.model = NetModel::Lv08;
      else if (m == "cm02")
        p_.model = NetModel::Cm02;
      else
        return fail_key("model", "unknown model (ideal, lv08 or cm02)");
    }
    return true;
  }

  using Parts = std::vector<std::pair<std::string, std::string>>;
  std::string given_or(const char* key, const char* def) const { return has(key) ? s_.given.at(key) : def; }
  void add_given(Parts& parts, const char* key) const {
    if (has(key)) parts.emplace_back(key, s_.given.at(key));
  }

  // The normalised spec: the kind, `parts` in order (an empty key: a bare value), then speed,
  // loopback and loopback_lat where given, then the model.
  void normalise(Parts parts) {
    for (const char* k : {"speed", "loopback", "loopback_lat"}) add_given(parts, k);
    parts.emplace_back("model", model_name(p_.model));
    std::string s = kind_;
    char sep = ':';
    for (auto& [k, v] : parts) {
      s += sep;
      sep = ',';
      if (!k.empty()) {
        s += k;
        s += '=';
      }
      s += v;
    }
    p_.spec = s;
  }

  uint32_t add_link(std::string name, double bw, double lat, bool shared = true) {
    p_.links.push_back(LinkInfo{std::move(name), bw, lat, shared});
    return static_cast<uint32_t>(p_.links.size() - 1);
  }
  uint32_t add_loopback(uint32_t host) {
    return add_link(p_.host_name(host) + "_loopback", p_.loopback_bw, p_.loopback_lat, false);
  }
  // A split-duplex link: name_UP then name_DOWN; returns the UP id (DOWN is +1).
  uint32_t add_duplex(const std::string& name, double bw, double lat) {
    uint32_t up = add_link(name + "_UP", bw, lat);
    add_link(name + "_DOWN", bw, lat);
    return up;
  }

  bool enough_hosts(uint64_t hosts) {
    if (hosts > kMaxHosts) return fail(std::to_string(hosts) + " hosts is too many");
    if (hosts < p_.ranks)
      return fail(std::to_string(hosts) + " hosts, but " + std::to_string(p_.ranks) + " ranks need " +
                  std::to_string(p_.ranks));
    p_.hosts = static_cast<uint32_t>(hosts);
    return true;
  }

  bool not_too_many_links(uint64_t n) {
    if (n <= kMaxLinks) return true;
    return fail("these sizes make " + std::to_string(n) + " links (at most " + std::to_string(kMaxLinks) +
                "); give smaller sizes");
  }

  bool star();
  bool fat_tree();
  bool torus();
  bool dragonfly();
  bool nodes();

 private:
  std::string kind_;
  Spec& s_;
  Platform& p_;
  std::string& err_;
};

bool Builder::star() {
  if (!check_keys({"hosts", "bw", "lat", "speed", "loopback", "loopback_lat", "model"}, false)) return false;
  uint64_t hosts = std::max<uint32_t>(p_.ranks, 1);
  bool given = false;
  if (!count("hosts", hosts, given)) return false;
  if (!bw("bw", "100Gbps", p_.star.bw) || !time("lat", "1us", p_.star.lat)) return false;
  if (!common(1e12, p_.star.bw) || !enough_hosts(hosts) || !not_too_many_links(3 * hosts)) return false;
  normalise({{"hosts", std::to_string(hosts)}, {"bw", given_or("bw", "100Gbps")}, {"lat", given_or("lat", "1us")}});
  p_.links.reserve(3 * static_cast<size_t>(p_.hosts));
  std::string name;
  for (uint32_t h = 0; h < p_.hosts; h++) {
    name = "host-";
    name += std::to_string(h);
    size_t stem = name.size();
    name += "_link_UP";
    add_link(name, p_.star.bw, p_.star.lat / 2);
    name.resize(stem);
    name += "_link_DOWN";
    add_link(name, p_.star.bw, p_.star.lat / 2);
    name.resize(stem);
    name += "_loopback";
    add_link(name, p_.loopback_bw, p_.loopback_lat, false);
  }
  p_.routing = std::make_shared<detail::StarRouting>();
  return true;
}

bool Builder::fat_tree() {
  if (!check_keys({"levels", "down", "up", "links", "leaves", "per_leaf", "oversub", "bw", "lat", "speed", "loopback",
                   "loopback_lat", "model"},
                  false))
    return false;
  auto& ft = p_.fat_tree;
  bool general = has("levels") || has("down") || has("up") || has("links");
  bool short_form = has("leaves") || has("per_leaf") || has("oversub");
  if (general && short_form)
    return fail("give either levels/down/up/links (SimGrid's fat tree) or leaves/per_leaf/oversub (a leaf-spine tree), not both");
  Parts sized;
  if (general) {
    if (!has("down")) return fail("down= is required with levels/up/links (children per node, bottom level first, e.g. down=8x4)");
    if (!list("down", ft.down)) return false;
    uint64_t levels = ft.down.size();
    bool given = false;
    if (!count("levels", levels, given)) return false;
    if (levels != ft.down.size())
      return fail_key("levels", "down= has " + std::to_string(ft.down.size()) + " entries");
    ft.up.assign(levels, 1);
    ft.links.assign(levels, 1);
    if (has("up") && !list("up", ft.up)) return false;
    if (has("links") && !list("links", ft.links)) return false;
    if (ft.up.size() != levels) return fail_key("up", "needs " + std::to_string(levels) + " entries, one per level");
    if (ft.links.size() != levels)
      return fail_key("links", "needs " + std::to_string(levels) + " entries, one per level");
    sized = {{"levels", std::to_string(levels)},
             {"down", join_list(ft.down)},
             {"up", join_list(ft.up)},
             {"links", join_list(ft.links)}};
  } else {
    uint64_t per_leaf = 16, leaves = 0;
    bool g1 = false, g2 = false;
    if (!count("per_leaf", per_leaf, g1) || !count("leaves", leaves, g2)) return false;
    if (!g2) leaves = cdiv(std::max<uint32_t>(p_.ranks, 1), per_leaf);
    double oversub = 1;
    std::string why;
    if (has("oversub")) {
      double v = 0;
      std::string unit;
      if (!split_number(s_.given.at("oversub"), v, unit, why)) return fail_key("oversub", why);
      if (!unit.empty() || v <= 0) return fail_key("oversub", "a positive number (hosts per leaf / spine switches)");
      oversub = v;
    }
    double spines_d = static_cast<double>(per_leaf) / oversub;
    uint64_t spines = static_cast<uint64_t>(std::llround(spines_d));
    if (spines < 1 || std::fabs(spines_d - static_cast<double>(spines)) > 1e-9 * spines_d)
      return fail_key("oversub", "per_leaf / oversub = " + std::to_string(per_leaf) + " / " + fmt_num(oversub) +
                                     " must be a whole number of spine switches");
    if (leaves > kMaxHosts || spines > kMaxHosts) return fail("too many switches");
    ft.down = {static_cast<uint32_t>(per_leaf), static_cast<uint32_t>(leaves)};
    ft.up = {1, static_cast<uint32_t>(spines)};
    ft.links = {1, 1};
    sized = {{"leaves", std::to_string(leaves)}, {"per_leaf", std::to_string(per_leaf)}};
    if (has("oversub")) sized.emplace_back("oversub", s_.given.at("oversub"));
  }
  if (!bw("bw", "100Gbps", ft.bw) || !time("lat", "1us", ft.lat)) return false;
  if (!common(1e12, ft.bw)) return false;
  uint64_t hosts = 1;
  for (uint32_t d : ft.down) {
    hosts *= d;
    if (hosts > kMaxHosts) return fail("too many hosts");
  }
  if (!enough_hosts(hosts)) return false;
  sized.emplace_back("bw", given_or("bw", "100Gbps"));
  sized.emplace_back("lat", given_or("lat", "1us"));
  normalise(sized);

  // FatTreeZone's construction, step by step.
  auto r = std::make_shared<detail::FatTreeRouting>();
  const uint32_t L = static_cast<uint32_t>(ft.down.size());
  r->levels = L;
  r->down = ft.down;
  r->up = ft.up;
  r->nports = ft.links;
  const uint64_t H = hosts;
  std::vector<uint64_t> nbl(L + 1);
  nbl[0] = H;
  uint64_t total = H;
  for (uint32_t i = 0; i < L; i++) {
    uint64_t n = 1;
    for (uint32_t j = 0; j <= i; j++) n *= ft.up[j];
    for (uint32_t j = i + 1; j < L; j++) n *= ft.down[j];
    nbl[i + 1] = n;
    total += n;
    if (total > 4 * kMaxHosts) return fail("too many switches");
  }
  {
    uint64_t nlinks = H;  // loopbacks
    for (uint32_t i = 0; i < L; i++) nlinks += 2 * nbl[i] * ft.up[i] * ft.links[i];
    if (!not_too_many_links(nlinks)) return false;
  }
  r->nodes.resize(total);
  r->loopback.resize(H);
  for (uint32_t h = 0; h < H; h++) {
    r->loopback[h] = add_loopback(h);  // created in the leaf callback, before the tree's links
    auto& n = r->nodes[h];
    n.id = h;
    n.level = 0;
    n.position = h;
    n.parents.assign(static_cast<size_t>(ft.up[0]) * ft.links[0], -1);
    n.label.assign(L, 0);
  }
  {
    int64_t k = 2 * static_cast<int64_t>(H);
    size_t idx = H;
    for (uint32_t i = 0; i < L; i++)
      for (uint64_t j = 0; j < nbl[i + 1]; j++) {
        k--;
        auto& n = r->nodes[idx++];
        n.id = static_cast<int32_t>(k);
        n.level = i + 1;
        n.position = static_cast<uint32_t>(j);
        n.children.assign(static_cast<size_t>(ft.down[i]) * ft.links[i], -1);
        if (i != L - 1) n.parents.assign(static_cast<size_t>(ft.up[i + 1]) * ft.links[i + 1], -1);
        n.label.assign(L, 0);
      }
  }
  {  // generate_labels
    size_t k = 0;
    std::vector<uint32_t> max_label(L), current(L);
    for (uint32_t i = 0; i <= L; i++) {
      std::fill(current.begin(), current.end(), 0);
      for (uint32_t j = 0; j < L; j++) max_label[j] = j + 1 > i ? ft.down[j] : ft.up[j];
      for (uint64_t j = 0; j < nbl[i]; j++) {
        r->nodes[k].label = current;
        bool remainder = true;
        uint32_t pos = 0;
        while (remainder && pos < L) {
          ++current[pos];
          if (current[pos] >= max_label[pos]) {
            current[pos] = 0;
            remainder = true;
            ++pos;
          } else {
            pos = 0;
            remainder = false;
          }
        }
        k++;
      }
    }
  }
  {  // connect_node_to_parents, level by level
    uint64_t unique_id = 0;
    std::vector<uint64_t> level_start(L + 2, 0);
    for (uint32_t i = 0; i <= L; i++) level_start[i + 1] = level_start[i] + nbl[i];
    auto related = [&](const detail::FtNode& parent, const detail::FtNode& child) {
      if (parent.level != child.level + 1) return false;
      for (uint32_t i = 0; i < L; i++)
        if (parent.label[i] != child.label[i] && i + 1 != parent.level) return false;
      return true;
    };
    for (uint32_t lvl = 0; lvl < L; lvl++)
      for (uint64_t c = level_start[lvl]; c < level_start[lvl + 1]; c++) {
        auto& child = r->nodes[c];
        for (uint64_t pi = level_start[lvl + 1]; pi < level_start[lvl + 2]; pi++) {
          auto& parent = r->nodes[pi];
          if (!related(parent, child)) continue;
          for (uint32_t j = 0; j < ft.links[lvl]; j++) {
            uint32_t parent_port = child.label[lvl] + j * ft.down[lvl];
            uint32_t child_port = parent.label[lvl] + j * ft.up[lvl];
            std::string name = "link_from_" + std::to_string(child.id);
            name += '_';
            name += std::to_string(parent.id);
            name += '_';
            name += std::to_string(unique_id++);
            detail::FtLink l;
            l.up_node = static_cast<uint32_t>(pi);
            l.down_node = static_cast<uint32_t>(c);
            l.up_link = add_duplex(name, ft.bw, ft.lat);
            l.down_link = l.up_link + 1;
            int32_t li = static_cast<int32_t>(r->ftlinks.size());
            r->ftlinks.push_back(l);
            parent.children.at(parent_port) = li;
            child.parents.at(child_port) = li;
          }
        }
      }
  }
  p_.routing = r;
  return true;
}

bool Builder::torus() {
  if (!check_keys({"dims", "bw", "lat", "speed", "loopback", "loopback_lat", "model"}, true)) return false;
  auto& t = p_.torus;
  std::string dims_text;
  for (auto& [k, v] : s_.items)
    if (v.empty()) {
      if (!dims_text.empty() || has("dims")) return fail("the dimensions are given twice ('" + k + "')");
      dims_text = k;
    }
  if (has("dims")) dims_text = s_.given.at("dims");
  if (!dims_text.empty()) {
    std::string why;
    if (!parse_list(dims_text, t.dims, why)) return fail("dimensions " + why);
  } else {
    t.dims = torus_dims_for(std::max<uint32_t>(p_.ranks, 1));
  }
  uint64_t hosts = 1;
  for (uint32_t d : t.dims) {
    hosts *= d;
    if (hosts > kMaxHosts) return fail("too many hosts");
  }
  if (!bw("bw", "100Gbps", t.bw) || !time("lat", "1us", t.lat)) return false;
  if (!common(1e12, t.bw) || !enough_hosts(hosts) || !not_too_many_links(hosts * (1 + 2 * t.dims.size())))
    return false;
  normalise({{"", join_list(t.dims)}, {"bw", given_or("bw", "100Gbps")}, {"lat", given_or("lat", "1us")}});
  auto r = std::make_shared<detail::TorusRouting>();
  r->dims.assign(t.dims.begin(), t.dims.end());
  uint64_t prefix = 1;
  for (uint32_t d : t.dims) {
    r->prefix.push_back(prefix);
    prefix *= d;
  }
  const size_t D = t.dims.size();
  for (uint64_t i = 0; i < hosts; i++) {
    add_loopback(static_cast<uint32_t>(i));
    uint64_t dim_product = 1;
    for (size_t j = 0; j < D; j++) {
      uint64_t cur = t.dims[j];
      uint64_t neighbour = (i / dim_product) % cur == cur - 1 ? i - (cur - 1) * dim_product : i + dim_product;
      std::string name = "torus_link_from_" + std::to_string(i);
      name += "_to_";
      name += std::to_string(neighbour);
      add_duplex(name, t.bw, t.lat);
      dim_product *= cur;
    }
  }
  p_.routing = r;
  return true;
}

bool Builder::dragonfly() {
  if (!check_keys({"groups", "chassis", "routers", "nodes", "blue", "black", "green", "bw", "lat", "speed", "loopback",
                   "loopback_lat", "model"},
                  false))
    return false;
  auto& d = p_.dragonfly;
  uint64_t g = 0, c = 1, r = 0, n = 2, blue = 1, black = 1, green = 1;
  bool hg = false, hc = false, hr = false, hn = false, hb = false;
  if (!count("groups", g, hg) || !count("chassis", c, hc) || !count("routers", r, hr) || !count("nodes", n, hn) ||
      !count("blue", blue, hb) || !count("black", black, hb) || !count("green", green, hb))
    return false;
  const uint64_t need = std::max<uint32_t>(p_.ranks, 1);
  if (!hn && hg && hr) n = std::max<uint64_t>(1, cdiv(need, g * c * r));
  if (!hg && !hr) {
    g = r = ceil_sqrt(cdiv(need, c * n));
  } else if (!hg) {
    g = std::max<uint64_t>(1, cdiv(need, c * r * n));
  } else if (!hr) {
    r = std::max<uint64_t>(g, cdiv(need, g * c * n));
  }
  if (g > r)
    return fail("groups=" + std::to_string(g) + " exceeds routers=" + std::to_string(r) +
                ": SimGrid links group j to router j of each group's first chassis, so groups <= routers (per chassis)");
  if (g * c > kMaxHosts || g * c * r > kMaxHosts || g * c * r * n > kMaxHosts) return fail("too many hosts");
  uint64_t hosts = g * c * r * n;
  if (!bw("bw", "100Gbps", d.bw) || !time("lat", "1us", d.lat)) return false;
  if (!common(1e12, d.bw) || !enough_hosts(hosts)) return false;
  if (!not_too_many_links(hosts + 2 * (g * c * r * n + g * c * r * (r - 1) / 2 + g * r * c * (c - 1) / 2 +
                                       g * (g - 1) / 2)))
    return false;
  d.groups = static_cast<uint32_t>(g);
  d.chassis = static_cast<uint32_t>(c);
  d.routers = static_cast<uint32_t>(r);
  d.nodes = static_cast<uint32_t>(n);
  d.blue = static_cast<uint32_t>(blue);
  d.black = static_cast<uint32_t>(black);
  d.green = static_cast<uint32_t>(green);
  Parts parts = {{"groups", std::to_string(g)},
                 {"chassis", std::to_string(c)},
                 {"routers", std::to_string(r)},
                 {"nodes", std::to_string(n)}};
  for (const char* k : {"blue", "black", "green"}) add_given(parts, k);
  parts.emplace_back("bw", given_or("bw", "100Gbps"));
  parts.emplace_back("lat", given_or("lat", "1us"));
  normalise(parts);

  auto rt = std::make_shared<detail::DragonflyRouting>();
  const uint32_t G = d.groups, C = d.chassis, B = d.routers, N = d.nodes;
  rt->groups = G;
  rt->chassis = C;
  rt->blades = B;
  rt->nodes = N;
  rt->loopback.resize(hosts);
  for (uint64_t h = 0; h < hosts; h++) rt->loopback[h] = add_loopback(static_cast<uint32_t>(h));
  const uint32_t num_routers = G * C * B;
  rt->routers.resize(num_routers);
  for (uint32_t i = 0; i < G; i++)
    for (uint32_t j = 0; j < C; j++)
      for (uint32_t k = 0; k < B; k++) {
        auto& ro = rt->routers[(i * C + j) * B + k];
        ro.group = i;
        ro.chassis = j;
        ro.blade = k;
      }
  uint64_t uid = 0;
  auto id_tail = [&uid]() {
    std::string t = "_";
    t += std::to_string(uid);
    return t;
  };
  for (uint32_t i = 0; i < num_routers; i++) {
    auto& ro = rt->routers[i];
    ro.my_nodes.assign(2 * static_cast<size_t>(N), -1);
    ro.green.assign(B, -1);
    ro.black.assign(C, -1);
    for (uint32_t j = 0; j < N; j++) {
      std::string name = "local_link_from_router_" + std::to_string(i);
      name += "_to_node_";
      name += std::to_string(j);
      name += id_tail();
      uint32_t up = add_duplex(name, d.bw, d.lat);
      ro.my_nodes[2 * j] = up;
      ro.my_nodes[2 * j + 1] = up + 1;
      uid++;
    }
  }
  for (uint32_t i = 0; i < G * C; i++)
    for (uint32_t j = 0; j < B; j++)
      for (uint32_t k = j + 1; k < B; k++) {
        std::string name = "green_link_in_chassis_" + std::to_string(i % C);
        name += "_between_routers_";
        name += std::to_string(j);
        name += "_and_";
        name += std::to_string(k);
        name += id_tail();
        uint32_t up = add_duplex(name, d.bw * d.green, d.lat);
        rt->routers[i * B + j].green[k] = up;
        rt->routers[i * B + k].green[j] = up + 1;
        uid++;
      }
  for (uint32_t i = 0; i < G; i++)
    for (uint32_t j = 0; j < C; j++)
      for (uint32_t k = j + 1; k < C; k++)
        for (uint32_t l = 0; l < B; l++) {
          std::string name = "black_link_in_group_" + std::to_string(i);
          name += "_between_chassis_";
          name += std::to_string(j);
          name += "_and_";
          name += std::to_string(k);
          name += "_blade_";
          name += std::to_string(l);
          name += id_tail();
          uint32_t up = add_duplex(name, d.bw * d.black, d.lat);
          rt->routers[i * B * C + j * B + l].black[k] = up;
          rt->routers[i * B * C + k * B + l].black[j] = up + 1;
          uid++;
        }
  for (uint32_t i = 0; i < G; i++)
    for (uint32_t j = i + 1; j < G; j++) {
      uint32_t ri = i * B * C + j, rj = j * B * C + i;
      std::string name = "blue_link_between_group_" + std::to_string(i);
      name += "_and_";
      name += std::to_string(j);
      name += "_routers_";
      name += std::to_string(ri);
      name += "_and_";
      name += std::to_string(rj);
      name += id_tail();
      uint32_t up = add_duplex(name, d.bw * d.blue, d.lat);
      rt->routers[ri].blue = up;
      rt->routers[rj].blue = up + 1;
      uid++;
    }
  p_.routing = rt;
  return true;
}

bool Builder::nodes() {
  if (!check_keys({"count", "gpus", "nics", "nvlink", "nvlink_lat", "nic", "nic_lat", "speed", "loopback",
                   "loopback_lat", "model"},
                  false))
    return false;
  auto& nd = p_.nodes;
  uint64_t gpus = 8, count_ = 0, nics = 0;
  bool hg = false, hc = false, hn = false;
  if (!this->count("gpus", gpus, hg) || !this->count("count", count_, hc) || !this->count("nics", nics, hn)) return false;
  if (!hn) nics = gpus;
  if (nics > gpus || gpus % nics != 0)
    return fail_key("nics", "must divide gpus=" + std::to_string(gpus) + " (GPU g uses NIC g / (gpus / nics))");
  if (!hc) count_ = cdiv(std::max<uint32_t>(p_.ranks, 1), gpus);
  if (count_ * gpus > kMaxHosts) return fail("too many GPUs");
  if (!bw("nvlink", "450GBps", nd.nvlink) || !bw("nic", "400Gbps", nd.nic) ||
      !time("nvlink_lat", "1us", nd.nvlink_lat) || !time("nic_lat", "2us", nd.nic_lat))
    return false;
  if (!common(1e15, nd.nvlink) || !enough_hosts(count_ * gpus) || !not_too_many_links(count_ * (3 * gpus + 2 * nics)))
    return false;
  nd.count = static_cast<uint32_t>(count_);
  nd.gpus = static_cast<uint32_t>(gpus);
  nd.nics = static_cast<uint32_t>(nics);
  normalise({{"count", std::to_string(count_)},
             {"gpus", std::to_string(gpus)},
             {"nics", std::to_string(nics)},
             {"nvlink", given_or("nvlink", "450GBps")},
             {"nic", given_or("nic", "400Gbps")},
             {"nvlink_lat", given_or("nvlink_lat", "1us")},
             {"nic_lat", given_or("nic_lat", "2us")}});
  auto r = std::make_shared<detail::NodesRouting>();
  r->gpus = nd.gpus;
  r->nics = nd.nics;
  for (uint32_t n = 0; n < nd.count; n++) {
    for (uint32_t g = 0; g < nd.gpus; g++) {
      uint32_t h = n * nd.gpus + g;
      add_duplex(p_.host_name(h) + "_nvlink", nd.nvlink, nd.nvlink_lat / 2);
      add_loopback(h);
    }
    for (uint32_t k = 0; k < nd.nics; k++) {
      std::string name = "node-" + std::to_string(n);
      name += "-nic-";
      name += std::to_string(k);
      add_duplex(name, nd.nic, nd.nic_lat / 2);
    }
  }
  p_.routing = r;
  return true;
}

void set_model_constants(Platform& p) {
  p.ideal = p.model == NetModel::Ideal;
  switch (p.model) {
    case NetModel::Lv08:  // SimGrid 3.32 surf_network_model_init_LegrandVelho and its flags' defaults
      p.lat_factor = 13.01;
      p.bw_factor = 0.97;
      p.weight_s = 20537;
      p.tcp_gamma = 4194304;
      p.crosstraffic = true;
      break;
    case NetModel::Cm02:
      p.lat_factor = 1;
      p.bw_factor = 1;
      p.weight_s = 0;
      p.tcp_gamma = 4194304;
      p.crosstraffic = true;
      break;
    case NetModel::Ideal:
      p.lat_factor = 1;
      p.bw_factor = 1;
      p.weight_s = 0;
      p.tcp_gamma = 0;
      p.crosstraffic = false;
      break;
  }
}

bool split_items(const std::string& body, Spec& s, const std::string& kind, std::string& err) {
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string item = trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        s.items.emplace_back(item, "");
      } else {
        std::string k = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
        if (k.empty()) {
          err = kind + ": '" + item + "' has no key";
          return false;
        }
        if (v.empty()) {
          err = kind + ": " + k + "= has no value";
          return false;
        }
        if (s.given.count(k)) {
          err = kind + ": " + k + "= is given twice";
          return false;
        }
        s.items.emplace_back(k, v);
        s.given[k] = v;
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

}  // namespace

bool parse_platform(const std::string& spec_in, uint32_t nranks, Platform& out, std::string& err) {
  Platform p;
  p.ranks = nranks;
  err.clear();
  std::string spec = trim(spec_in);
  // @FILE: the spec string is in a file (what `stepgraph calibrate` writes); '#' starts a comment.
  if (!spec.empty() && spec[0] == '@') {
    std::ifstream f(spec.substr(1));
    if (!f) {
      err = "platform file '" + spec.substr(1) + "' cannot be read";
      return false;
    }
    std::string text, line;
    while (std::getline(f, line)) {
      line = trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      if (!text.empty()) text += ',';
      text += line;
    }
    if (text.empty()) {
      err = "platform file '" + spec.substr(1) + "' holds no platform spec";
      return false;
    }
    return parse_platform(text, nranks, out, err);
  }
  if (spec.empty()) {
    err = "empty platform spec (e.g. ";
    err += default_platform_spec();
    err += ')';
    return false;
  }

  // An XML file: the spec is the path, or the path then ",model=…".
  std::string lower = spec;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t xml_end = std::string::npos;
  if (lower.ends_with(".xml"))
    xml_end = spec.size();
  else if (size_t x = lower.find(".xml,"); x != std::string::npos)
    xml_end = x + 4;
  if (xml_end != std::string::npos) {
    p.kind = PlatformKind::Xml;
    p.xml = trim(spec.substr(0, xml_end));
    Spec s;
    if (xml_end < spec.size() && !split_items(spec.substr(xml_end + 1), s, p.xml, err)) return false;
    for (auto& [k, v] : s.items)
      if (k != "model") {
        err = p.xml + ": an XML platform takes only model= (its hosts, links and speeds come from the file), not '" + k +
              "'";
        return false;
      }
    Builder b(p.xml, s, p, err);
    if (!b.model()) return false;
    std::ifstream f(p.xml);
    if (!f) {
      err = "platform file '" + p.xml + "' cannot be read";
      return false;
    }
    p.spec = p.xml + ",model=" + model_name(p.model);
    p.speed = 0;
    set_model_constants(p);
    out = std::move(p);
    return true;
  }

  size_t colon = spec.find(':');
  std::string kind = trim(spec.substr(0, colon));
  std::string body = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  std::string kl = kind;
  std::transform(kl.begin(), kl.end(), kl.begin(), [](unsigned char c) { return std::tolower(c); });
  if (kl == "star")
    p.kind = PlatformKind::Star;
  else if (kl == "fat-tree" || kl == "fattree" || kl == "fat_tree")
    p.kind = PlatformKind::FatTree;
  else if (kl == "torus")
    p.kind = PlatformKind::Torus;
  else if (kl == "dragonfly")
    p.kind = PlatformKind::Dragonfly;
  else if (kl == "nodes")
    p.kind = PlatformKind::Nodes;
  else {
    err = "unknown platform '" + kind + "' (star, fat-tree, torus, dragonfly, nodes, or a SimGrid .xml file)";
    return false;
  }
  Spec s;
  std::string kname = kind_name(p.kind);
  if (!split_items(body, s, kname, err)) return false;
  Builder b(kname, s, p, err);
  bool ok = false;
  switch (p.kind) {
    case PlatformKind::Star: ok = b.star(); break;
    case PlatformKind::FatTree: ok = b.fat_tree(); break;
    case PlatformKind::Torus: ok = b.torus(); break;
    case PlatformKind::Dragonfly: ok = b.dragonfly(); break;
    case PlatformKind::Nodes: ok = b.nodes(); break;
    case PlatformKind::Xml: break;
  }
  if (!ok) return false;
  set_model_constants(p);
  out = std::move(p);
  return true;
}

void set_table_routes(Platform& p, std::vector<LinkInfo> links, const std::vector<std::vector<XmlRoute>>& routes) {
  auto r = std::make_shared<detail::TableRouting>();
  const uint32_t n = static_cast<uint32_t>(routes.size());
  r->hosts = n;
  r->offsets.reserve(static_cast<size_t>(n) * n + 1);
  r->offsets.push_back(0);
  for (uint32_t a = 0; a < n; a++) {
    if (routes[a].size() != n) throw std::invalid_argument("set_table_routes: the route table is not square");
    for (uint32_t b = 0; b < n; b++) {
      for (uint32_t id : routes[a][b].links) {
        if (id >= links.size()) throw std::invalid_argument("set_table_routes: link id out of range");
        r->ids.push_back(id);
      }
      r->offsets.push_back(r->ids.size());
    }
  }
  p.links = std::move(links);
  p.hosts = n;
  p.routing = r;
}

}  // namespace sg::sim
