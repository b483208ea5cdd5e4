// stepgraph's library face: typed requests in, typed results out, one JSON writer per result.
// The command line (cli/) parses its flags into these requests and prints the results; the
// Python module (python/) turns keyword arguments into the same requests and hands the JSON
// back as Python objects. Nothing here reads a flag: a rank count is a number, a parameter a
// (name, value) pair, a memory limit a byte count (docs/python.md).
//
// Each command has a function per N (check_point, verify_point, analyze_point: the CLI prints
// one N as soon as it is done) and a whole-request function (check, verify, analyze, compile,
// sim, list) that the Python module calls. The JSON of a whole request is what the command's
// --json prints for the same arguments: one object for one N, an array for several (check:
// always an array), as the design's CLI contract says.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "core/graph/analysis.hpp"
#include "core/pipeline.hpp"
#include "sim/point.hpp"
#include "verify/verify.hpp"

namespace sg::api {

// --set NAME=VALUE pairs, in order. The value stays as written ("64MiB", "128K"): elaboration
// reads it against the parameter's declaration, for every front end the same way.
using Params = std::vector<std::pair<std::string, std::string>>;

// Bad input found before any N is built: no such target, a parse error, a parameter given
// twice, a rank count out of range. `rendered` holds the located diagnostics as the CLI prints
// them (file:line:col: error:, the line and a caret), `diagnostics` the same as data; both are
// empty for an error that points nowhere in particular (what() says it all).
class BadInput : public std::runtime_error {
 public:
  explicit BadInput(const std::string& message, std::string rendered = {}, nlohmann::json diagnostics = nlohmann::json::array())
      : std::runtime_error(message), rendered_(std::move(rendered)), diagnostics_(std::move(diagnostics)) {}
  const std::string& rendered() const { return rendered_; }
  const nlohmann::json& diagnostics() const { return diagnostics_; }

 private:
  std::string rendered_;
  nlohmann::json diagnostics_;
};

// What every command that builds a target takes.
struct TargetRequest {
  std::string target;                   // FILE, FILE:SCHEDULE or a library name
  std::vector<uint32_t> ranks;          // empty: the one count the target is written for (an MSCCL XML's)
  Params params;                        // --set
  std::optional<uint64_t> max_memory;   // none: default_memory_limit()
  std::vector<std::string> dump_after;  // --dump-after points (their text goes to the BuildOptions' sink)
};

// An opened target, ready to build at each of its rank counts.
struct Opened {
  Session s;
  Target t;
  std::vector<uint32_t> ns;
  ElabOptions opts;
  std::vector<std::string> dump_after;
};

// "--set size given twice ('1MiB', then '2MiB'): give each parameter once"; empty when none.
std::string repeated_param(const Params& params);

// Opens the request's target into `o` (`many`: several rank counts allowed). Throws BadInput.
// With "parse" in dump_after, the program read goes to parse_dump's sink.
void open(const TargetRequest& r, Opened& o, bool many, const DumpRequest* parse_dump = nullptr);
std::unique_ptr<Opened> open(const TargetRequest& r, bool many);

// The build options of one N (no dump sink: the caller sets one when it prints dumps).
BuildOptions build_options(const Opened& o, uint32_t n);

// Diagnostics as data: [{"severity", "file", "line", "col", "message", "notes": [...]}].
nlohmann::json diagnostics_json(const Diagnostics& d, const SourceManager& sm);

// The parameter values a graph was built with, as a JSON object ({"size": 67108864, "mp": 4}).
nlohmann::json params_json(const StepGraph& g);

// ---- list -------------------------------------------------------------------------------------

struct LibraryEntry {
  std::string name, path, description;
};
std::vector<LibraryEntry> list();
nlohmann::json to_json(const std::vector<LibraryEntry>& entries);

// ---- compile ----------------------------------------------------------------------------------

struct CompileRequest {
  TargetRequest target;  // one rank count
  bool expand = false;   // collectives replaced by library algorithms
  AlgoChoice algo;       // the algorithms for the expansion
  int64_t rank = -1;     // one rank's program only (-1: all)
};

// A built graph with the session whose sources its steps point into.
struct Compiled {
  std::unique_ptr<Opened> opened;
  Built built;
  const StepGraph& graph() const { return *built.graph; }
  // `compile --format json`.
  nlohmann::json json() const;
};
// Throws BadInput when the target does not open or the graph does not build (unsupported
// included: its message says so).
Compiled compile(const CompileRequest& r);

// ---- check ------------------------------------------------------------------------------------

struct CheckPoint {
  std::string schedule;
  uint32_t n = 0;
  int status = 0;                                    // 0 ok, 1 a defect, 2 bad input or unsupported
  std::string result;                                // the verdict, "unsupported" or "bad-input"
  std::string message;                               // unsupported: the reason
  std::string diagnostics;                           // unsupported, bad input: the errors, rendered
  nlohmann::json located = nlohmann::json::array();  // the same as data (diagnostics_json)
  bool built = false;                                // the rest is set only for a built graph
  uint64_t steps = 0, transfers = 0, chunks_checked = 0, chunks_wrong = 0;
  nlohmann::json params = nlohmann::json::object();
  std::string params_text;  // "size = 1,048,576"
  nlohmann::json findings = nlohmann::json::array();
  std::string findings_text;  // rendered
};
// Builds and checks one N; its warnings stay in o.s.diags.
CheckPoint check_point(Opened& o, const BuildOptions& bo);
nlohmann::json to_json(const CheckPoint& p);

struct CheckResult {
  std::vector<CheckPoint> points;
  int status = 0;
  nlohmann::json json() const;  // always an array, as `check --json` prints
};
CheckResult check(const TargetRequest& r);

// ---- verify -----------------------------------------------------------------------------------

enum class Semantics : uint8_t { Auto, Rendezvous, Eager, Bounded };
// "auto", "rendezvous", "eager", "bounded"; nullopt for another word.
std::optional<Semantics> semantics_named(const std::string& name);
// "auto", "explicit", "z3", "both".
std::optional<verify::Engine> engine_named(const std::string& name);

struct VerifyRequest {
  TargetRequest target;
  Semantics semantics = Semantics::Auto;  // auto: bounded for a program with connection slots (MSCCL), else both
  uint32_t slots = 0;                     // a connection's slots under bounded (0: the program's)
  verify::Engine engine = verify::Engine::Auto;
  uint64_t max_executions = 20000;
  double timeout_s = 0;  // the whole request's limit (0: none)
  bool timing = false;   // seconds in the JSON
};

struct VerifyPoint {
  std::string schedule;
  uint32_t n = 0;
  int status = 0;  // 0 ok, 1 a defect, 2 bad input or unsupported, 3 undecided or engines disagree
  bool built = false;
  std::string unsupported;                           // not built: the reason a `require` gave
  std::string diagnostics;                           // not built: the errors, rendered
  nlohmann::json located = nlohmann::json::array();  // the same as data (diagnostics_json)
  verify::VerifyReport report;
  std::string params_text;
  std::string counterexample_text;  // rendered with source lines ("" when none)
  double total_s = 0;
  nlohmann::json json;  // this N's object, as `verify --json` prints it
};
verify::VerifyOptions verify_options(const VerifyRequest& r);
// Builds and verifies one N. `on_built` runs once the graph is built (the CLI's progress line),
// `on_mode` after each semantics is decided.
VerifyPoint verify_point(Opened& o, const BuildOptions& bo, const VerifyRequest& r, verify::VerifyOptions vo,
                         const std::function<void()>& on_built = {}, const std::function<void(const verify::VerifyReport&)>& on_mode = {});

struct VerifyResult {
  std::vector<VerifyPoint> points;
  std::vector<uint32_t> not_started;  // the time limit came first
  int status = 0;
  nlohmann::json json() const;  // one object for one N, else an array
};
VerifyResult verify(const VerifyRequest& r);

// ---- analyze ----------------------------------------------------------------------------------

struct AnalyzeRequest {
  TargetRequest target;
  AlgoChoice algo;   // for the collectives' expansion
  std::string unit;  // bytes in multiples of one chunk of this buffer ("" = bytes)
};

struct AnalyzePoint {
  std::string schedule;
  uint32_t n = 0;
  int status = 0;           // 0, or 2: unsupported, bad input
  std::string unsupported;  // the reason a `require` gave
  std::string error;        // a request error at this N (an unknown --unit buffer)
  bool built = false;
  GraphCost cost;
  std::vector<std::string> expansions;  // "allreduce over 8 ranks, 1.0 MiB: ring (why)"; k instances
  std::vector<std::string> extra_buffers, extra_buffers_text;
  Params params;  // name, value in decimal
  std::string unit_name;
  double unit = 1;
  std::vector<double> min, mean, max;  // per column of analyze_columns()
  nlohmann::json json;
};

// The table's columns: the name printed, the JSON key, whether it is bytes, and the value.
struct AnalyzeColumn {
  const char* name;
  const char* key;
  bool bytes;
  double (*get)(const RankCost&);
};
const std::vector<AnalyzeColumn>& analyze_columns();

AnalyzePoint analyze_point(Opened& o, BuildOptions bo, const AnalyzeRequest& r);

struct AnalyzeResult {
  std::vector<AnalyzePoint> points;
  int status = 0;
  nlohmann::json json() const;  // one object for one N, else an array
};
AnalyzeResult analyze(const AnalyzeRequest& r);

// ---- sim --------------------------------------------------------------------------------------

// A --platform value read once (a spec, "@FILE" or an XML file; "" = the default platform, said
// so in the result). Throws BadInput with the place in the string or file.
sim::PlatformChoice read_platform(const std::string& given);

struct SimRequest {
  TargetRequest target;
  sim::PlatformChoice platform;  // api::read_platform (not read: the default platform)
  sim::SimOptions options;
  AlgoChoice algo;             // the collectives' algorithms (empty: Open MPI's choice, NCCL's on GPU nodes)
  bool allow_defects = false;  // simulate a schedule the check before the run finds a defect in
  bool memo = false;           // collectives costed once per shape (sim --collectives memo; analytic engine)
};

// One point per rank count, each checked first (api/precheck.hpp): a defect is refused with its
// verdict (status 1) unless allow_defects.
struct SimResult {
  std::vector<sim::PointResult> points;
  int status = 0;
  nlohmann::json json() const;  // one object for one N, else an array (`sim --json`)
};
SimResult simulate(const SimRequest& r);

// One point of a request, with its check before the run (cached per target, N and parameters).
sim::PointResult sim_point(const sim::PointSpec& spec, bool allow_defects, const std::string& name);

}  // namespace sg::api
