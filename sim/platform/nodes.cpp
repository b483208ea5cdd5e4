// The `nodes` platform kind: GPUs in nodes, NVLink inside a node, NICs between nodes. Its spec
// keys and their parsing, its links and routes, its host names (node-n-gpu-g), its part of
// describe(); the zone is nodes_simgrid.cpp.
#include "sim/platform/kind.hpp"
#include "sim/platform/presets.hpp"

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
  // A preset (sim/platform/presets.hpp) is this kind under a machine's name, with its numbers as
  // the defaults and `nodes=` for count=.
  const Preset* preset = find_preset(kind_);
  if (!check_keys({"count", "nodes", "gpus", "nics", "nvlink", "nvlink_lat", "nic", "nic_lat", "transport", "speed", "loopback",
                   "loopback_lat", "model", "nccl_launch", "nccl_lat", "nccl_bw", "nccl_host"},
                  false))
    return false;
  const char* count_key = preset ? "nodes" : "count";
  if (has(preset ? "count" : "nodes"))
    return fail_at_key(preset ? "count" : "nodes", std::string("the node count is ") + count_key + "= here");
  auto& nd = p_.nodes;
  const std::string def_gpus = preset ? preset->gpus : "8", def_nvlink = preset ? preset->nvlink : "450GBps",
                    def_nic = preset ? preset->nic : "400Gbps";
  // A preset's NVLink hop: NCCL's own figure for one (hwLat[NVLINK] of LL, the least of its
  // protocols: 0.6 µs, tuning.cc:159), so that the link never hides NCCL's per-hop latencies and
  // their calibration (nccl_lat); a plain nodes: platform keeps its round 1 µs.
  const char* def_nvlink_lat = preset ? "0.6us" : "1us";
  uint64_t gpus = std::stoull(def_gpus), count_ = 0, nics = 0;
  bool hg = false, hc = false, hn = false;
  if (!this->count("gpus", gpus, hg) || !this->count(count_key, count_, hc) || !this->count("nics", nics, hn)) return false;
  if (!hn) nics = gpus;
  if (nics > gpus || gpus % nics != 0)
    return fail_key("nics", "must divide gpus=" + std::to_string(gpus) + " (GPU g uses NIC g / (gpus / nics))");
  if (!hc) count_ = cdiv(std::max<uint32_t>(p_.ranks, 1), gpus);
  if (count_ * gpus > kMaxHosts) return fail("too many GPUs");
  if (!bw("nvlink", def_nvlink.c_str(), nd.nvlink) || !bw("nic", def_nic.c_str(), nd.nic) ||
      !time("nvlink_lat", def_nvlink_lat, nd.nvlink_lat) || !time("nic_lat", "2us", nd.nic_lat))
    return false;
  if (!time("nccl_launch", "0s", nd.nccl.launch_s) || !factor("nccl_lat", 1, nd.nccl.lat) || !factor("nccl_bw", 1, nd.nccl.bw) ||
      !time("nccl_host", "36us", nd.nccl.host_s))
    return false;
  std::string transport = given_or("transport", preset ? preset->transport : "ib");
  std::transform(transport.begin(), transport.end(), transport.begin(), [](unsigned char c) { return std::tolower(c); });
  if (transport == "ethernet") transport = "roce";
  if (transport != "ib" && transport != "roce")
    return fail_key("transport", "ib (InfiniBand) or roce (RDMA over Ethernet; also `ethernet`): NCCL's socket transport is not modelled");
  double speed = 1e15;
  std::string why;
  if (preset && !parse_flops(preset->speed, speed, why)) return fail(why);
  if (!common(speed, nd.nvlink) || !enough_hosts(count_ * gpus) || !not_too_many_links(count_ * (3 * gpus + 2 * nics))) return false;
  nd.count = static_cast<uint32_t>(count_);
  nd.gpus = static_cast<uint32_t>(gpus);
  nd.nics = static_cast<uint32_t>(nics);
  nd.preset = preset ? preset->name : "";
  nd.transport = transport;
  // What NCCL's model reads (core/graph/nccl_tuning.hpp): the preset's, else an H100 node's; a
  // NIC or NVLink given here replaces the datasheet's figure in the same proportion to NCCL's own.
  double def_nvlink_Bps = 0, def_nic_Bps = 0;
  parse_bandwidth(def_nvlink, def_nvlink_Bps, why);
  parse_bandwidth(def_nic, def_nic_Bps, why);
  nd.hw = preset ? preset->hw : NcclHardware{};
  nd.hw.gpus_per_node = nd.gpus;
  nd.hw.nics_per_node = nd.nics == nd.gpus ? 0 : nd.nics;
  if (has("nic")) nd.hw.nic_GBps *= nd.nic / def_nic_Bps;
  if (has("nvlink")) nd.hw.nvlink_per_gpu *= nd.nvlink / def_nvlink_Bps;
  normalise({{count_key, std::to_string(count_)},
             {"gpus", std::to_string(gpus)},
             {"nics", std::to_string(nics)},
             {"nvlink", given_or("nvlink", def_nvlink.c_str())},
             {"nic", given_or("nic", def_nic.c_str())},
             {"nvlink_lat", given_or("nvlink_lat", def_nvlink_lat)},
             {"nic_lat", given_or("nic_lat", "2us")}});
  if (preset || has("transport")) {  // (a plain nodes: spec says it only when given)
    std::string& spec = p_.spec;
    size_t at = spec.find(",speed=");
    if (at == std::string::npos) at = spec.find(",loopback");
    if (at == std::string::npos) at = spec.find(",model=");
    spec.insert(at == std::string::npos ? spec.size() : at, ",transport=" + transport);
  }
  for (const char* k : {"nccl_launch", "nccl_lat", "nccl_bw", "nccl_host"})  // a calibration, as given, before the model
    if (has(k)) {
      std::string& spec = p_.spec;
      spec.insert(spec.rfind(",model="), std::string(",") + k + "=" + s_.given.at(k));
    }
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

bool nodes_parse(const std::string& name, Spec& s, Platform& p, PlatformReport& rep) { return NodesBuilder(name, s, p, rep).build(); }

void nodes_describe(const Platform& p, std::string& s) {
  s += " ";
  s += p.nodes.hw.name.empty() ? std::string("GPU") : p.nodes.hw.name;
  s += "s";
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
