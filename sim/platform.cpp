// TEMPORARY stand-in (star only) until the platform layer lands.
#include "sim/platform.hpp"

#include <cstdlib>
#include <sstream>

namespace sg::sim {

const char* default_platform_spec() { return "star:bw=100Gbps,lat=1us"; }

namespace {
bool number_unit(const std::string& v, double& out) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  std::string u(end);
  if (u == "Gbps") out = x * 1e9 / 8;
  else if (u == "GBps") out = x * 1e9;
  else if (u == "Mbps") out = x * 1e6 / 8;
  else if (u == "us") out = x * 1e-6;
  else if (u == "ns") out = x * 1e-9;
  else if (u == "ms") out = x * 1e-3;
  else if (u == "s" || u.empty()) out = x;
  else if (u == "Tf") out = x * 1e12;
  else if (u == "Gf") out = x * 1e9;
  else return false;
  return true;
}
}  // namespace

bool parse_platform(const std::string& spec, uint32_t nranks, Platform& out, std::string& err) {
  out = Platform{};
  out.spec = spec;
  if (spec.rfind("star", 0) != 0) return err = "only star for now", false;
  double bw = 100e9 / 8, lat = 1e-6;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    std::stringstream ss(spec.substr(colon + 1));
    std::string kv;
    while (std::getline(ss, kv, ',')) {
      auto eq = kv.find('=');
      std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (k == "bw" && number_unit(v, bw)) continue;
      if (k == "lat" && number_unit(v, lat)) continue;
      if (k == "speed" && number_unit(v, out.speed)) continue;
      if (k == "model" && v == "ideal") {
        out.ideal = true;
        continue;
      }
      return err = "bad key '" + kv + "'", false;
    }
  }
  out.hosts = nranks;
  for (uint32_t h = 0; h < nranks; ++h) {
    out.links.push_back({"h" + std::to_string(h) + "_up", bw, lat / 2, true});
    out.links.push_back({"h" + std::to_string(h) + "_down", bw, lat / 2, true});
  }
  return true;
}

void Platform::route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids, double& latency) const {
  ids.clear();
  latency = 0;
  if (a == b) return;
  ids.push_back(2 * a);
  ids.push_back(2 * b + 1);
  latency = links[2 * a].lat + links[2 * b + 1].lat;
}

double Platform::route_bw(uint32_t a, uint32_t b) const {
  if (a == b) return 1e30;
  return std::min(links[2 * a].bw, links[2 * b + 1].bw);
}

}  // namespace sg::sim
