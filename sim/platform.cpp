// Platforms: what every kind shares. Parsing a spec (@FILE, then the kind's own parser, found in
// the table of kinds), routes and their costs, host names and describe() through the kind's parts.
// The kinds themselves are in sim/platform/ (one file each; the table is sim/platform/kinds.cpp).
#include "sim/platform.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "core/base/units.hpp"
#include "sim/platform/kind.hpp"

namespace sg::sim {

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
// Platform
// ---------------------------------------------------------------------------------------------
void Platform::route(uint32_t a, uint32_t b, std::vector<uint32_t>& link_ids, double& latency) const {
  link_ids.clear();
  latency = 0;
  if (!routing) throw std::logic_error("platform " + spec + ": routes not built yet (build_simgrid fills an XML platform's)");
  if (a >= hosts || b >= hosts)
    throw std::out_of_range("platform " + spec + ": host " + std::to_string(std::max(a, b)) + " of " + std::to_string(hosts));
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
  const detail::Kind* k = detail::find_kind(kind);
  if (k && k->host_name) return k->host_name(*this, h);
  return "host-" + std::to_string(h);
}

std::string Platform::describe() const {
  std::string s = kind_name(kind);
  s += ", ";
  s += std::to_string(hosts);
  if (const detail::Kind* k = detail::find_kind(kind); k && k->describe) k->describe(*this, s);
  else s += " hosts";
  s += ", ";
  s += std::to_string(links.size());
  s += " links, model ";
  s += model_name(model);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Spec parsing
// ---------------------------------------------------------------------------------------------
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
    // A file naming a file (itself, say) would be read without end.
    if (text[0] == '@') {
      err = "platform file '" + spec.substr(1) + "' names another (" + text.substr(0, text.find(',')) + "): it must hold the spec itself";
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

  // A kind written other than KIND[:ITEMS] (an XML file's path) says so itself.
  for (const detail::Kind& k : detail::kinds()) {
    if (!k.parse_whole) continue;
    p.kind = k.kind;
    std::optional<bool> ok = k.parse_whole(spec, p, err);
    if (!ok) continue;
    if (!*ok) return false;
    detail::set_model_constants(p);
    out = std::move(p);
    return true;
  }

  size_t colon = spec.find(':');
  std::string kind = trim(spec.substr(0, colon));
  std::string body = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  std::string kl = kind;
  std::transform(kl.begin(), kl.end(), kl.begin(), [](unsigned char c) { return std::tolower(c); });
  const detail::Kind* found = nullptr;
  for (const detail::Kind& k : detail::kinds())
    if (k.parse && (kl == k.name || std::find(k.also.begin(), k.also.end(), kl) != k.also.end())) found = &k;
  if (!found) {
    // "unknown platform 'ring' (star, fat-tree, torus, dragonfly, nodes, or a SimGrid .xml file)"
    err = "unknown platform '" + kind + "' (";
    const auto& all = detail::kinds();
    for (size_t i = 0; i < all.size(); i++) {
      if (i) err += ", ";
      if (i + 1 == all.size() && all.size() > 1) err += "or ";
      err += all[i].listed_as ? all[i].listed_as : all[i].name;
    }
    err += ')';
    return false;
  }
  p.kind = found->kind;
  detail::Spec s;
  std::string kname = kind_name(p.kind);
  if (!detail::split_items(body, s, kname, err)) return false;
  if (!found->parse(kname, s, p, err)) return false;
  detail::set_model_constants(p);
  out = std::move(p);
  return true;
}

}  // namespace sg::sim
