// Platforms: what every kind shares. Parsing a spec (@FILE, then the kind's own parser, found in
// the table of kinds), routes and their costs, host names and describe() through the kind's parts.
// The kinds themselves are in sim/platform/ (one file each; the table is sim/platform/kinds.cpp).
#include "sim/platform.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
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
  std::string gamma;                              // the last `# gamma=TIME` comment: the measured reduction speed (`stepgraph calibrate`)
};

SpecFileText join_spec_file(const std::string& file) {
  SpecFileText j;
  size_t pos = 0;
  while (pos < file.size()) {
    size_t nl = file.find('\n', pos);
    size_t end = nl == std::string::npos ? file.size() : nl;
    std::string raw = file.substr(pos, end - pos);
    if (size_t g = raw.find("# gamma="); g != std::string::npos) j.gamma = trim(raw.substr(g + 8));
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

namespace detail {

// What read_platform found: the kind and its items, or a kind written whole (XML), read completely
// (nothing in it depends on the rank count); and the text it came from, for size_platform's errors.
struct ReadSpec {
  const Kind* kind = nullptr;
  std::string kname;  // the name a kind's errors start with (a preset's, as written)
  Spec items;         // KIND[:ITEMS]: the items, with their places
  std::optional<Platform> whole;
  SpecText source;  // the string as given, or the @FILE the spec came from
};

}  // namespace detail

namespace {

// The spec text itself (an @FILE's joined lines, or the string as given) into `r`.
bool read_text(const std::string& spec_in, detail::ReadSpec& r, detail::PlatformReport& rep) {
  std::string spec = trim(spec_in);
  const size_t lead = spec.empty() ? 0 : spec_in.find(spec[0]);  // where `spec` starts in spec_in
  if (spec.empty()) return rep.error(std::string("empty platform spec (e.g. ") + default_platform_spec() + ')');
  // A kind written other than KIND[:ITEMS] (an XML file's path) says so itself.
  for (const detail::Kind& k : detail::kinds()) {
    if (!k.parse_whole) continue;
    Platform p;
    p.kind = k.kind;
    std::optional<bool> ok = k.parse_whole(spec, lead, p, rep);
    if (!ok) continue;
    if (!*ok) return false;
    detail::set_model_constants(p);
    r.kind = &k;
    r.whole = std::move(p);
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
    std::string err = "unknown platform '" + kind + "' (";
    const auto& all = detail::kinds();
    for (size_t i = 0; i < all.size(); i++) {
      if (i) err += ", ";
      if (i + 1 == all.size() && all.size() > 1) err += "or ";
      err += all[i].listed_as ? all[i].listed_as : all[i].name;
    }
    err += ')';
    return rep.error_at(lead, std::max<size_t>(kind.size(), 1), std::move(err));
  }
  r.kind = found;
  // A preset is named as written (its numbers come from the name: sim/platform/presets.hpp).
  r.kname = detail::find_preset(kl) ? kl : std::string(kind_name(found->kind));
  return detail::split_items(body, r.items, r.kname, rep, lead + colon + 1);
}

}  // namespace

bool read_platform(const std::string& spec_in, PlatformChoice& out, SourceManager& sm, Diagnostics& diags) {
  auto r = std::make_shared<detail::ReadSpec>();
  PlatformChoice c;
  c.given = spec_in;
  c.spec = spec_in;
  r->source.text = spec_in;
  detail::PlatformReport rep(sm, diags, r->source);
  std::string spec = spec_in;  // the text read_text reads: the string as given, or an @FILE's lines
  // @FILE: the spec string is in a file (what `stepgraph calibrate` writes); '#' starts a comment.
  if (std::string t = trim(spec_in); !t.empty() && t[0] == '@') {
    const std::string path = t.substr(1);
    InputFile in = read_input_file(path);
    if (!in.ok) return rep.error("platform file: " + in.error);
    SpecFileText j = join_spec_file(in.text);
    if (j.text.empty()) return rep.error("platform file '" + path + "' holds no platform spec");
    // A file naming a file (itself, say) would be read without end.
    if (j.text[0] == '@')
      return rep.error("platform file '" + path + "' names another (" + j.text.substr(0, j.text.find(',')) +
                       "): it must hold the spec itself");
    c.gamma = j.gamma;
    r->source.name = path;
    r->source.text = std::move(in.text);
    r->source.starts = std::move(j.starts);
    spec = j.text;
  }
  if (!read_text(spec, *r, rep)) return false;
  c.read = std::move(r);
  out = std::move(c);
  return true;
}

PlatformChoice default_platform() {
  PlatformChoice c;
  SourceManager sm;
  Diagnostics diags;
  if (!read_platform(default_platform_spec(), c, sm, diags))
    throw std::logic_error("the default platform does not read: " + diags.render(sm));
  c.given.clear();
  return c;
}

bool size_platform(const PlatformChoice& c, uint32_t nranks, Platform& out, SourceManager& sm, Diagnostics& diags) {
  if (!c.read) throw std::logic_error("size_platform: the platform '" + c.spec + "' was not read (read_platform)");
  const detail::ReadSpec& r = *c.read;
  if (r.whole) {
    out = *r.whole;
    out.ranks = nranks;
    return true;
  }
  Platform p;
  p.ranks = nranks;
  p.kind = r.kind->kind;
  detail::Spec s = r.items;  // a kind's parser marks what it used
  detail::PlatformReport rep(sm, diags, r.source);
  if (!r.kind->parse(r.kname, s, p, rep)) return false;
  detail::set_model_constants(p);
  out = std::move(p);
  return true;
}

bool parse_platform(const std::string& spec, uint32_t nranks, Platform& out, SourceManager& sm, Diagnostics& diags) {
  PlatformChoice c;
  return read_platform(spec, c, sm, diags) && size_platform(c, nranks, out, sm, diags);
}

}  // namespace sg::sim
