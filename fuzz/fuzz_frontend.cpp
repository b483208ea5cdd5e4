// libFuzzer harness for the front end: the input is the text of a .sched file. It goes the road
// `stepgraph check` takes (core/interp/run_check.hpp, run_check): parse, build (elaborate and the passes) at
// N = 2, 3 and 4, then the interpreter and the postconditions, with every diagnostic rendered
// (a location past the end of the text must not crash the caret line). One property besides
// "no crash": a program that parses prints to text that parses again and prints the same
// (tests/test_dsl.cpp holds it for one program; here for every input).
//
// Instances are kept small so that an execution takes milliseconds: at most 10^5 statements
// executed and 64 MiB of estimated memory; an instance over these is refused by the library
// (an error diagnostic), which the harness takes as an ordinary outcome.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/dsl/printer.hpp"
#include "core/interp/run_check.hpp"
#include "core/pipeline.hpp"

namespace {

void render_all(const sg::Session& s) {
  for (const auto& d : s.diags.all()) (void)sg::render_diagnostic(d, s.sources);
}

// A parsed program prints to text that reads back without errors and prints the same.
void check_round_trip(const sg::Program& p, const std::string& input) {
  std::string once = sg::print_program(p);
  sg::Session again;
  const sg::Program* q = again.load_text("printed.sched", once);
  std::string twice = q && !again.diags.has_errors() ? sg::print_program(*q) : std::string();
  if (q && !again.diags.has_errors() && twice == once) return;
  std::fprintf(stderr, "round trip broken\n--- input ---\n%s\n--- printed ---\n%s\n--- diagnostics ---\n%s--- printed again ---\n%s\n",
               input.c_str(), once.c_str(), again.diags.render(again.sources).c_str(), twice.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  sg::Session s;
  const sg::Program* prog = s.load_text("fuzz.sched", text);
  render_all(s);
  if (!prog || s.diags.has_errors() || prog->schedules.empty()) return 0;
  check_round_trip(*prog, text);

  // The schedule `stepgraph check FILE` picks: the last one (no file stem to match here).
  sg::Target t(prog, prog->schedules.back().get());
  for (uint32_t n = 2; n <= 4; ++n) {
    s.diags.clear();
    sg::ElabOptions o;
    o.nranks = n;
    o.max_memory = uint64_t{64} << 20;
    o.max_work = 100'000;
    // A parameter without a default needs --set: give it a small value.
    for (const auto& p : t.schedule->params)
      if (p.kind == sg::ParamKind::Int && !p.def) o.sets.emplace_back(p.name, "2");
    sg::CheckOutcome c = sg::run_check(s, t, o);  // what `stepgraph check` runs
    render_all(s);
    if (!c.built) continue;
    (void)sg::check_verdict(c.interp, c.ok);
    (void)c.findings.render(s.sources);
  }
  return 0;
}
