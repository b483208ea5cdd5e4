// The one road from a target to a step graph, which every command and benchmark takes:
//
//   open_target(spec)      a front end reads the target (today: the schedule language — a .sched
//                          file, FILE:SCHEDULE or a library name) and reports what is wrong with it
//   build(target, options) elaborate for N ranks and the parameters, run the passes (match,
//                          collectives, prune, validate), optionally replace collectives by
//                          library algorithms, with the --dump-after text at every point asked
//
// A second front end (MSCCL XML) is one entry in the table in pipeline.cpp: how to recognise its
// targets, how to open one, and how to elaborate it into a step graph; the passes, expansion and
// dumps after that are shared (docs/architecture.md, "Adding a front end").
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/expand_collectives.hpp"

namespace sg {

// --dump-after: the points to print ("parse", "elaborate", a pass name, or "all") and where the
// text goes. The pipeline renders the text (the program after parse, the graph after the
// others); the caller decides where it goes and under which heading.
struct DumpRequest {
  std::vector<std::string> after;
  std::function<void(const std::string& point, const std::string& text)> sink;
  bool wants(const std::string& point) const;
};

// What becomes of collective steps.
enum class Expansion : uint8_t {
  None,     // kept as collective steps (check, verify, exec: MPI's own collectives run them)
  Always,   // every instance replaced by a library algorithm (compile --expand)
  ForCost,  // replaced where some instance is complete and consistent: the traffic sim times and
            // analyze counts (a graph with only broken instances is kept: it is a deadlock)
};

struct BuildOptions {
  ElabOptions elab;
  DumpRequest dump;
  Expansion expand = Expansion::None;
  AlgoChoice algo;               // the algorithms for the expansion (default: Open MPI's choice)
  bool keep_as_written = false;  // an expanded build also returns the graph before expansion
  // Bytes a step the graph's consumer keeps beside it (sim's runtime and symmetry search), counted
  // against elab.max_memory for the expansion as elab.consumer_bytes is for elaboration.
  uint64_t consumer_bytes_per_step = 0;
  SizeEstimate* estimate = nullptr;  // elaboration's size estimate, when the caller wants it
};

struct Built {
  std::unique_ptr<StepGraph> graph;       // null when the build failed: the errors are in the session
  std::unique_ptr<StepGraph> as_written;  // keep_as_written, and collectives were expanded
  ExpandReport expansion;                 // what the expansion did, instance by instance
  // The build failed only on a `require`: the schedule does not support this N or these values.
  // Still exit 2, but the commands say "unsupported (REASON)" instead of "bad input".
  bool unsupported = false;
  std::string unsupported_reason;
  // Seconds spent in each phase (a benchmark reads them; dumps are included where asked).
  double elaborate_s = 0, passes_s = 0, expand_s = 0;
  bool ok() const { return graph != nullptr; }
};

// Opens a target through the front end that claims it. Reports errors in s.diags and returns a
// Target without a schedule on failure. With "parse" (or "all") in dump->after, the program read
// goes to dump->sink.
Target open_target(Session& s, const std::string& spec, const DumpRequest* dump = nullptr);

// Builds one instance of an opened target. Errors (and the expansion's notes) go to s.diags.
Built build(Session& s, const Target& t, const BuildOptions& o);

// 80% of the memory this process may still use (the host's MemAvailable, or less under a cgroup
// limit; core/base/memory.hpp): the default bound over which an instance is refused before it
// is built (--max-memory).
uint64_t default_memory_limit();

// The names --dump-after accepts: parse, elaborate and every pass.
std::vector<std::string> dump_point_names();

// "allreduce over 8 ranks, 1.0 MiB: ring_allreduce (why)": what became of one instance.
std::string expansion_line(const ExpandedInstance& e);

// The pipeline's instantiation for expand_collectives: a library algorithm elaborated and through
// the passes (its diagnostics in the caller's, apart from the session's), and the passes again
// over the expanded graph.
Instantiation library_instantiation(Session& s);

}  // namespace sg
