// The spec grammar the platform kinds share: counts and AxBxC lists, splitting KEY=VALUE items,
// the network models' constants, and the number formats of describe() (sim/platform/kind.hpp).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

std::string fmt_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string fmt_bw(double bytes_per_s) {
  double bits = bytes_per_s * 8;
  const char* units[] = {"bps", "Kbps", "Mbps", "Gbps", "Tbps", "Pbps"};
  int u = 0;
  while (u < 5 && bits >= 1000) {
    bits /= 1000;
    u++;
  }
  std::string s = fmt_num(bits);
  s += units[u];
  return s;
}

std::string fmt_time(double s) {
  if (s == 0) return "0s";
  if (s < 1e-6) return fmt_num(s * 1e9) + "ns";
  if (s < 1e-3) return fmt_num(s * 1e6) + "us";
  if (s < 1) return fmt_num(s * 1e3) + "ms";
  return fmt_num(s) + "s";
}

void describe_hops(std::string& s, double bw, double lat) {
  s += " hosts";
  s += ", links of ";
  s += fmt_bw(bw);
  s += " and ";
  s += fmt_time(lat);
  s += " per hop";
}

bool parse_count(const std::string& text, uint64_t& out, std::string& why) {
  std::string t = trim(text);
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    why = "'" + t + "' is not a whole number";
    return false;
  }
  auto r = std::from_chars(t.data(), t.data() + t.size(), out);
  if (r.ec != std::errc() || out > kMaxHosts) {
    why = "'" + t + "' is too large";
    return false;
  }
  return true;
}

bool parse_list(const std::string& text, std::vector<uint32_t>& out, std::string& why) {
  out.clear();
  std::string t = trim(text);
  size_t start = 0;
  while (true) {
    size_t x = t.find('x', start);
    std::string part = t.substr(start, x == std::string::npos ? std::string::npos : x - start);
    uint64_t v = 0;
    if (!parse_count(part, v, why)) {
      why = "'" + t + "': " + why + " (a list is written AxBxC)";
      return false;
    }
    if (v == 0) {
      why = "'" + t + "': every entry must be at least 1";
      return false;
    }
    out.push_back(static_cast<uint32_t>(v));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return true;
}

std::string join_list(const std::vector<uint32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); i++) {
    if (i) s += 'x';
    s += std::to_string(v[i]);
  }
  return s;
}

uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// v in [lo, hi] and finite; else `why` says which way it is out, with the bound's words.
static bool within(double v, double lo, double hi, const char* below, const char* above, std::string& why) {
  if (std::isfinite(v) && v >= lo && v <= hi) return true;
  why = std::isnan(v) ? "not a number" : v < lo ? below : above;
  return false;
}

bool bandwidth_in_range(double v, std::string& why) {
  return within(v, kMinBandwidth, kMaxBandwidth, "below 1Bps (8bps), the least bandwidth a platform may have",
                "above 1PBps (8Pbps), the most bandwidth a platform may have", why);
}

bool latency_in_range(double v, std::string& why) {
  return within(v, 0, kMaxLatency, "a latency cannot be negative", "above 1 hour (3600s), the most latency a platform may have", why);
}

bool speed_in_range(double v, std::string& why) {
  return within(v, kMinSpeed, kMaxSpeed, "below 1f (one flop per second), the least speed a host may have",
                "above 1Ef (1e18 flops per second), the most speed a host may have", why);
}

void set_model_constants(Platform& p) {
  p.ideal = p.model == NetModel::Ideal;
  switch (p.model) {
    case NetModel::Lv08:  // SimGrid 3.32 surf_network_model_init_LegrandVelho and its flags' defaults
      p.lat_factor = 13.01;
      p.bw_factor = 0.97;
      p.weight_s = 20537;
      p.tcp_gamma = 4194304;
      p.crosstraffic = true;
      break;
    case NetModel::Cm02:
      p.lat_factor = 1;
      p.bw_factor = 1;
      p.weight_s = 0;
      p.tcp_gamma = 4194304;
      p.crosstraffic = true;
      break;
    case NetModel::Ideal:
      p.lat_factor = 1;
      p.bw_factor = 1;
      p.weight_s = 0;
      p.tcp_gamma = 0;
      p.crosstraffic = false;
      break;
  }
}

bool PlatformReport::error(std::string message) {
  diags_.error(Loc{}, std::move(message));
  return false;
}

bool PlatformReport::error_at(size_t offset, size_t length, std::string message) {
  if (!spec_.starts.empty()) {  // a place in the joined lines of an @FILE is the same place in the file
    auto it = std::upper_bound(spec_.starts.begin(), spec_.starts.end(), std::make_pair(offset, SIZE_MAX));
    if (it == spec_.starts.begin()) return error(std::move(message));
    --it;
    offset = it->second + (offset - it->first);
  }
  if (offset > spec_.text.size()) return error(std::move(message));
  if (spec_file_ == 0) spec_file_ = sm_.add(spec_.name, spec_.text);
  return error_in_file(spec_file_, offset, length, std::move(message));
}

bool PlatformReport::error_in(const std::string& name, const std::string& text, size_t offset, size_t length, std::string message) {
  if (offset > text.size()) return error(std::move(message));
  return error_in_file(sm_.add(name, text), offset, length, std::move(message));
}

bool PlatformReport::error_in_file(uint32_t file, size_t offset, size_t length, std::string message) {
  const std::string& text = sm_.file(file).text();
  size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  line_start = line_start == std::string::npos || offset == 0 ? 0 : line_start + 1;
  Loc loc;
  loc.file = file;
  loc.line = static_cast<uint32_t>(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n'));
  loc.col = static_cast<uint32_t>(offset - line_start + 1);
  diags_.error(loc, std::move(message), static_cast<uint32_t>(std::max<size_t>(length, 1)));
  return false;
}

bool split_items(const std::string& body, Spec& s, const std::string& kind, PlatformReport& rep, size_t base) {
  // Where the trimmed text of body[b, e) starts, as an offset into the spec text.
  auto place = [&](size_t b, size_t e) {
    while (b < e && std::isspace(static_cast<unsigned char>(body[b]))) b++;
    return base + b;
  };
  auto fail_at = [&](size_t offset, size_t length, std::string msg) {
    return rep.error_at(offset, std::max<size_t>(length, 1), std::move(msg));
  };
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    size_t end = comma == std::string::npos ? body.size() : comma;
    std::string item = trim(body.substr(start, end - start));
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        s.items.emplace_back(item, "");
        s.key_at.try_emplace(item, place(start, end), item.size());
      } else {
        size_t at_eq = body.find('=', start);
        std::string k = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
        if (k.empty()) return fail_at(place(start, end), item.size(), kind + ": '" + item + "' has no key");
        if (v.empty()) return fail_at(base + at_eq, 1, kind + ": " + k + "= has no value");
        if (s.given.count(k)) return fail_at(place(start, end), item.size(), kind + ": " + k + "= is given twice");
        s.items.emplace_back(k, v);
        s.given[k] = v;
        s.at[k] = {place(at_eq + 1, end), v.size()};
        s.key_at[k] = {place(start, end), k.size()};
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

}  // namespace sg::sim::detail
