// The `dragonfly` platform kind: SimGrid's dragonfly (DragonflyZone). Its spec keys and their
// parsing, its sizing from the rank count, its links and minimal routes, its part of describe();
// the zone is dragonfly_simgrid.cpp.
#include <cmath>
#include <stdexcept>

#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

// The parts the table names (sim/platform/kinds.cpp), declared with the table's types: a
// definition below that does not match them does not compile.
ParseFn dragonfly_parse;
DescribeFn dragonfly_describe;

namespace {

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

uint64_t ceil_sqrt(uint64_t m) {
  uint64_t x = static_cast<uint64_t>(std::sqrt(static_cast<double>(m)));
  while (x * x < m) x++;
  while (x > 1 && (x - 1) * (x - 1) >= m) x--;
  return std::max<uint64_t>(x, 1);
}

// build(): the keys, the sizes and the normalised spec, then the links and the routes.
class DragonflyBuilder final : public Builder {
 public:
  using Builder::Builder;
  bool build();
};

bool DragonflyBuilder::build() {
  if (!check_keys(
          {"groups", "chassis", "routers", "nodes", "blue", "black", "green", "bw", "lat", "speed", "loopback", "loopback_lat", "model"},
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
  if (!not_too_many_links(hosts + 2 * (g * c * r * n + g * c * r * (r - 1) / 2 + g * r * c * (c - 1) / 2 + g * (g - 1) / 2))) return false;
  d.groups = static_cast<uint32_t>(g);
  d.chassis = static_cast<uint32_t>(c);
  d.routers = static_cast<uint32_t>(r);
  d.nodes = static_cast<uint32_t>(n);
  d.blue = static_cast<uint32_t>(blue);
  d.black = static_cast<uint32_t>(black);
  d.green = static_cast<uint32_t>(green);
  Parts parts = {
      {"groups", std::to_string(g)}, {"chassis", std::to_string(c)}, {"routers", std::to_string(r)}, {"nodes", std::to_string(n)}};
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

}  // namespace

bool dragonfly_parse(const std::string& name, Spec& s, Platform& p, PlatformReport& rep) {
  return DragonflyBuilder(name, s, p, rep).build();
}

void dragonfly_describe(const Platform& p, std::string& s) { describe_hops(s, p.dragonfly.bw, p.dragonfly.lat); }

}  // namespace sg::sim::detail
