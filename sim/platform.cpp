// Platforms: what every kind shares. Parsing a spec (@FILE, then the kind's own parser, found in
// the table of kinds), routes and their costs, host names and describe() through the kind's parts.
// The kinds themselves are in sim/platform/ (one file each; the table is sim/platform/kinds.cpp).
#include "sim/platform.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/base/input_file.hpp"
#include "core/base/units.hpp"
#include "sim/platform/kind.hpp"
#include "sim/platform/presets.hpp"

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
namespace {

// A spec read from an @FILE: its lines without comments, joined by commas, and for each line
// where it starts in the joined text and in the file (to point an error back into the file).
struct SpecFileText {
  std::string text;
  std::vector<std::pair<size_t, size_t>> starts;  // (offset in text, offset in the file)
};

SpecFileText join_spec_file(const std::string& file) {
  SpecFileText j;
  size_t pos = 0;
  while (pos < file.size()) {
    size_t nl = file.find('\n', pos);
    size_t end = nl == std::string::npos ? file.size() : nl;
    std::string raw = file.substr(pos, end - pos);
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (!line.empty()) {
      if (!j.text.empty()) j.text += ',';
      j.starts.emplace_back(j.text.size(), pos + raw.find_first_not_of(" \t\n\r"));
      j.text += line;
    }
    pos = end + 1;
  }
  return j;
}

}  // namespace

bool parse_platform(const std::string& spec_in, uint32_t nranks, Platform& out, std::string& err, PlatformErrorAt* at_out) {
  Platform p;
  p.ranks = nranks;
  err.clear();
  PlatformErrorAt at;
  auto refuse = [&]() {
    if (at_out) *at_out = at;
    return false;
  };
  std::string spec = trim(spec_in);
  const size_t lead = spec.empty() ? 0 : spec_in.find(spec[0]);  // where `spec` starts in spec_in
  // @FILE: the spec string is in a file (what `stepgraph calibrate` writes); '#' starts a comment.
  if (!spec.empty() && spec[0] == '@') {
    const std::string path = spec.substr(1);
    std::string file;
    if (!read_input_file(path, file, err)) {
      err = "platform file: " + err;
      return refuse();
    }
    SpecFileText j = join_spec_file(file);
    if (j.text.empty()) {
      err = "platform file '" + path + "' holds no platform spec";
      return refuse();
    }
    // A file naming a file (itself, say) would be read without end.
    if (j.text[0] == '@') {
      err = "platform file '" + path + "' names another (" + j.text.substr(0, j.text.find(',')) + "): it must hold the spec itself";
      return refuse();
    }
    PlatformErrorAt inner;
    if (parse_platform(j.text, nranks, out, err, &inner)) return true;
    at = inner;
    if (at.file.empty() && at.length > 0) {  // a place in the joined text: the same place in the file
      auto it = std::upper_bound(j.starts.begin(), j.starts.end(), std::make_pair(at.offset, SIZE_MAX));
      if (it != j.starts.begin()) {
        --it;
        at.file = path;
        at.offset = it->second + (at.offset - it->first);
      } else {
        at.length = 0;
      }
    }
    return refuse();
  }
  if (spec.empty()) {
    err = "empty platform spec (e.g. ";
    err += default_platform_spec();
    err += ')';
    return refuse();
  }

  // A kind written other than KIND[:ITEMS] (an XML file's path) says so itself.
  for (const detail::Kind& k : detail::kinds()) {
    if (!k.parse_whole) continue;
    p.kind = k.kind;
    std::optional<bool> ok = k.parse_whole(spec, lead, p, err, at);
    if (!ok) continue;
    if (!*ok) return refuse();
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
    at.offset = lead;
    at.length = std::max<size_t>(kind.size(), 1);
    return refuse();
  }
  p.kind = found->kind;
  detail::Spec s;
  // A preset is named as written (its numbers come from the name: sim/platform/presets.hpp).
  std::string kname = detail::find_preset(kl) ? kl : std::string(kind_name(p.kind));
  bool ok = detail::split_items(body, s, kname, err, lead + colon + 1) && found->parse(kname, s, p, err);
  if (!ok) {
    at.offset = s.err_offset;
    at.length = s.err_length;
    return refuse();
  }
  detail::set_model_constants(p);
  out = std::move(p);
  return true;
}

}  // namespace sg::sim
