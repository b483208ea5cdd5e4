// `stepgraph verify`: one line per N, then the counterexample; or JSON as the design specifies.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/dsl/session.hpp"
#include "core/dsl/printer.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/passes.hpp"
#include "core/interp/check.hpp"
#include "core/io/writers.hpp"
#include "verify/verify.hpp"

namespace sg::cli {

namespace {

int fail(const std::string& msg) {
  std::cerr << "stepgraph: error: " << msg << "\n";
  return 2;
}

nlohmann::json engine_json(const verify::EngineResult& e, bool timing) {
  nlohmann::json j = {{"verdict", verify::verdict_name(e.verdict)}};
  if (timing) j["seconds"] = std::round(e.seconds * 1000) / 1000;
  if (!e.note.empty()) j["note"] = e.note;
  if (e.executions) j["executions"] = e.executions;
  return j;
}

std::string engines_used(const verify::ModeResult& m) {
  if (m.ran_explicit && m.ran_z3) return "explicit+z3";
  return m.ran_explicit ? "explicit" : "z3";
}

}  // namespace

int cmd_verify(const VerifyOpts& o) {
  std::vector<uint32_t> ns;
  std::string err;
  if (!parse_rank_list(o.c.ranks, ns, err)) return fail("bad -n '" + o.c.ranks + "': " + err);
  ElabOptions eo;
  for (const auto& kv : o.c.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) return fail("--set needs NAME=VALUE, got '" + kv + "'");
    eo.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (o.c.max_memory.empty()) eo.max_memory = default_memory_limit();
  else if (!parse_size(o.c.max_memory, eo.max_memory)) return fail("bad --max-memory '" + o.c.max_memory + "'");
  verify::VerifyOptions vo;
  if (o.semantics == "rendezvous") vo.modes = {SendMode::Rendezvous};
  else if (o.semantics == "eager") vo.modes = {SendMode::Eager};
  vo.engine = o.engine == "explicit" ? verify::Engine::Explicit
              : o.engine == "z3"     ? verify::Engine::Z3
              : o.engine == "both"   ? verify::Engine::Both
                                     : verify::Engine::Auto;
  vo.z3_opts.timeout_ms = static_cast<unsigned>(o.timeout_s * 1000);
  vo.explicit_opts.max_executions = o.max_executions;

  auto points = dump_points();
  for (const auto& d : o.c.dump_after)
    if (d != "all" && std::find(points.begin(), points.end(), d) == points.end())
      return fail("unknown pass '" + d + "' for --dump-after");
  auto wants = [&](const std::string& p) {
    return std::find(o.c.dump_after.begin(), o.c.dump_after.end(), p) != o.c.dump_after.end() ||
           std::find(o.c.dump_after.begin(), o.c.dump_after.end(), "all") != o.c.dump_after.end();
  };
  Session s;
  Target t = s.resolve(o.c.target);
  if (s.diags.has_errors() || !t.schedule) {
    s.diags.print(std::cerr, s.sources);
    return 2;
  }
  if (wants("parse")) std::cout << "=== after parse ===\n" << print_program(*t.program);
  int rc = 0;
  nlohmann::json all = nlohmann::json::array();
  for (uint32_t n : ns) {
    s.diags.clear();
    eo.nranks = n;
    ElabOptions one = eo;
    one.lifecycle_as_findings = true;
    auto g = elaborate(s, t, one);
    bool built = g && run_passes(*g, s.diags, o.c.dump_after, [&](const std::string& pass) {
                   std::cout << "=== after " << pass << " (N = " << n << ") ===\n";
                   write_text(std::cout, *g, s.sources);
                 });
    // The explicit engine runs the interpreter: refuse what it could not hold.
    if (built && vo.engine != verify::Engine::Z3) built = interpreter_fits(*g, *t.schedule, eo, s.diags);
    verify::VerifyReport rep = built ? verify::verify_graph(*g, vo) : verify::VerifyReport{};
    std::string head = "verify " + t.schedule->name + " N = " + std::to_string(n) + ": ";
    if (!rep.built) {
      rc = std::max(rc, 2);
      if (o.json) all.push_back({{"schedule", t.schedule->name}, {"ranks", n}, {"verdicts", nlohmann::json::array()},
                                 {"error", s.diags.render(s.sources)}});
      else std::cout << head << "bad input\n";
      std::cerr << s.diags.render(s.sources);
      continue;
    }
    verify::Verdict worst = rep.worst();
    if (rep.disagreement() || worst == verify::Verdict::Unknown) rc = std::max(rc, 3);
    else if (worst != verify::Verdict::Ok) rc = std::max(rc, 1);
    const verify::Counterexample* cx = rep.counterexample();
    if (o.json) {
      nlohmann::json v = nlohmann::json::array();
      for (const auto& m : rep.modes) {
        nlohmann::json e = {{"semantics", verify::mode_name(m.mode)}, {"verdict", verify::verdict_name(m.verdict)}};
        nlohmann::json engines;
        if (m.ran_explicit) engines["explicit"] = engine_json(m.explicit_result, o.timing);
        if (m.ran_z3) engines["z3"] = engine_json(m.z3_result, o.timing);
        e["engines"] = engines;
        if (m.disagree) e["disagree"] = true;
        v.push_back(e);
      }
      nlohmann::json obj = {{"schedule", rep.schedule}, {"ranks", n}, {"steps", rep.steps}, {"verdicts", v}};
      obj["counterexample"] = cx ? nlohmann::json::parse(verify::render_json(*cx, s.sources)) : nlohmann::json(nullptr);
      if (!rep.note.empty()) obj["note"] = rep.note;
      all.push_back(obj);
      continue;
    }
    std::string per;
    bool same = true;
    for (const auto& m : rep.modes) same = same && m.verdict == rep.modes.front().verdict;
    if (same && rep.modes.size() > 1) {
      per = std::string("rendezvous and eager: ") + verify::verdict_name(rep.modes.front().verdict);
    } else {
      for (const auto& m : rep.modes)
        per += (per.empty() ? "" : ", ") + std::string(verify::mode_name(m.mode)) + ": " + verify::verdict_name(m.verdict);
    }
    std::string label = rep.disagreement() ? "engines disagree" : verify::verdict_name(worst);
    std::string took;
    if (o.timing) {
      double secs = 0;
      for (const auto& m : rep.modes) secs += m.explicit_result.seconds + m.z3_result.seconds;
      char buf[32];
      std::snprintf(buf, sizeof buf, ", %.3f s", secs);
      took = buf;
    }
    std::cout << head << label << "  (" << per << "; " << engines_used(rep.modes.front()) << ", " << with_commas(rep.steps)
              << " steps" << took << ")\n";
    for (const auto& m : rep.modes) {
      if (m.disagree)
        std::cout << "  " << verify::mode_name(m.mode) << ": explicit says " << verify::verdict_name(m.explicit_result.verdict)
                  << ", z3 says " << verify::verdict_name(m.z3_result.verdict) << " — please report this\n";
      for (const auto* e : {&m.explicit_result, &m.z3_result})
        if (e->verdict == verify::Verdict::Unknown && !e->note.empty())
          std::cout << "  " << verify::mode_name(m.mode) << ", " << (e == &m.explicit_result ? "explicit" : "z3") << ": " << e->note << "\n";
    }
    if (!rep.note.empty()) std::cout << "  note: " << rep.note << "\n";
    if (cx) std::cout << verify::render_text(*cx, s.sources);
  }
  if (o.json) std::cout << (ns.size() == 1 ? all[0].dump(2) : all.dump(2)) << "\n";
  return rc;
}

}  // namespace sg::cli
