#include "verify/verdict.hpp"

#include <nlohmann/json.hpp>

#include "core/dsl/diagnostics.hpp"

namespace sg::verify {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Unmatched: return "unmatched";
    case Verdict::Deadlock: return "deadlock";
    case Verdict::Race: return "race";
    case Verdict::UndefinedData: return "undefined-data";
    case Verdict::Lifecycle: return "lifecycle";
    case Verdict::WrongResult: return "wrong-result";
    case Verdict::Ok: return "ok";
    case Verdict::Unknown: return "unknown";
  }
  return "unknown";
}

std::string render_text(const Counterexample& cx, const SourceManager& sm) {
  // The first step carries the error; the others are notes with their own source lines.
  Diagnostics d;
  d.set_fold_repeats(false);
  Loc at = cx.steps.empty() ? Loc{} : cx.steps.front().loc;
  std::string head = std::string(verdict_name(cx.verdict)) + " (" + mode_name(cx.mode) + "): " + cx.summary;
  Diagnostic& e = d.error(at, head);
  bool first = true;
  for (const CxStep& s : cx.steps) {
    std::string line = (s.step != kNoStep ? "rank " + std::to_string(s.rank) + " #" + std::to_string(s.step) + " " : "") + s.what +
                       (s.role.empty() ? "" : " [" + s.role + "]") + (s.note.empty() ? "" : ": " + s.note);
    if (first) {
      e.notes.push_back({Loc{}, line});
      first = false;
    } else {
      e.notes.push_back({s.loc, line});
    }
  }
  if (!cx.expected.empty() || !cx.actual.empty()) {
    e.notes.push_back({Loc{}, "expected " + cx.expected});
    e.notes.push_back({Loc{}, "actual   " + cx.actual});
  }
  if (!cx.reason.empty()) e.notes.push_back({Loc{}, cx.reason});
  if (!cx.matching.empty()) {
    std::string m = "in the execution where";
    size_t k = 0;
    for (const auto& [r, s] : cx.matching) {
      if (k++ == 8) {
        m += " …";
        break;
      }
      // Appended piece by piece: a chain of operator+ on temporaries draws GCC 12's false -Wrestrict.
      if (k > 1) m += ',';
      m += " receive #";
      m += std::to_string(r);
      m += " takes send #";
      m += std::to_string(s);
    }
    e.notes.push_back({Loc{}, m});
  }
  return d.render(sm);
}

std::string render_json(const Counterexample& cx, const SourceManager& sm) {
  nlohmann::json j;
  j["verdict"] = verdict_name(cx.verdict);
  j["semantics"] = mode_name(cx.mode);
  j["engine"] = cx.engine;
  j["summary"] = cx.summary;
  nlohmann::json steps = nlohmann::json::array();
  for (const CxStep& s : cx.steps) {
    nlohmann::json x;
    if (s.step != kNoStep) {
      x["step"] = s.step;
      x["rank"] = s.rank;
    }
    x["what"] = s.what;
    x["role"] = s.role;
    if (!s.note.empty()) x["note"] = s.note;
    x["file"] = s.loc.file ? sm.file(s.loc.file).name() : "";
    x["line"] = s.loc.line;
    x["col"] = s.loc.col;
    steps.push_back(x);
  }
  j["steps"] = steps;
  if (!cx.cycle.empty()) j["cycle"] = cx.cycle;
  if (!cx.reason.empty()) j["reason"] = cx.reason;
  if (cx.rank >= 0) j["rank"] = cx.rank;
  if (!cx.chunk_name.empty()) j["chunk"] = cx.chunk_name;
  if (!cx.expected.empty()) j["expected"] = cx.expected;
  if (!cx.actual.empty()) j["actual"] = cx.actual;
  if (!cx.matching.empty()) {
    nlohmann::json m = nlohmann::json::array();
    for (const auto& [r, s] : cx.matching) m.push_back({{"recv", r}, {"send", s}});
    j["matching"] = m;
  }
  return j.dump();
}

}  // namespace sg::verify
