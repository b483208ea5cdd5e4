// The xml kind's numbers, checked before SimGrid reads the file (check_xml_numbers, kind.hpp):
// every bandwidth, latency and host speed an attribute gives, read with SimGrid's units, must be
// in the range the generated kinds hold to. SimGrid 3.32 aborts the process on a negative
// bandwidth, takes a negative latency and gives a bandwidth of 0 an endless transfer; the
// analytic engine would print times of inf or below 0. This is a scan of the start tags, not an
// XML parser: SimGrid parses the file and reports its own syntax errors (and units it does not
// know); this finds the numbers and where they are, for a file:line:col error.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

namespace {

enum class Quantity : uint8_t { Bandwidth, Latency, Speed };

struct NumberAttr {
  const char* name;
  Quantity q;
  bool zero_ok;  // 0 means "none" (a cluster's loopback_bw and limiter_link)
};

// The attributes of SimGrid 3.32's DTD (simgrid.dtd, version 4.1) that hold one of these: link and
// backbone (bandwidth, latency), cluster and cabinet (bw, lat, speed, bb_bw, bb_lat, loopback_bw,
// loopback_lat, limiter_link), peer (bw_in, bw_out, lat, speed), host (speed).
constexpr NumberAttr kNumberAttrs[] = {
    {"bandwidth", Quantity::Bandwidth, false},   {"bw", Quantity::Bandwidth, false},         {"bb_bw", Quantity::Bandwidth, false},
    {"bw_in", Quantity::Bandwidth, false},       {"bw_out", Quantity::Bandwidth, false},     {"loopback_bw", Quantity::Bandwidth, true},
    {"limiter_link", Quantity::Bandwidth, true}, {"latency", Quantity::Latency, false},      {"lat", Quantity::Latency, false},
    {"bb_lat", Quantity::Latency, false},        {"loopback_lat", Quantity::Latency, false}, {"speed", Quantity::Speed, false},
};

// SimGrid's units (src/xbt/xbt_parse_units.cpp): bandwidths in bps or Bps with a decimal (k M G T
// P E Z Y) or binary (Ki … Yi) prefix, times in w d h m s ms us ns ps, speeds in f with a decimal
// prefix or flops with a spelled one (kiloflops …); a number without a unit is in the default
// unit (Bps, s, f).
bool unit_factor(Quantity q, const std::string& unit, double& f) {
  static const char* const dec[] = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
  static const char* const bin[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
  static const char* const spelled[] = {"kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta"};
  // `base` with one of the prefixes: the factor of unit, or false.
  auto prefixed = [&](const char* base, double one, const char* const* prefixes, double step) {
    if (unit == base) {
      f = one;
      return true;
    }
    double v = one;
    for (int i = 0; i < 8; i++) {
      v *= step;
      if (unit == std::string(prefixes[i]) + base) {
        f = v;
        return true;
      }
    }
    return false;
  };
  switch (q) {
    case Quantity::Bandwidth:
      if (unit.empty()) {
        f = 1;
        return true;
      }
      return prefixed("Bps", 1, dec, 1e3) || prefixed("Bps", 1, bin, 1024) || prefixed("bps", 0.125, dec, 1e3) ||
             prefixed("bps", 0.125, bin, 1024);
    case Quantity::Latency: {
      static const std::pair<const char*, double> units[] = {{"", 1},  {"w", 604800}, {"d", 86400}, {"h", 3600},  {"m", 60},
                                                             {"s", 1}, {"ms", 1e-3},  {"us", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}};
      for (const auto& [name, factor] : units)
        if (unit == name) {
          f = factor;
          return true;
        }
      return false;
    }
    case Quantity::Speed:
      if (unit.empty()) {
        f = 1;
        return true;
      }
      return prefixed("f", 1, dec, 1e3) || prefixed("flops", 1, spelled, 1e3);
  }
  return false;
}

struct Attr {
  std::string name, value;
  size_t offset;  // of the value in the file
};

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':'; }

// The start tag's attributes from `i` (just past its name) to its '>'; `i` ends past the tag.
// False where the tag is not well formed (SimGrid will say so).
bool read_attributes(const std::string& t, size_t& i, std::vector<Attr>& attrs) {
  attrs.clear();
  for (;;) {
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) i++;
    if (i >= t.size()) return false;
    if (t[i] == '>' || t[i] == '/') {
      i++;
      return true;
    }
    size_t b = i;
    while (i < t.size() && is_name_char(t[i])) i++;
    if (i == b) return false;
    std::string name = t.substr(b, i - b);
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) i++;
    if (i >= t.size() || t[i] != '=') return false;
    i++;
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) i++;
    if (i >= t.size() || (t[i] != '"' && t[i] != '\'')) return false;
    size_t close = t.find(t[i], i + 1);
    if (close == std::string::npos) return false;
    attrs.push_back({name, t.substr(i + 1, close - i - 1), i + 1});
    i = close + 1;
  }
}

// One number of an attribute (one entry of a list): false with the reason where it is out of
// range. What SimGrid cannot read as a number with a unit is left to SimGrid.
bool check_one(const NumberAttr& a, const std::string& text, std::string& why) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s) return true;
  double f = 0;
  if (!unit_factor(a.q, end, f)) return true;
  v *= f;
  if (a.zero_ok && v == 0) return true;
  switch (a.q) {
    case Quantity::Bandwidth: return bandwidth_in_range(v, why);
    case Quantity::Latency: return latency_in_range(v, why);
    case Quantity::Speed: return speed_in_range(v, why);
  }
  return true;
}

}  // namespace

bool check_xml_numbers(const std::string& path, const std::string& t, PlatformReport& rep) {
  std::vector<Attr> attrs;
  size_t i = 0;
  while ((i = t.find('<', i)) != std::string::npos) {
    if (t.compare(i, 4, "<!--") == 0) {  // a comment may hold anything, tags included
      i = t.find("-->", i + 4);
      if (i == std::string::npos) break;
      continue;
    }
    if (t.compare(i, 9, "<![CDATA[") == 0) {
      i = t.find("]]>", i + 9);
      if (i == std::string::npos) break;
      continue;
    }
    size_t b = ++i;
    while (i < t.size() && is_name_char(t[i])) i++;
    if (i == b) continue;  // an end tag, a declaration, a processing instruction
    std::string element = t.substr(b, i - b);
    if (!read_attributes(t, i, attrs)) continue;
    std::string id;
    for (const Attr& a : attrs)
      if (a.name == "id") id = a.value;
    for (const Attr& a : attrs) {
      const NumberAttr* n = nullptr;
      for (const NumberAttr& x : kNumberAttrs)
        if (a.name == x.name) n = &x;
      if (!n) continue;
      // Link bandwidths (a wifi link's, one per rate) and host speeds (one per pstate) may be lists.
      const char* seps = n->q == Quantity::Latency ? "" : ",;";
      size_t from = 0;
      while (from <= a.value.size()) {
        size_t to = a.value.find_first_of(seps, from);
        if (to == std::string::npos) to = a.value.size();
        std::string one = a.value.substr(from, to - from);
        std::string why;
        if (!check_one(*n, trim(one), why)) {
          size_t lead = one.find_first_not_of(" \t\n\r");
          return rep.error_in(path, t, a.offset + from + (lead == std::string::npos ? 0 : lead), std::max<size_t>(trim(one).size(), 1),
                              element + (id.empty() ? "" : " '" + id + "'") + ": " + a.name + "=" + trim(one) + ": " + why);
        }
        from = to + 1;
      }
    }
  }
  return true;
}

}  // namespace sg::sim::detail
