#include "cli/shared.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/base/sizes.hpp"
#include "core/io/output_file.hpp"

namespace sg::cli {

int fail(const std::string& msg) {
  // One write: under a launcher the other ranks' lines go to the same stream at the same moment,
  // and a message written in pieces comes out interleaved with them.
  std::string line = "stepgraph: error: ";
  line.append(msg).append("\n");
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
  std::cerr.flush();
  return 2;
}

bool parse_set(const std::string& kv, std::pair<std::string, std::string>& out, Diagnostics& diags) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) return diags.fail("--set needs NAME=VALUE, got '" + kv + "'");
  out = {kv.substr(0, eq), kv.substr(eq + 1)};
  return true;
}

bool parse_memory_limit(const std::string& text, uint64_t& out, Diagnostics& diags) {
  if (text.empty()) return out = default_memory_limit(), true;
  if (parse_size(text, out)) return true;
  return diags.fail("bad --max-memory '" + text + "' (use e.g. 3GiB, 512MiB, 1000000)");
}

int target_request(const Common& c, api::TargetRequest& r) {
  r.target = c.target;
  Diagnostics diags;
  for (const auto& kv : c.sets) {
    std::pair<std::string, std::string> p;
    if (!parse_set(kv, p, diags)) return fail(diags.messages());
    r.params.push_back(p);
  }
  if (!c.max_memory.empty()) {
    uint64_t limit = 0;
    if (!parse_memory_limit(c.max_memory, limit, diags)) return fail(diags.messages());
    r.max_memory = limit;
  }
  if (!c.ranks.empty() && !parse_rank_list(c.ranks, r.ranks, diags)) return fail("bad -n '" + c.ranks + "': " + diags.messages());
  r.dump_after = c.dump_after;
  return 0;
}

std::string repeated_set(const std::vector<std::string>& sets) {
  for (size_t i = 0; i < sets.size(); ++i) {
    size_t eq = sets[i].find('=');
    if (eq == std::string::npos) continue;
    std::string key = sets[i].substr(0, eq);
    for (size_t j = 0; j < i; ++j)
      if (sets[j].compare(0, eq + 1, sets[i], 0, eq + 1) == 0)
        return "--set " + key + " given twice ('" + sets[j].substr(eq + 1) + "', then '" + sets[i].substr(eq + 1) +
               "'): give each parameter once";
  }
  return {};
}

int check_standard_output(int rc) {
  Diagnostics diags;
  if (flush_standard_output(diags)) return rc;
  return std::max(rc, fail(diags.messages()));
}

int report_internal_error(const InternalError& e) {
  std::cerr << "stepgraph bug: " << e.message() << " (detected at " << e.origin();
  if (e.input().valid()) std::cerr << "; input line " << e.input().line;
  std::cerr << "), please report it with the command line and the schedule\n";
  return kInternalErrorExit;
}

int fail(const api::BadInput& e) {
  if (e.rendered().empty()) return fail(e.what());
  std::cerr << e.rendered();
  return 2;
}

int prepare(const Common& c, Prepared& p, bool many) {
  api::TargetRequest r;
  if (std::string err = repeated_set(c.sets); !err.empty()) return fail(err);
  if (int rc = target_request(c, r)) return rc;
  DumpRequest parse_dump{c.dump_after, [](const std::string& point, const std::string& text) {
                           std::cout << "=== after " << point << " ===\n" << text;
                         }};
  try {
    api::open(r, p, true, &parse_dump);
  } catch (const api::BadInput& e) {
    return fail(e);
  }
  if (!many && p.ns.size() != 1) return fail("this command takes one rank count (-n N), got '" + c.ranks + "'");
  return 0;
}

BuildOptions build_options(const Common& c, const Prepared& p, uint32_t n, std::ostream& out, bool label_n) {
  BuildOptions bo = api::build_options(p, n);
  bo.dump.after = c.dump_after;
  if (!c.dump_after.empty())
    bo.dump.sink = [&out, n, label_n](const std::string& point, const std::string& text) {
      out << "=== after " << point << (label_n ? " (N = " + std::to_string(n) + ")" : std::string()) << " ===\n" << text;
    };
  return bo;
}

void print_warnings(const Session& s) {
  for (const auto& d : s.diags.all())
    if (d.severity != Severity::Error) std::cerr << render_diagnostic(d, s.sources);
}

std::string rank_ranges(const std::vector<uint32_t>& ns) {
  std::string out;
  for (size_t i = 0; i < ns.size();) {
    size_t j = i;
    while (j + 1 < ns.size() && ns[j + 1] == ns[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ns[i]);
    if (j >= i + 2) out += ".." + std::to_string(ns[j]);
    else if (j == i + 1) out += ", " + std::to_string(ns[j]);
    i = j + 1;
  }
  return out;
}

// "a..b" doubles from a up to b (b included); "a,b,c" as listed; mixtures. For rank counts and
// swept sizes alike: a simulation sweep is read on log axes.
bool parse_geometric(const std::string& text, bool sizes, std::vector<uint64_t>& out, Diagnostics& diags) {
  out.clear();
  std::stringstream ss(text);
  std::string item;
  auto value = [&](const std::string& v, uint64_t& x) {
    if (sizes) return parse_size(v, x);
    char* end = nullptr;
    unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end || v[0] == '-') return false;
    x = n;
    return true;
  };
  while (std::getline(ss, item, ',')) {
    auto dots = item.find("..");
    if (dots == std::string::npos) {
      uint64_t x = 0;
      if (!value(item, x)) return diags.fail("bad value '" + item + "'");
      out.push_back(x);
      continue;
    }
    uint64_t a = 0, b = 0;
    if (!value(item.substr(0, dots), a) || !value(item.substr(dots + 2), b) || a == 0 || b < a)
      return diags.fail("bad range '" + item + "' (a..b with 0 < a <= b: a, 2a, 4a, … up to b)");
    for (uint64_t x = a; x <= b; x *= 2) {
      out.push_back(x);
      if (x > b / 2) break;
    }
    if (out.back() != b) out.push_back(b);
  }
  if (out.empty()) return diags.fail("empty");
  return true;
}

bool parse_rank_list(const std::string& s, std::vector<uint32_t>& out, Diagnostics& diags) {
  out.clear();
  if (s.empty()) return diags.fail("empty");
  // (getline drops a trailing empty entry: `-n 4,` must not pass as `-n 4`)
  if (s.front() == ',' || s.back() == ',' || s.find(",,") != std::string::npos) return diags.fail("an empty entry in the list");
  std::stringstream ss(s);
  std::string part;
  auto num = [&](const std::string& t, uint32_t& v) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos)
      return diags.fail("'" + t + "' is not a rank count");
    v = static_cast<uint32_t>(std::stoul(t));
    if (v < 1) return diags.fail("the number of ranks must be at least 1");
    return true;
  };
  while (std::getline(ss, part, ',')) {
    auto dots = part.find("..");
    if (dots == std::string::npos) {
      uint32_t v;
      if (!num(part, v)) return false;
      out.push_back(v);
    } else {
      // a..b every count; a..b:x2 doubling (a, 2a, 4a, … up to b, and b); a..b:+k in steps of k.
      std::string hi = part.substr(dots + 2), how;
      if (auto colon = hi.find(':'); colon != std::string::npos) how = hi.substr(colon + 1), hi = hi.substr(0, colon);
      uint32_t a, b;
      if (!num(part.substr(0, dots), a) || !num(hi, b)) return false;
      if (a > b) return diags.fail("empty range " + part);
      if (how.empty() || how == "+1") {
        if (b - a > 100000) return diags.fail("range " + part + " is too long");
        for (uint32_t v = a; v <= b; ++v) out.push_back(v);
      } else if (how == "x2") {
        for (uint64_t v = a; v <= b; v *= 2) out.push_back(static_cast<uint32_t>(v));
        if (out.back() != b) out.push_back(b);
      } else if (how.size() > 1 && how[0] == '+' && how.find_first_not_of("0123456789", 1) == std::string::npos && how.size() < 10 &&
                 std::stoul(how.substr(1)) > 0) {
        uint32_t k = static_cast<uint32_t>(std::stoul(how.substr(1)));
        if ((b - a) / k > 100000) return diags.fail("range " + part + " is too long");
        for (uint64_t v = a; v <= b; v += k) out.push_back(static_cast<uint32_t>(v));
      } else {
        return diags.fail("'" + how + "' in " + part + " is not a step (a..b:x2 doubles, a..b:+k steps by k)");
      }
    }
  }
  if (out.empty()) return diags.fail("no rank count");
  return true;
}

}  // namespace sg::cli
