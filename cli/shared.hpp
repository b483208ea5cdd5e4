// What the subcommands share: the common flags turned into a resolved target, rank-count lists
// for display, and warnings folded over many N.
#pragma once
#include <algorithm>
#include <cctype>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api.hpp"
#include "cli/commands.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/dsl/session.hpp"
#include "core/pipeline.hpp"

namespace sg::cli {

// An opened target and its rank counts (api/api.hpp).
using Prepared = api::Opened;

// Prints "stepgraph: error: MSG" on stderr; returns 2 (bad input).
int fail(const std::string& msg);
// Bad input found by the library: its located diagnostics (or its message), exit code 2.
int fail(const api::BadInput& e);

using api::params_json;

// "NAME=VALUE" into the pair; false (with the message in `diags`) for anything else.
bool parse_set(const std::string& kv, std::pair<std::string, std::string>& out, Diagnostics& diags);

// --max-memory SIZE: the bound on an instance's estimate; "" is default_memory_limit(). False with
// the message in `diags` ("bad --max-memory 'x' (use e.g. 3GiB, 512MiB, 1000000)"). The one
// parser of it.
bool parse_memory_limit(const std::string& text, uint64_t& out, Diagnostics& diags);

// The shared flags as a typed request (api/api.hpp). Returns 0, or 2 after saying what is wrong.
int target_request(const Common& c, api::TargetRequest& r);

// The first --set NAME=VALUE whose NAME (TARGET:NAME in sim) an earlier one already gave:
// "--set size given twice ('1MiB', then '2MiB'): give each parameter once"; empty when none.
// A repeated key used to be "last wins", silently: a typo'd override hid the value in force.
std::string repeated_set(const std::vector<std::string>& sets);

// Parses the shared flags and opens the target (core/pipeline.hpp; --dump-after parse prints
// the program here). Returns 0, or the exit code to stop with.
int prepare(const Common& c, Prepared& p, bool many);

// The build options for one N of a prepared command: its elaboration options with N set, and
// --dump-after's points printed to `out` under "=== after POINT ===" (with " (N = n)" when
// `label_n`).
BuildOptions build_options(const Common& c, const Prepared& p, uint32_t n, std::ostream& out, bool label_n);

// Prints the session's warnings and notes (not its errors) on stderr.
void print_warnings(const Session& s);

// "3, 5..7, 9" (the -n syntax, ranges inclusive) for a sorted list of rank counts.
std::string rank_ranges(const std::vector<uint32_t>& ns);

// The warnings of a run over many N, one per statement and kind: a chunk size that size / N
// rounds down warns at most rank counts, and 60 copies of one warning would bury everything else.
// The first is printed in full, with the other N that gave it.
class FoldedWarnings {
 public:
  void add(const Diagnostics& diags, uint32_t n) {
    for (const auto& d : diags.all()) {
      if (d.severity != Severity::Warning) continue;
      // The same warning at another N differs only in its numbers.
      std::string key = std::to_string(d.loc.file) + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ":";
      for (char c : d.message)
        if (!std::isdigit(static_cast<unsigned char>(c))) key += c;
      auto it = std::find_if(items_.begin(), items_.end(), [&](const Item& x) { return x.key == key; });
      if (it == items_.end()) items_.push_back(Item{key, d, {n}});
      else if (it->ns.back() != n) it->ns.push_back(n);
    }
  }
  void print(std::ostream& os, const SourceManager& sm) {
    std::stable_sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {  // in source order
      const Loc &x = a.first.loc, &y = b.first.loc;
      return std::tie(x.file, x.line, x.col) < std::tie(y.file, y.line, y.col);
    });
    for (const auto& x : items_) {
      Diagnostic d = x.first;
      if (x.ns.size() > 1)
        d.notes.push_back({Loc{}, "likewise at N = " + rank_ranges(std::vector<uint32_t>(x.ns.begin() + 1, x.ns.end())) +
                                      " (this one is N = " + std::to_string(x.ns[0]) + ")"});
      os << render_diagnostic(d, sm);
    }
  }

 private:
  struct Item {
    std::string key;
    Diagnostic first;
    std::vector<uint32_t> ns;
  };
  std::vector<Item> items_;
};

// "1KiB..1GiB" (doubling from a to b, b included) or "a,b,c" (sizes when `sizes`, else plain
// integers). Returns false with a message in `diags` ("bad range 'a..b' (…)"; the caller names
// the flag).
bool parse_geometric(const std::string& text, bool sizes, std::vector<uint64_t>& out, Diagnostics& diags);

}  // namespace sg::cli
