// The parts of one platform kind, and what the kinds share: the route table interface, the spec
// grammar's helpers and the Builder the generated kinds derive from. Internal to sim/ (the public
// header is sim/platform.hpp).
//
// Each kind lives in sim/platform/<kind>.cpp (its spec keys and parsing, its links and Routing,
// its part of describe(), its host names) and, in a SimGrid build, sim/platform/<kind>_simgrid.cpp
// (its SimGrid zone). The table in sim/platform/kinds.cpp lists them; parse_platform, kind_name,
// Platform::describe, Platform::host_name and build_simgrid find a kind's parts there.
//
// The generated kinds' route functions follow SimGrid 3.32's zones line by line (src/kernel/routing/
// {Star,Torus,FatTree,Dragonfly}Zone.cpp), quirks included, because the analytic backend must see
// the very links SimGrid's model shares. The link names are SimGrid's too, which holds as long as
// the process builds one such zone (FatTreeZone and DragonflyZone number links with static
// counters; SimGrid allows one Engine per process anyway).
#pragma once
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/units.hpp"
#include "core/dsl/diagnostics.hpp"
#include "sim/platform.hpp"

namespace simgrid::s4u {  // as simgrid/forward.h declares them: the table names a zone builder in every build
class Engine;
class Host;
}  // namespace simgrid::s4u

namespace sg::sim::detail {

// ---------------------------------------------------------------------------------------------
// Routing tables
// ---------------------------------------------------------------------------------------------
struct Routing {
  virtual ~Routing() = default;
  // Appends the links of the route from a to b (both < hosts) to `ids`.
  virtual void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const = 0;
};

// ---------------------------------------------------------------------------------------------
// The spec grammar (sim/platform/spec.cpp)
// ---------------------------------------------------------------------------------------------
constexpr uint64_t kMaxHosts = 1u << 26;  // 67 M hosts: far past anything simulated
constexpr uint64_t kMaxLinks = 1u << 25;  // 33.5 M links, about 2.5 GB of link descriptions

struct Spec {
  std::string kind_text;
  std::vector<std::pair<std::string, std::string>> items;  // key, value (value empty: a bare item)
  std::map<std::string, std::string> given;                // key -> value as given (trimmed)
  // Where each given value is in the spec text read (offset, length), for an error about it
  // (PlatformReport::error_at).
  std::map<std::string, std::pair<size_t, size_t>> at, key_at;  // a value's place; a key's (or a bare item's)
};

// The text a spec was read from, for pointing its errors into it: the --platform string as given
// (shown as the file "--platform"), or an @FILE (its path and contents; the spec read is its
// lines joined, and `starts` maps a place in that back into the file).
struct SpecText {
  std::string name = "--platform";
  std::string text;
  std::vector<std::pair<size_t, size_t>> starts;  // an @FILE's lines: (offset in the joined text, in the file)
};

// Where the errors of reading or sizing one platform go: located diagnostics in `diags`, their
// Locs in `sm` (the text they point into is added to it on the first error that needs it).
// Each error function returns false, for `return rep.error(…)`.
class PlatformReport {
 public:
  PlatformReport(SourceManager& sm, Diagnostics& diags, const SpecText& spec) : sm_(sm), diags_(diags), spec_(spec) {}
  // An error about the platform as a whole: nowhere in particular.
  bool error(std::string message);
  // An error about `length` bytes from byte `offset` of the spec text read (an @FILE's joined
  // lines mapped back into the file).
  bool error_at(size_t offset, size_t length, std::string message);
  // An error about `length` bytes from byte `offset` of another file (an XML platform's).
  bool error_in(const std::string& name, const std::string& text, size_t offset, size_t length, std::string message);

 private:
  bool error_in_file(uint32_t file, size_t offset, size_t length, std::string message);
  SourceManager& sm_;
  Diagnostics& diags_;
  const SpecText& spec_;
  uint32_t spec_file_ = 0;  // spec_.text in sm_, once added
};

bool parse_count(const std::string& text, uint64_t& out, std::string& why);
bool parse_list(const std::string& text, std::vector<uint32_t>& out, std::string& why);  // AxBxC
std::string join_list(const std::vector<uint32_t>& v);
uint64_t cdiv(uint64_t a, uint64_t b);
// KEY=VALUE and bare items, comma separated, into `s`; errors start with `kind`. `base` is where
// `body` starts in the spec text read (for Spec::at and the error's place).
bool split_items(const std::string& body, Spec& s, const std::string& kind, PlatformReport& rep, size_t base = 0);

// The numbers a platform may hold (docs/sim.md, "Numbers in range"), the same for a spec and an
// XML file: bandwidths from 1 B/s to 1 PB/s, latencies from 0 to 1 hour, host speeds from 1 flop/s
// to 1 Eflop/s. Outside them SimGrid's solver (which drops rates and amounts under 1e-5 and times
// under 1e-9 s) and the analytic engine's sums stop being exact or finite (bw=1e-300bps gave a
// time of 60 digits); inside them no run of any size comes near either edge. Each returns false
// with the reason in `why`.
constexpr double kMinBandwidth = 1;     // bytes/s
constexpr double kMaxBandwidth = 1e15;  // bytes/s (8 Pbps)
constexpr double kMaxLatency = 3600;    // s
constexpr double kMinSpeed = 1;         // flops/s
constexpr double kMaxSpeed = 1e18;      // flops/s
bool bandwidth_in_range(double bytes_per_s, std::string& why);
bool latency_in_range(double s, std::string& why);
bool speed_in_range(double flops, std::string& why);

// An XML platform file's bandwidths, latencies and speeds, checked before SimGrid reads it (SimGrid
// aborts on a negative bandwidth and takes a negative latency): false with the error reported,
// pointing at the value in the file.
bool check_xml_numbers(const std::string& path, const std::string& text, PlatformReport& rep);
// The SimGrid network-model constants of p.model (Platform::lat_factor and the others).
void set_model_constants(Platform& p);

// Numbers for describe(): %.6g; a bandwidth in bits/s with a unit; a time with a unit.
std::string fmt_num(double v);
std::string fmt_bw(double bytes_per_s);
std::string fmt_time(double s);
// describe()'s part for a kind whose links all have one bandwidth and latency (fat-tree, torus,
// dragonfly): " hosts, links of 100Gbps and 1us per hop".
void describe_hops(std::string& s, double bw, double lat);

// The builder of one platform: the keys the kind takes, what was given, the links made. Each
// generated kind derives its own (sim/platform/<kind>.cpp) with the member function that reads
// its keys and makes its links and routes.
class Builder {
 public:
  Builder(const std::string& kind, Spec& s, Platform& p, PlatformReport& rep) : kind_(kind), s_(s), p_(p), rep_(rep) {}

  // An error about the platform as a whole.
  bool fail(const std::string& msg) { return rep_.error(kind_ + ": " + msg); }
  // An error about the key (or bare item) `k`, pointing at it.
  bool fail_at_key(const std::string& k, const std::string& msg) {
    if (auto it = s_.key_at.find(k); it != s_.key_at.end()) return rep_.error_at(it->second.first, it->second.second, kind_ + ": " + msg);
    return fail(msg);
  }
  // An error about the value of `key`, pointing at it.
  bool fail_key(const std::string& key, const std::string& why) {
    std::string v = s_.given.count(key) ? s_.given.at(key) : "";
    std::string msg = kind_;
    msg += ": ";
    msg += key;
    msg += '=';
    msg += v;
    msg += ": ";
    msg += why;
    if (auto it = s_.at.find(key); it != s_.at.end()) return rep_.error_at(it->second.first, it->second.second, std::move(msg));
    return rep_.error(std::move(msg));
  }

  // Every key must be one of `keys` (a bare item only where `bare_ok`).
  bool check_keys(std::initializer_list<const char*> keys, bool bare_ok) {
    for (auto& [k, v] : s_.items) {
      if (v.empty() && bare_ok) continue;
      if (std::find_if(keys.begin(), keys.end(), [&k = k](const char* x) { return k == x; }) == keys.end()) {
        std::string list;
        for (const char* x : keys) {
          if (!list.empty()) list += ", ";
          list += x;
        }
        if (v.empty()) return fail_at_key(k, "'" + k + "' is not key=value (keys: " + list + ")");
        return fail_at_key(k, "unknown key '" + k + "' (keys: " + list + ")");
      }
    }
    return true;
  }

  bool has(const char* key) const { return s_.given.count(key) != 0; }

  bool bw(const char* key, const char* def, double& out) {
    std::string why;
    if (!has(key)) return parse_bandwidth(def, out, why);
    if (!parse_bandwidth(s_.given.at(key), out, why) || !bandwidth_in_range(out, why)) return fail_key(key, why);
    return true;
  }
  bool time(const char* key, const char* def, double& out) {
    std::string why;
    if (!has(key)) return parse_time(def, out, why);
    if (!parse_time(s_.given.at(key), out, why) || !latency_in_range(out, why)) return fail_key(key, why);
    return true;
  }
  // A positive factor (a plain number, 0.01 to 100), `def` where not given.
  bool factor(const char* key, double def, double& out) {
    out = def;
    if (!has(key)) return true;
    const std::string& v = s_.given.at(key);
    char* end = nullptr;
    out = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !(out >= 0.01 && out <= 100))
      return fail_key(key, "a factor from 0.01 to 100 (a plain number: 1 leaves NCCL's figure as it is)");
    return true;
  }
  bool count(const char* key, uint64_t& out, bool& given) {
    given = has(key);
    if (!given) return true;
    std::string why;
    if (!parse_count(s_.given.at(key), out, why)) return fail_key(key, why);
    if (out == 0) return fail_key(key, "must be at least 1");
    return true;
  }
  bool list(const char* key, std::vector<uint32_t>& out) {
    std::string why;
    if (!parse_list(s_.given.at(key), out, why)) return fail_key(key, why);
    return true;
  }

  // speed, loopback, loopback_lat, model: every kind takes them.
  bool common(double default_speed, double loopback_default) {
    std::string why;
    p_.speed = default_speed;
    if (has("speed")) {
      if (!parse_flops(s_.given.at("speed"), p_.speed, why) || !speed_in_range(p_.speed, why)) return fail_key("speed", why);
    }
    p_.loopback_bw = loopback_default;
    if (has("loopback") && !bw("loopback", "", p_.loopback_bw)) return false;
    if (!time("loopback_lat", "0s", p_.loopback_lat)) return false;
    return model();
  }

  bool model() {
    if (has("model")) {
      std::string m = s_.given.at("model");
      std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
      if (m == "ideal") p_.model = NetModel::Ideal;
      else if (m == "lv08" || m == "default") p_.model = NetModel::Lv08;
      else if (m == "cm02") p_.model = NetModel::Cm02;
      else return fail_key("model", "unknown model (ideal, lv08 or cm02)");
    }
    return true;
  }

  using Parts = std::vector<std::pair<std::string, std::string>>;
  std::string given_or(const char* key, const char* def) const { return has(key) ? s_.given.at(key) : def; }
  void add_given(Parts& parts, const char* key) const {
    if (has(key)) parts.emplace_back(key, s_.given.at(key));
  }

  // The normalised spec: the kind, `parts` in order (an empty key: a bare value), then speed,
  // loopback and loopback_lat where given, then the model.
  void normalise(Parts parts) {
    for (const char* k : {"speed", "loopback", "loopback_lat"}) add_given(parts, k);
    parts.emplace_back("model", model_name(p_.model));
    std::string s = kind_;
    char sep = ':';
    for (auto& [k, v] : parts) {
      s += sep;
      sep = ',';
      if (!k.empty()) {
        s += k;
        s += '=';
      }
      s += v;
    }
    p_.spec = s;
  }

  uint32_t add_link(std::string name, double bw, double lat, bool shared = true) {
    p_.links.push_back(LinkInfo{std::move(name), bw, lat, shared});
    return static_cast<uint32_t>(p_.links.size() - 1);
  }
  uint32_t add_loopback(uint32_t host) { return add_link(p_.host_name(host) + "_loopback", p_.loopback_bw, p_.loopback_lat, false); }
  // A split-duplex link: name_UP then name_DOWN; returns the UP id (DOWN is +1).
  uint32_t add_duplex(const std::string& name, double bw, double lat) {
    uint32_t up = add_link(name + "_UP", bw, lat);
    add_link(name + "_DOWN", bw, lat);
    return up;
  }

  bool enough_hosts(uint64_t hosts) {
    if (hosts > kMaxHosts) return fail(std::to_string(hosts) + " hosts is too many");
    if (hosts < p_.ranks)
      return fail(std::to_string(hosts) + " hosts, but " + std::to_string(p_.ranks) + " ranks need " + std::to_string(p_.ranks));
    p_.hosts = static_cast<uint32_t>(hosts);
    return true;
  }

  bool not_too_many_links(uint64_t n) {
    if (n <= kMaxLinks) return true;
    return fail("these sizes make " + std::to_string(n) + " links (at most " + std::to_string(kMaxLinks) + "); give smaller sizes");
  }

 protected:  // each kind's builder (sim/platform/<kind>.cpp) derives from this one
  std::string kind_;
  Spec& s_;
  Platform& p_;
  PlatformReport& rep_;
};

// ---------------------------------------------------------------------------------------------
// The table of kinds (sim/platform/kinds.cpp)
// ---------------------------------------------------------------------------------------------
// A kind written KIND[:ITEMS]: reads the items in `s`, sets p's parameters, normalised spec, links
// and routing (a Builder does the work); errors start with `name`. False with the error reported.
using ParseFn = bool(const std::string& name, Spec& s, Platform& p, PlatformReport& rep);
// A kind written some other way (xml: a file's path): std::nullopt when `spec` is not of this
// kind; otherwise whether it parsed (false with the error reported).
// `base` is where `spec` starts in the spec text read.
using ParseWholeFn = std::optional<bool>(const std::string& spec, size_t base, Platform& p, PlatformReport& rep);
// Appends describe()'s middle, what follows "<kind>, <hosts>" (" hosts on a non-blocking switch, …").
using DescribeFn = void(const Platform& p, std::string& s);
// SimGrid's name of host h.
using HostNameFn = std::string(const Platform& p, uint32_t h);
// SimGrid builds: builds the kind's zone into the engine and sets hosts[i] = host i
// (sim/platform/<kind>_simgrid.cpp; build_simgrid has configured the model and checks the links).
using ZoneFn = void(Platform& p, simgrid::s4u::Engine& e, std::vector<simgrid::s4u::Host*>& hosts);

struct Kind {
  PlatformKind kind;
  const char* name;                     // kind_name(); the KIND of a spec and of the normalised spec
  std::vector<std::string> also{};      // other spellings of KIND a spec may use
  const char* listed_as = nullptr;      // how "unknown platform" names it (nullptr: its name)
  ParseFn* parse = nullptr;             // written KIND[:ITEMS] (the generated kinds)
  ParseWholeFn* parse_whole = nullptr;  // written otherwise (tried first, in table order)
  DescribeFn* describe = nullptr;
  HostNameFn* host_name = nullptr;  // nullptr: host-<h>
  ZoneFn* zone = nullptr;           // nullptr in a build without SimGrid
};

// Every kind, in PlatformKind's order.
const std::vector<Kind>& kinds();
// The kind's line of the table; nullptr for a value the table does not have.
const Kind* find_kind(PlatformKind k);

}  // namespace sg::sim::detail
