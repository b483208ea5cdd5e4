// stepgraph: compile, check, analyze, verify, simulate and execute collective schedules.
// This file only declares the command line (CLI11 stays in this one translation unit); each
// subcommand's cli/<name>_command.cpp does the work through the libraries.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "cli/env_command.hpp"
#include "cli/huge_pages.hpp"
#include "core/base/errors.hpp"
#include "core/pipeline.hpp"
#include "exec/launch/launcher.hpp"

namespace {

// CLI11's number checks print their range in full ("not in range 0.000000 to 1797693…", 309
// digits) and let inf through; these say what is wanted, with the same names in --help.
double number_of(const std::string& s, bool& ok) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    ok = used == s.size() && std::isfinite(v);
    return v;
  } catch (const std::exception&) {
    ok = false;
    return 0;
  }
}
const CLI::Validator kPositive(
    [](std::string& s) -> std::string {
      bool ok = false;
      double v = number_of(s, ok);
      return ok && v > 0 ? std::string() : "must be a number above 0, got '" + s + "'";
    },
    "POSITIVE", "POSITIVE");
const CLI::Validator kNonNegative(
    [](std::string& s) -> std::string {
      bool ok = false;
      double v = number_of(s, ok);
      return ok && v >= 0 ? std::string() : "must be a finite number, 0 or more, got '" + s + "'";
    },
    "NONNEGATIVE", "NONNEGATIVE");

void add_common(CLI::App* app, sg::cli::Common& c, bool many_ranks) {
  app->add_option("target", c.target, "schedule file (FILE or FILE:SCHEDULE) or a library name")->required();
  app->add_option(
      "-n,--ranks", c.ranks,
      std::string(many_ranks ? "number of ranks: N, a..b (every count), a..b:x2 (doubling), a..b:+k, or a,b,c" : "number of ranks") +
          " (required, except for a target written for one count: an MSCCL XML's ngpus)");
  app->add_option("--set", c.sets, "set a schedule parameter, e.g. --set size=1GiB (repeatable)");
  std::string points;  // from the pass table, so that a new pass is listed here too
  for (const auto& p : sg::dump_point_names()) points += p + ", ";
  app->add_option("--dump-after", c.dump_after, "print the graph after a pass: " + points + "all (repeatable)");
  app->add_option(
      "--max-memory", c.max_memory,
      "refuse instances whose estimated size exceeds this (default: 80% of the memory available, or of the cgroup's room where less)");
}

}  // namespace

static int run_command(int argc, char** argv) {
  CLI::App app{"stepgraph: write a collective schedule once; compile, check, simulate, verify and execute it", "stepgraph"};
  app.set_version_flag("--version", std::string("stepgraph ") + STEPGRAPH_VERSION);
  app.require_subcommand(0, 1);
  app.footer(
      "Run `stepgraph SUBCOMMAND --help` for the options of each. Exit codes: 0 ok, 1 defect found, 2 bad input, 70 a bug in stepgraph.");

  bool list_json = false;
  auto* list = app.add_subcommand("list", "list the schedule library with a one-line description each");
  list->add_flag("--json", list_json, "print JSON");

  sg::cli::CompileOpts copts;
  auto* compile = app.add_subcommand("compile", "elaborate a schedule for N ranks and print its step graph");
  add_common(compile, copts.c, false);
  compile
      ->add_option("--format", copts.format,
                   "text, json, dot, stats, goal (LogGOPSim's schedule format), msccl (an MSCCL algorithm file, as MSCCL and RCCL "
                   "load it) or stream (the order exec --transport nccl issues each rank's transfers in: groups in one global order "
                   "on a transfer lane, local work between them)")
      ->check(CLI::IsMember({"text", "json", "dot", "stats", "goal", "msccl", "stream"}));
  compile->add_option("--proto", copts.proto, "msccl format: the file's protocol (Simple, LL or LL128; default Simple)")
      ->check(CLI::IsMember({"Simple", "LL", "LL128"}));
  compile
      ->add_option("--rank", copts.rank,
                   "elaborate only this rank's program (what an executor needs); with --format stream: print only this rank's order")
      ->check(kNonNegative);
  compile->add_option("-o,--output", copts.output, "write to this file instead of standard output");
  compile->add_option("--max-steps", copts.max_steps, "text format: print at most this many steps");
  compile->add_flag("--time", copts.timing, "stats format: also print the build time");
  compile
      ->add_option("--ns-per-flop", copts.goal.ns_per_flop,
                   "goal format: a compute step takes ceil(flops × this) ns (default 0.001: 1 TFLOP/s)")
      ->check(kNonNegative);
  compile
      ->add_option("--ns-per-byte", copts.goal.ns_per_byte,
                   "goal format: copy, reduce and reducing receives take ceil(bytes × this) ns (default 0.1: 10 GB/s)")
      ->check(kNonNegative);
  compile->add_flag("--expand", copts.expand,
                    "replace every collective by the point-to-point steps of a library algorithm (by default the one "
                    "Open MPI 4.1 would pick for its size and group)");
  compile->add_option("--algo", copts.algo,
                      "algorithms for --expand, e.g. allreduce=ring,bcast=binomial, and whose choice picks the rest: openmpi "
                      "(the default) or nccl[:gpus=G] (NCCL's tuning model, G GPUs per node) (implies --expand; see docs/stepgraph.md)");

  sg::cli::CheckOpts kopts;
  auto* check = app.add_subcommand("check", "run the reference interpreter and check the postcondition, for one N or many");
  add_common(check, kopts.c, true);
  check->add_flag("--json", kopts.json, "print one JSON object per N (a list)");
  check->add_flag("-q,--quiet", kopts.quiet, "print only failures");

  sg::cli::AnalyzeOpts aopts;
  auto* analyze =
      app.add_subcommand("analyze", "per-rank bytes, messages, compute, peak extra memory and load imbalance, from the step graph alone");
  add_common(analyze, aopts.c, true);
  analyze->add_option("--algo", aopts.algo,
                      "algorithms for the collectives' expansion, e.g. allgather=ring or nccl:gpus=8 (default: Open MPI's choice)");
  analyze->add_option("--unit", aopts.unit, "show bytes in chunks of this buffer, e.g. --unit Q");
  analyze->add_flag("--per-rank", aopts.per_rank, "one row per rank, not only min / mean / max");
  analyze->add_flag("--json", aopts.json, "print JSON: one object (a list for several N), with per_rank, min, mean, max and imbalance");

  sg::cli::VerifyOpts vopts;
  auto* verify =
      app.add_subcommand("verify", "decide deadlock, races, undefined data, lifecycle and wrong results under rendezvous and eager sends");
  add_common(verify, vopts.c, true);
  verify
      ->add_option("--semantics", vopts.semantics,
                   "rendezvous, eager, both, or bounded (a connection holds --slots messages, as NCCL's FIFOs do); default: "
                   "bounded for an MSCCL file, both otherwise")
      ->check(CLI::IsMember({"auto", "rendezvous", "eager", "both", "bounded"}));
  verify
      ->add_option("--slots", vopts.slots,
                   "bounded: messages a connection holds before its sender blocks (default: the program's, MSCCL 2 for Simple and 8 for "
                   "LL and LL128, from NCCL_STEPS = 8)")
      ->check(kPositive);
  verify
      ->add_option("--engine", vopts.engine,
                   "explicit, z3, both (they must agree), or auto (explicit decides; z3 decides what its search cannot finish and "
                   "cross-checks small graphs)")
      ->check(CLI::IsMember({"auto", "explicit", "z3", "both"}));
  verify->add_flag("--json", vopts.json, "print JSON: one object (a list for several N)");
  verify
      ->add_option("--timeout", vopts.timeout_s, "end the whole run after this many seconds (exit 3), printing what was decided (0: never)")
      ->check(kNonNegative);
  verify->add_option("--max-executions", vopts.max_executions, "explicit: executions to explore with wildcard receives");
  verify->add_flag("--time", vopts.timing, "also report how long each engine took, and the total");
  verify->add_flag("-q,--quiet", vopts.quiet, "print only what is not ok");
  verify->footer("Exit codes: 0 ok under every semantics asked, 1 a defect, 2 bad input, 3 undecided or the engines disagree.");

  sg::cli::SimOpts sopts;
  auto* sim = app.add_subcommand(
      "sim",
      "simulate schedules on a platform (SimGrid or the analytic LogGP model): time, bandwidth, critical path, traces, sweeps, plots");
  sim->add_option("target", sopts.targets,
                  "schedules: files (FILE or FILE:SCHEDULE) or library names, several for a comparison (required, except with "
                  "--nccl-tests)");
  sim->add_option("--nccl-tests", sopts.nccl_tests,
                  "an nccl-tests output file (all_reduce_perf …): simulate each of its sizes on the platform and print the "
                  "measured time beside the predicted one, with the error (TARGET: the schedule to predict with; default the "
                  "table's own collective)");
  sim->add_option("--nccl-collective", sopts.nccl_collective,
                  "the collective of an nccl-tests table whose header does not say (all_reduce, all_gather, reduce_scatter, broadcast, "
                  "reduce, alltoall)")
      ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"}));
  sim->add_option("-n,--ranks", sopts.ranks,
                  "rank counts: N, a..b (every count), a..b:x2 (doubling: a, 2a, 4a, … b), a..b:+k, or a,b,c (required, except "
                  "for targets written for one count: an MSCCL XML's ngpus)");
  sim->add_option("--set", sopts.sets,
                  "set a schedule parameter, e.g. --set size=1GiB; TARGET:NAME=VALUE for one target (repeatable; with several targets, "
                  "one that has no parameter NAME leaves it out, with a note)");
  sim->add_option("--max-memory", sopts.max_memory, "refuse instances whose estimated size exceeds this");
  sim->add_option("--platform", sopts.platform,
                  "a generator string (star:…, fat-tree:…, torus:…, dragonfly:…, nodes:…) or a SimGrid .xml file");
  CLI::Option* model_opt = sim->add_option("--model", sopts.model, "simgrid (contention) or analytic (LogGP / α-β, no contention)")
                               ->check(CLI::IsMember({"simgrid", "analytic"}));
  sim->add_option("--algo", sopts.algo,
                  "algorithms for collective steps, e.g. allreduce=ring,bcast=binomial, openmpi, nccl[:gpus=G] (default: NCCL's choice on "
                  "nodes: platforms, Open MPI's elsewhere)");
  sim->add_option("--protocol", sopts.protocol, "MPI sends: eager, rendezvous, or auto (rendezvous from --eager-limit bytes on)")
      ->check(CLI::IsMember({"eager", "rendezvous", "auto"}));
  sim->add_option("--eager-limit", sopts.eager_limit,
                  "auto protocol: messages smaller than this go eagerly, this size and larger by rendezvous (default 64KiB)");
  sim->add_option("--envelope", sopts.envelope,
                  "bytes every message carries beyond its payload (an MPI header; SimGrid's SMPI simulates 16), default 0");
  sim->add_option("--message-latency", sopts.message_latency,
                  "time every message waits before its data moves, beyond the route's latency, e.g. 2.8us (default: the program's "
                  "protocol's: an MSCCL file's Simple 2.8us, LL128 1.3us, LL 0; else 0)");
  sim->add_option("--loggp", sopts.loggp, "analytic: LogGP overheads, e.g. o=1us,g=100ns,O=0.1ns");
  sim->add_option("--gamma", sopts.gamma, "time per reduced byte, e.g. 0.1ns (default 0)");
  sim->add_option("--window", sopts.window,
                  "dataflow sends (outside on-blocks): at most K messages in flight per rank pair, a runtime's FIFO of K slots, so a "
                  "pipelined schedule pipelines (default: none; NCCL's own calls have one a channel)")
      ->check(CLI::Range(1u, 1u << 20));
  CLI::Option* collectives_opt =
      sim->add_option("--collectives", sopts.collectives,
                      "expand (default): every collective instance becomes its algorithm's messages in the job's graph; memo: each "
                      "instance takes the times of its algorithm run alone on its members' hosts, simulated once per shape (docs/sim.md, "
                      "\"Collectives costed once per shape\")");
  sim->add_flag("--no-symmetry", sopts.no_symmetry,
                "simulate every rank, even where the schedule and the platform prove classes of ranks alike (the analytic engine "
                "then simulates one rank a class: docs/sim.md, \"Symmetry\")");
  sim->add_option("--map", sopts.map, "host of each rank: 0,2,1,3 or @FILE (default: rank r on host r)");
  sim->add_option("--sweep", sopts.sweep, "sweep a parameter: NAME=a..b (doubling) or NAME=a,b,c, e.g. size=1KiB..1GiB");
  sim->add_option("--trace", sopts.trace, "write a Chrome trace (open in https://ui.perfetto.dev); one file per point");
  sim->add_option("--csv", sopts.csv, "write the points as CSV to FILE (- for standard output)");
  sim->add_option("--plot", sopts.plot, "draw time and bus bandwidth against the sweep (or N) with gnuplot: out.svg or out.png");
  sim->add_option("--top", sopts.top, "critical-path statements and links to show (default 5)");
  sim->add_flag("--json", sopts.json, "print JSON: one object, or a list for several points");
  sim->add_flag("-q,--quiet", sopts.quiet, "leave out unsupported points");
  sim->add_flag("--allow-defects", sopts.allow_defects,
                "simulate even where the check before the run (verify, within a small budget) finds a defect; the defect is "
                "printed beside the time");
  sim->footer(
      "Exit codes: 0 ok, 1 a simulated deadlock, 2 bad input, 3 the simulator failed. Under `mpiexec -n K` the points are split over the K "
      "processes.");

  sg::cli::ExecOpts eopts;
  auto* exec =
      app.add_subcommand("exec", "run a schedule for real under mpiexec / srun: check the result and time it next to MPI's own collective");
  exec->add_option("target", eopts.target, "schedule file (FILE or FILE:SCHEDULE) or a library name")->required();
  exec->add_option("-n,--ranks", eopts.ranks, "number of ranks (default: the job's size; must equal it)");
  exec->add_option("--set", eopts.sets, "set a schedule parameter, e.g. --set size=16MiB (repeatable)");
  exec->add_option("--max-memory", eopts.max_memory, "refuse instances whose estimated size exceeds this");
  exec->add_option("--sweep", eopts.sweep,
                   "sweep a parameter: NAME=a..b (doubling) or NAME=a,b,c, e.g. size=1KiB..64MiB, or seq=1024,2048 for attention");
  exec->add_option("--dtype", eopts.dtype, "element type of every buffer: f32 (default), f64, f16, bf16, i32, i64, i8, u8")
      ->check(CLI::IsMember({"f32", "f64", "i32", "i64", "i8", "u8", "f16", "bf16"}));
  exec->add_option("--iters", eopts.iters, "timed iterations per point (default 20)")->check(kPositive);
  exec->add_option("--warmup", eopts.warmup, "untimed iterations first (default 5)")->check(kNonNegative);
  exec->add_flag("--check", eopts.check, "compare every buffer a postcondition covers with its expected values; count wrong elements");
  exec->add_option("--compare", eopts.compare, "native: also time MPI's own collective on the same data")->check(CLI::IsMember({"native"}));
  exec->add_option(
      "--native-algo", eopts.native_algo,
      "force an Open MPI tuned algorithm for --compare native: allreduce ring, recursive_doubling, rabenseifner, … or its number");
  exec->add_option("--timeout", eopts.timeout_s,
                   "a run that makes no progress this many seconds stops and says what each rank waits on (exit 3)")
      ->check(kNonNegative);
  exec->add_flag("--json", eopts.json, "print JSON: a list of objects, one per size");
  exec->add_flag("--allow-defects", eopts.allow_defects,
                 "run even where the check before the run (verify, within a small budget) finds a defect");
  exec->add_option("--device", eopts.device,
                   "cpu (default); cuda: buffers, copies and reductions on the GPU of this process's local rank, MPI staged through host "
                   "memory; host-staged: the same staged path with host memory as the device (testing without a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "host-staged"}));
  exec->add_option("--transport", eopts.transport,
                   "with a device: auto (default: cuda-aware when MPI reports CUDA support, else staged), staged (through host "
                   "memory), cuda-aware (MPI on device memory; falls back to staged with the reason), ipc (ranks of one node copy "
                   "device to device from each other's buffers: CUDA IPC; with --device host-staged, shared memory), nccl (NCCL, a GPU "
                   "per rank; with --device host-staged, MPI keeping NCCL's rules)")
      ->check(CLI::IsMember({"auto", "staged", "cuda-aware", "ipc", "nccl"}));
  exec->add_flag("--device-sync", eopts.device_sync,
                 "with a device, staged, cuda-aware or ipc: every device call waits for the device (default: two streams, local work "
                 "overlapping transfers, ordered by events); for comparison and debugging");
  exec->add_option(
      "--predict", eopts.predict,
      "a platform (a spec, an .xml file or @FILE from calibrate): the analytic simulator's time next to the measured one, with the error");

  sg::cli::CalibrateOpts calopts;
  auto* calibrate = app.add_subcommand(
      "calibrate",
      "under mpiexec: ping-pong per pair class (same node, other node), an alpha-beta fit, and a platform file for sim and exec --predict; "
      "with --nccl-tests: NCCL's costs on a preset fitted to measured tables");
  calibrate->add_option("-o,--output", calopts.output, "the platform file to write (default calibration.platform)");
  calibrate->add_option("--sizes", calopts.sizes, "message sizes: a..b (doubling) or a,b,c (default 8..16MiB)");
  calibrate->add_option("--iters", calopts.iters, "round trips per size; the fastest counts (default 20)")->check(kPositive);
  calibrate->add_flag("--json", calopts.json, "print JSON");
  auto* cal_tables = calibrate->add_option("--nccl-tests", calopts.nccl_tests,
                                           "no MPI: fit NCCL's costs on --platform (launch, latency and bandwidth factors, the host's "
                                           "floor) to measured nccl-tests tables: the even rows of "
                                           "the first, the rest held out (its odd rows, every other table)");
  cal_tables->expected(1, -1);
  calibrate
      ->add_option("--platform", calopts.platform,
                   "with --nccl-tests: the machine the tables were measured on (a preset, e.g. dgx-h100:nodes=2)")
      ->needs(cal_tables);
  calibrate->add_option("-n,--ranks", calopts.ranks, "with --nccl-tests: the ranks, where a table's header lists none")->needs(cal_tables);
  calibrate->add_option("--model", calopts.model, "with --nccl-tests: the engine (analytic, the default, or simgrid)")
      ->needs(cal_tables)
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  exec->footer("Exit codes: 0 ok, 1 wrong elements, 2 bad input (every rank refuses), 3 no progress or an MPI error (the job is aborted).");

  sg::cli::EnvOpts envopts;
  auto* env = app.add_subcommand(
      "env", "what launcher, MPI, rank, local rank, node, device and backend this process sees, and the master address for PyTorch");
  auto* env_json = env->add_flag("--json", envopts.json, "print one JSON object");
  env->add_flag("--export", envopts.export_,
                "print one line `export RANK=… WORLD_SIZE=… LOCAL_RANK=… LOCAL_WORLD_SIZE=… MASTER_ADDR=… MASTER_PORT=…` for eval")
      ->excludes(env_json);
  env->add_flag("--no-mpi", envopts.no_mpi,
                "never call MPI_Init (by default, built with MPI and started by mpiexec or srun, it asks MPI what the environment "
                "leaves unknown: the local rank, rank 0's host)");
  env->footer(
      "Run it under the launcher: mpiexec -n 4 stepgraph env; in a job script: eval \"$(stepgraph env --export)\"; python train.py");

  std::string demo_ranks = "2..17,32,64";
  auto* demo = app.add_subcommand("demo", "the main job: compile, check and summarise a ring all-reduce and the whole library");
  demo->add_option("-n,--ranks", demo_ranks, "rank counts to check the library at");

  for (auto* sub : {list, compile, check, analyze, verify, sim, exec, calibrate, env, demo})
    sub->set_version_flag("--version", std::string("stepgraph ") + STEPGRAPH_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Under a launcher every process parses the same line: the launcher's rank 0 says why, every
    // other rank points to it in one line (none exits in silence).
    auto get = [](const char* n) -> const char* { return std::getenv(n); };
    sg::exec::LaunchInfo job = sg::exec::detect_launch(get, -1);
    if (job.rank <= 0) {
      std::string text = std::string("stepgraph: error: ") + e.what() + "\n(run with --help for usage)\n";
      std::cerr.write(text.data(), static_cast<std::streamsize>(text.size()));  // one write: other ranks print too
      sg::exec::let_others_speak(job.world_size);
    } else {
      std::cerr << sg::exec::job_pointer(job.rank, job.world_size, 0, 2, "a bad command line");
      std::cerr.flush();
      sg::exec::wait_for_speaker(job.world_size);
    }
    return 2;
  }
  // A broken invariant of stepgraph itself is not the user's error: its own words and exit code.
  try {
    if (*list) return sg::cli::cmd_list(list_json);
    if (*compile) return sg::cli::cmd_compile(copts);
    if (*check) return sg::cli::cmd_check(kopts);
    if (*analyze) return sg::cli::cmd_analyze(aopts);
    if (*verify) return sg::cli::cmd_verify(vopts);
    if (*sim) {
      sopts.engine_defaulted = model_opt->count() == 0 && collectives_opt->count() == 0;
      return sg::cli::cmd_sim(sopts);
    }
    if (*exec) return sg::cli::cmd_exec(eopts);
    if (*calibrate) return calopts.nccl_tests.empty() ? sg::cli::cmd_calibrate(calopts) : sg::cli::cmd_calibrate_nccl_tests(calopts);
    if (*env) return sg::cli::cmd_env(envopts);
    if (*demo) return sg::cli::cmd_demo(demo_ranks);
  } catch (const sg::InternalError& e) {
    return sg::cli::report_internal_error(e);
  }
  std::cout << app.help();
  return 0;
}

// Output that never reached standard output (a full disk, /dev/full) is an error too (exit 2).
int main(int argc, char** argv) {
  sg::cli::restart_with_huge_pages(argv);  // once, before anything is allocated
  return sg::cli::check_standard_output(run_command(argc, argv));
}
