// TEMPORARY stand-in (star only) until the platform layer lands; same interface.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sg::sim {

struct LinkInfo {
  std::string name;
  double bw = 0;
  double lat = 0;
  bool shared = true;
};
enum class PlatformKind : uint8_t { Star, FatTree, Torus, Dragonfly, Nodes, Xml };
struct Platform {
  PlatformKind kind = PlatformKind::Star;
  std::string spec;
  bool ideal = false;
  uint32_t hosts = 0;
  double speed = 1e12;
  std::vector<LinkInfo> links;
  std::string xml;
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& link_ids, double& latency) const;
  double route_bw(uint32_t a, uint32_t b) const;
};
bool parse_platform(const std::string& spec, uint32_t nranks, Platform& out, std::string& err);
const char* default_platform_spec();

}  // namespace sg::sim
