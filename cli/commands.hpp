// The subcommands, as plain functions over plain option structs; main.cpp only parses flags.
// Each returns the process exit code: 0 ok, 1 a defect found, 2 bad input.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/errors.hpp"
#include "core/base/sizes.hpp"  // parse_size, for the flags
#include "core/dsl/diagnostics.hpp"
#include "core/io/writers.hpp"

namespace sg::cli {

struct Common {
  std::string target;                   // FILE[:SCHEDULE] or a library name
  std::string ranks;                    // -n: "8", "2..17", "4,8,16"
  std::vector<std::string> sets;        // --set k=v
  std::vector<std::string> dump_after;  // --dump-after PASS
  std::string max_memory;               // --max-memory SIZE ("" = 80% of available memory)
};

struct CompileOpts {
  Common c;
  std::string format = "text";
  int64_t rank = -1;
  std::string output;
  uint64_t max_steps = 0;
  bool timing = false;
  GoalOptions goal;              // --format goal: --ns-per-flop, --ns-per-byte
  bool expand = false;           // --expand: collectives replaced by library algorithms
  std::string algo;              // --algo SPEC (implies --expand)
  std::string proto = "Simple";  // --format msccl: the file's protocol
};

struct AnalyzeOpts {
  Common c;
  std::string algo;       // --algo for the collectives' expansion
  bool per_rank = false;  // --per-rank: one row per rank
  std::string unit;       // --unit BUF: bytes in multiples of one chunk of BUF
  bool json = false;
};

struct CheckOpts {
  Common c;
  bool json = false;
  bool quiet = false;
};

struct VerifyOpts {
  Common c;
  std::string semantics = "auto";  // auto: bounded for a program with connection slots (MSCCL), else both
  uint32_t slots = 0;              // --slots: a connection's slots under bounded (0: the program's)
  std::string engine = "auto";
  bool json = false;
  double timeout_s = 0;  // the whole run's limit (0: none)
  uint64_t max_executions = 20000;
  bool timing = false;
  bool quiet = false;
};

struct SimOpts {
  std::vector<std::string> targets;  // one or more (also comma-separated)
  std::string ranks;                 // -n: "64", "8..4096" (doubling), "8,12,16"
  std::vector<std::string> sets;
  std::string max_memory;
  std::string platform;  // "" = the default platform
  std::string model = "simgrid";
  std::string algo;  // --algo allreduce=ring,…
  std::string protocol = "auto";
  std::string eager_limit = "64KiB";
  std::string envelope = "0";   // bytes added to every message on the wire
  std::string message_latency;  // --message-latency (empty: the program's protocol's)
  std::string loggp;            // "o=1us,g=100ns,O=0"
  std::string gamma;            // seconds per reduced byte, e.g. "0.1ns"
  uint32_t window = 0;          // --window K: a FIFO of K messages per rank pair for dataflow sends (0: none)
  std::string map;              // "0,2,1,3" or "@file"
  std::string sweep;            // "size=1KiB..1GiB"
  std::string trace, csv, plot;
  unsigned top = 5;
  bool json = false, quiet = false;
  bool allow_defects = false;          // simulate a schedule the check before the run finds a defect in
  std::string collectives = "expand";  // --collectives expand|memo
  bool engine_defaulted = false;       // neither --model nor --collectives given (sim::PointSpec::engine_defaulted)
  bool no_symmetry = false;            // --no-symmetry: simulate every rank, even where classes of ranks are alike
  std::string nccl_tests;              // --nccl-tests FILE: predict a measured nccl-tests table (cli/sim_nccl_tests.cpp)
  std::string nccl_collective;         // --nccl-collective: the table's collective where its header does not say
};

struct ExecOpts {
  std::string target;
  std::string ranks;  // -n: must equal the job's size when given
  std::vector<std::string> sets;
  std::string max_memory;
  std::string sweep;        // "size=1KiB..64MiB"
  std::string dtype;        // f32 (default), f64, i32, i64
  std::string compare;      // "native"
  std::string native_algo;  // Open MPI tuned algorithm: a name (ring, …) or a number
  int iters = 20, warmup = 5;
  double timeout_s = 60;
  bool check = false, json = false;
  std::string predict;             // a platform: print the analytic simulator's time next to the measured one
  std::string device = "cpu";      // cpu, cuda or host-staged
  std::string transport = "auto";  // with a device: auto, staged, cuda-aware, ipc or nccl
  bool device_sync = false;        // with a device: every device call waits (no streams)
  bool allow_defects = false;      // run a schedule the check before the run finds a defect in
};

struct CalibrateOpts {
  std::string output = "calibration.platform";
  std::string sizes = "8..16MiB";
  int iters = 20;
  bool json = false;
  // --nccl-tests FILE…: fit NCCL's costs on the platform to measured tables (no MPI; the first
  // table is fitted, the others held out): cli/calibrate_nccl_tests.cpp.
  std::vector<std::string> nccl_tests;
  std::string platform, ranks, model = "analytic";
};

int cmd_list(bool json);
// Runs under mpiexec / srun (or alone, as one process).
int cmd_exec(const ExecOpts& o);
int cmd_calibrate(const CalibrateOpts& o);
int cmd_calibrate_nccl_tests(const CalibrateOpts& o);  // calibrate --nccl-tests
int cmd_sim(const SimOpts& o);
int cmd_sim_nccl_tests(const SimOpts& o);  // sim --nccl-tests
int cmd_verify(const VerifyOpts& o);
int cmd_compile(const CompileOpts& o);
int cmd_check(const CheckOpts& o);
int cmd_analyze(const AnalyzeOpts& o);
int cmd_demo(const std::string& ranks);

// "stepgraph bug: …, please report it" on stderr; returns kInternalErrorExit (70).
int report_internal_error(const InternalError& e);

// The end of every command (cli/main.cpp): flushes standard output and returns `rc`, or, where
// something written there did not get there, says so ("cannot write to standard output: No space
// left on device") and returns at least 2.
int check_standard_output(int rc);

// "8" | "2..17" (inclusive) | "4,8,16" | mixtures "2..5,8". Returns false with a message in
// `diags` ("empty range 5..2"; the caller names the flag).
bool parse_rank_list(const std::string& s, std::vector<uint32_t>& out, Diagnostics& diags);

}  // namespace sg::cli
