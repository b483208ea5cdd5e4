// The `nodes` platform kind: GPUs in nodes, NVLink inside a node, NICs between nodes. Its spec
// keys and their parsing, its links and routes, its host names (node-n-gpu-g), its part of
// describe(); the zone is nodes_simgrid.cpp.
#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

// The parts the table names (sim/platform/kinds.cpp), declared with the table's types: a
// definition below that does not match them does not compile.
ParseFn nodes_parse;
DescribeFn nodes_describe;
HostNameFn nodes_host_name;

namespace {

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

// build(): the keys, the sizes and the normalised spec, then the links and the routes.
class NodesBuilder final : public Builder {
 public:
  using Builder::Builder;
  bool build();
};

bool NodesBuilder::build() {
  if (!check_keys({"count", "gpus", "nics", "nvlink", "nvlink_lat", "nic", "nic_lat", "speed", "loopback", "loopback_lat", "model"}, false))
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
  if (!bw("nvlink", "450GBps", nd.nvlink) || !bw("nic", "400Gbps", nd.nic) || !time("nvlink_lat", "1us", nd.nvlink_lat) ||
      !time("nic_lat", "2us", nd.nic_lat))
    return false;
  if (!common(1e15, nd.nvlink) || !enough_hosts(count_ * gpus) || !not_too_many_links(count_ * (3 * gpus + 2 * nics))) return false;
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

}  // namespace

bool nodes_parse(const std::string& name, Spec& s, Platform& p, std::string& err) { return NodesBuilder(name, s, p, err).build(); }

void nodes_describe(const Platform& p, std::string& s) {
  s += " GPUs";
  s += " in ";
  s += std::to_string(p.nodes.count);
  s += " nodes of ";
  s += std::to_string(p.nodes.gpus);
  s += ", NVLink ";
  s += fmt_bw(p.nodes.nvlink);
  s += " per GPU, ";
  s += std::to_string(p.nodes.nics);
  s += " NICs of ";
  s += fmt_bw(p.nodes.nic);
  s += " per node";
}

std::string nodes_host_name(const Platform& p, uint32_t h) {
  std::string s = "node-";
  s += std::to_string(h / p.nodes.gpus);
  s += "-gpu-";
  s += std::to_string(h % p.nodes.gpus);
  return s;
}

}  // namespace sg::sim::detail
