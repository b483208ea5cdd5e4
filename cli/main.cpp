// stepgraph: compile, check (and later simulate, verify, execute) collective schedules.
// This file only declares the command line; commands.cpp does the work.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

namespace {

void add_common(CLI::App* app, sg::cli::Common& c, bool many_ranks) {
  app->add_option("target", c.target, "schedule file (FILE or FILE:SCHEDULE) or a library name")->required();
  app->add_option("-n,--ranks", c.ranks, many_ranks ? "number of ranks: N, a..b (inclusive), or a,b,c" : "number of ranks")
      ->required();
  app->add_option("--set", c.sets, "set a schedule parameter, e.g. --set size=1GiB (repeatable)");
  app->add_option("--dump-after", c.dump_after,
                  "print the graph after a pass: parse, elaborate, match, collectives, prune, validate, all (repeatable)");
  app->add_option("--max-memory", c.max_memory, "refuse instances whose estimated size exceeds this (default: 80% of free memory)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stepgraph: write a collective schedule once; compile, check, simulate, verify and execute it", "stepgraph"};
  app.set_version_flag("--version", std::string("stepgraph ") + STEPGRAPH_VERSION);
  app.require_subcommand(0, 1);
  app.footer("Run `stepgraph SUBCOMMAND --help` for the options of each. Exit codes: 0 ok, 1 defect found, 2 bad input.");

  bool list_json = false;
  auto* list = app.add_subcommand("list", "list the schedule library with a one-line description each");
  list->add_flag("--json", list_json, "print JSON");

  sg::cli::CompileOpts copts;
  auto* compile = app.add_subcommand("compile", "elaborate a schedule for N ranks and print its step graph");
  add_common(compile, copts.c, false);
  compile->add_option("--format", copts.format, "text, json, dot or stats")->check(CLI::IsMember({"text", "json", "dot", "stats"}));
  compile->add_option("--rank", copts.rank, "elaborate only this rank's program (what an executor needs)");
  compile->add_option("-o,--output", copts.output, "write to this file instead of standard output");
  compile->add_option("--max-steps", copts.max_steps, "text format: print at most this many steps");
  compile->add_flag("--time", copts.timing, "stats format: also print the build time");
  compile->add_flag("--expand", copts.expand,
                    "replace every collective by the point-to-point steps of a library algorithm (by default the one "
                    "Open MPI 4.1 would pick for its size and group)");
  compile->add_option("--algo", copts.algo,
                      "algorithms for --expand, e.g. allreduce=ring,bcast=binomial (implies --expand; "
                      "see docs/stepgraph.md for the names)");

  sg::cli::CheckOpts kopts;
  auto* check = app.add_subcommand("check", "run the reference interpreter and check the postcondition, for one N or many");
  add_common(check, kopts.c, true);
  check->add_flag("--json", kopts.json, "print one JSON object per N (a list)");
  check->add_flag("-q,--quiet", kopts.quiet, "print only failures");

  sg::cli::VerifyOpts vopts;
  auto* verify = app.add_subcommand("verify", "decide deadlock, races, undefined data, lifecycle and wrong results under rendezvous and eager sends");
  add_common(verify, vopts.c, true);
  verify->add_option("--semantics", vopts.semantics, "rendezvous, eager or both")
      ->check(CLI::IsMember({"rendezvous", "eager", "both"}));
  verify->add_option("--engine", vopts.engine, "explicit, z3, both (they must agree), or auto (explicit decides; z3 decides what its search cannot finish and cross-checks small graphs)")
      ->check(CLI::IsMember({"auto", "explicit", "z3", "both"}));
  verify->add_flag("--json", vopts.json, "print JSON: one object (a list for several N)");
  verify->add_option("--timeout", vopts.timeout_s,
                     "end the whole run after this many seconds (exit 3), printing what was decided (0: never)");
  verify->add_option("--max-executions", vopts.max_executions, "explicit: executions to explore with wildcard receives");
  verify->add_flag("--time", vopts.timing, "also report how long each engine took, and the total");
  verify->add_flag("-q,--quiet", vopts.quiet, "print only what is not ok");
  verify->footer("Exit codes: 0 ok under every semantics asked, 1 a defect, 2 bad input, 3 undecided or the engines disagree.");

  std::string demo_ranks = "2..17,32,64";
  auto* demo = app.add_subcommand("demo", "the main job: compile, check and summarise a ring all-reduce and the whole library");
  demo->add_option("-n,--ranks", demo_ranks, "rank counts to check the library at");

  for (auto* sub : {list, compile, check, verify, demo}) sub->set_version_flag("--version", std::string("stepgraph ") + STEPGRAPH_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stepgraph: error: " << e.what() << "\n(run with --help for usage)\n";
    return 2;
  }
  if (*list) return sg::cli::cmd_list(list_json);
  if (*compile) return sg::cli::cmd_compile(copts);
  if (*check) return sg::cli::cmd_check(kopts);
  if (*verify) return sg::cli::cmd_verify(vopts);
  if (*demo) return sg::cli::cmd_demo(demo_ranks);
  std::cout << app.help();
  return 0;
}
