// The check `sim` and `exec` run before they time or run a schedule: `verify`'s explicit engine,
// within a small budget, so that a schedule with a defect (a race, a deadlock, an MSCCL flag no
// step posts, a wrong result) is not timed or run as if it were sound. An MSCCL file is always
// checked (at its ngpus, under its bounded connections); a schedule of the language at the N asked
// when that is at most 64 ranks, else at the largest of 64, 32, 16, 8, 4 and 2 it accepts below
// it (said in the result: a defect that shows only at the large N is not seen). Where no N fits
// the budget (steps, time), the result says "not checked" and why.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sg::api {

struct Precheck {
  enum class State : uint8_t { Ok, Defect, NotChecked };
  State state = State::NotChecked;
  uint32_t n = 0;         // the N verified (Ok, Defect)
  std::string semantics;  // "bounded", "rendezvous and eager"
  std::string verdict;    // Defect: verify's verdict name (race, deadlock, …)
  std::string summary;    // Defect: one line, with the first step's file:line
  std::string detail;     // Defect: the counterexample as verify prints it (source lines, carets)
  std::string why_not;    // NotChecked: why

  // One line for a header: "checked: ok (verify at N = 8, rendezvous and eager)",
  // "defect: race (bounded) at f.xml:6: …", "not checked: …".
  std::string line() const;
  // {"state": "ok"|"defect"|"not checked", "n", "semantics", "verdict", "summary", "why_not"}.
  nlohmann::json json() const;
  static Precheck from_json(const nlohmann::json& j);
};

// Budget: graphs of at most kMaxSteps steps, kSeconds of verification.
inline constexpr uint64_t kPrecheckMaxSteps = 200000;
inline constexpr double kPrecheckSeconds = 3.0;

// `rendezvous`: sends complete only once received (exec --transport ipc), so the check uses those
// semantics instead of eager sends.
Precheck precheck(const std::string& target, uint32_t n, const std::vector<std::pair<std::string, std::string>>& sets, uint64_t max_memory,
                  bool rendezvous = false);

}  // namespace sg::api
