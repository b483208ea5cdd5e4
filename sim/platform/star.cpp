// The `star` platform kind: hosts on one non-blocking switch (SimGrid's StarZone). Its spec keys
// and their parsing, its links and routes, its part of describe(); the zone is star_simgrid.cpp.
#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

// The parts the table names (sim/platform/kinds.cpp), declared with the table's types: a
// definition below that does not match them does not compile.
ParseFn star_parse;
DescribeFn star_describe;

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

// build(): the keys, the sizes and the normalised spec, then the links and the routes.
class StarBuilder final : public Builder {
 public:
  using Builder::Builder;
  bool build();
};

bool StarBuilder::build() {
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

}  // namespace

bool star_parse(const std::string& name, Spec& s, Platform& p, PlatformReport& rep) { return StarBuilder(name, s, p, rep).build(); }

void star_describe(const Platform& p, std::string& s) {
  s += " hosts";
  s += " on a non-blocking switch, ";
  s += fmt_bw(p.star.bw);
  s += " per host, ";
  s += fmt_time(p.star.lat);
  s += " end to end";
}

}  // namespace sg::sim::detail
