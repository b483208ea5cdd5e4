// The unit parsers (core/base/units.hpp): a number, then a unit with an SI (or binary) prefix.
#include "core/base/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

namespace sg {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

// A non-negative finite decimal number followed by a unit.
bool split_number(const std::string& text, double& v, std::string& unit, std::string& why) {
  std::string t = trim(text);
  if (t.empty()) {
    why = "empty value";
    return false;
  }
  if (!(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.')) {
    why = "'" + t + "' is not a number";
    return false;
  }
  auto r = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::fixed | std::chars_format::scientific);
  if (r.ec != std::errc() || !std::isfinite(v)) {
    why = "'" + t + "' is not a number";
    return false;
  }
  unit = t.substr(static_cast<size_t>(r.ptr - t.data()));
  return true;
}

namespace {

// SI prefix (and, where binary is true, Ki Mi Gi Ti Pi).
bool prefix_factor(const std::string& p, bool binary, double& f) {
  static const std::map<std::string, double> si = {{"", 1},    {"k", 1e3},  {"K", 1e3},  {"M", 1e6},
                                                   {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18}};
  static const std::map<std::string, double> bin = {{"Ki", 1024.0},
                                                    {"Mi", 1024.0 * 1024},
                                                    {"Gi", 1024.0 * 1024 * 1024},
                                                    {"Ti", 1024.0 * 1024 * 1024 * 1024},
                                                    {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024}};
  if (auto it = si.find(p); it != si.end()) {
    f = it->second;
    return true;
  }
  if (binary)
    if (auto it = bin.find(p); it != bin.end()) {
      f = it->second;
      return true;
    }
  return false;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool parse_bandwidth(const std::string& text, double& out, std::string& why) {
  static const char* units =
      "bandwidth units: bps Kbps Mbps Gbps Tbps (bits/s), Bps KBps MBps GBps TBps (bytes/s), KiBps MiBps GiBps TiBps";
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit, why)) return false;
  if (unit.empty()) {
    const std::string t = trim(text);  // not "'" + trim(text): GCC 12 reports a false -Wrestrict on it here
    why = "'" + t + "' has no unit (" + units + ")";
    return false;
  }
  double f = 0;
  bool bits = ends_with(unit, "bps"), bytes = ends_with(unit, "Bps");
  if ((!bits && !bytes) || !prefix_factor(unit.substr(0, unit.size() - 3), true, f)) {
    why = "unknown unit '" + unit + "' (" + units + ")";
    return false;
  }
  out = bits ? v * f / 8 : v * f;
  return true;
}

bool parse_time(const std::string& text, double& out, std::string& why) {
  static const char* units = "time units: ns us ms s";
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit, why)) return false;
  // Per second: dividing by an exact power of ten gives the double nearest the literal
  // ("500ns" is exactly 5e-7), which multiplying by 1e-9 would not.
  static const std::map<std::string, double> f = {{"ps", 1e12}, {"ns", 1e9}, {"us", 1e6}, {"\xC2\xB5s", 1e6}, {"ms", 1e3}, {"s", 1.0}};
  if (unit.empty()) {
    const std::string t = trim(text);  // not "'" + trim(text): GCC 12 reports a false -Wrestrict on it here
    why = "'" + t + "' has no unit (" + units + ")";
    return false;
  }
  auto it = f.find(unit);
  if (it == f.end()) {
    why = "unknown unit '" + unit + "' (" + units + ")";
    return false;
  }
  out = v / it->second;
  return true;
}

bool parse_seconds(const std::string& text, double& out, std::string& why) {
  char* end = nullptr;
  double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0' && x >= 0 && std::isfinite(x)) {
    out = x;
    return true;
  }
  return parse_time(text, out, why);
}

bool parse_flops(const std::string& text, double& out, std::string& why) {
  static const char* units = "flop rate units: f Kf Mf Gf Tf Pf (flops per second)";
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit, why)) return false;
  if (unit.empty()) {
    const std::string t = trim(text);  // not "'" + trim(text): GCC 12 reports a false -Wrestrict on it here
    why = "'" + t + "' has no unit (" + units + ")";
    return false;
  }
  std::string p;
  if (ends_with(unit, "flops")) p = unit.substr(0, unit.size() - 5);
  else if (ends_with(unit, "f")) p = unit.substr(0, unit.size() - 1);
  else {
    why = "unknown unit '" + unit + "' (" + units + ")";
    return false;
  }
  double f = 0;
  if (!prefix_factor(p, false, f)) {
    why = "unknown unit '" + unit + "' (" + units + ")";
    return false;
  }
  out = v * f;
  return true;
}

}  // namespace sg
