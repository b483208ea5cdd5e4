// bench/verify: both engines over a range of N, on three families:
//   ring      — the library's ring all-reduce (deterministic; ok),
//   gather    — a wildcard gather that stores messages in arrival order (a wrong result to find),
//   wildsum   — a wildcard reduction to rank 0, right in every arrival order (ok: every matching
//               must be covered: (N-1)! orders, about N 2^N replays with the explicit engine's
//               state caching, since the states are the subsets of senders already received).
// Then the default engine choice (auto, both semantics, as `stepgraph verify` runs it) on
//   ringtag   — the library's parity_ring_allgather: an MPI ring all-gather, every message on
//               tag 0 (the program of issue 6, where z3 once gave a false wrong-result), and
//   alltoall  — the library's pairwise all-to-all,
// at N = 16, 32, 64 against the goal of 10 s, and on every library schedule at N = 64.
// Each run happens in its own process (peak memory is its own; a run past the time limit is
// killed). The baseline, measured in the same run, is one execution of the reference
// interpreter on the same graph: the ratio says what deciding every execution costs over
// running one. The report ends with the N at which Z3 first takes more than 60 s per family.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/child_process.hpp"
#include "core/dsl/library.hpp"
#include "core/dsl/session.hpp"
#include "core/interp/interpret.hpp"
#include "core/pipeline.hpp"
#include "verify/verify.hpp"

using namespace sg;
using namespace sg::verify;
using Clock = std::chrono::steady_clock;

namespace {

const char* kGather = R"(schedule gather() {
  buffer g[N] bytes 8;
  init g owned;
  expect gather(g, 0);
  on 0 { for k in 1 .. N { recv g[k] from any; } }
  on r in 1 .. N { send g[r] to 0; }
}
)";

const char* kWildSum = R"(schedule wildsum() {
  buffer s[1] bytes 8;
  init s contrib;
  expect reduce(s, 0);
  on 0 { for k in 1 .. N { recv s[0] from any reduce; } }
  on r in 1 .. N { send s[0] to 0; }
}
)";

struct Row {
  bool ok = false;
  bool killed = false;
  char verdict[24] = {};
  double engine_s = 0, interp_s = 0;
  uint64_t steps = 0, executions = 0;
  long peak_kb = 0;
};

Target resolve(Session& s, const std::string& family) {
  if (family == "ring") return open_target(s, "ring_allreduce");
  if (family == "alltoall") return open_target(s, "pairwise_alltoall");
  if (family == "ringtag") return open_target(s, "parity_ring_allgather");
  const char* text = family == "gather" ? kGather : family == "wildsum" ? kWildSum : nullptr;
  if (!text) return open_target(s, family);  // a library schedule
  const Program* p = s.load_text(family + ".sched", text);
  return Target{p, p->schedules.back().get()};
}

// The default engine choice on both semantics, timed end to end (elaboration included), as
// `stepgraph verify` runs it.
Row run_default(const std::string& family, uint32_t n) {
  Row row;
  auto t0 = Clock::now();
  Session s;
  Target t = resolve(s, family);
  BuildOptions bo;
  bo.elab.nranks = n;
  bo.elab.lifecycle_as_findings = true;
  auto g = build(s, t, bo).graph;
  if (!g) {
    std::snprintf(row.verdict, sizeof row.verdict, "refused");
    row.ok = true;
    return row;
  }
  row.steps = g->size();
  VerifyReport rep = verify_graph(*g, VerifyOptions{});
  row.engine_s = std::chrono::duration<double>(Clock::now() - t0).count();
  auto t1 = Clock::now();
  InterpResult ir = interpret(*g);
  row.interp_s = std::chrono::duration<double>(Clock::now() - t1).count();
  std::snprintf(row.verdict, sizeof row.verdict, "%s%s", verdict_name(rep.worst()), rep.modes.front().ran_z3 ? "" : " (no z3)");
  row.ok = true;
  return row;
}

Row run_one(const std::string& family, uint32_t n, bool z3) {
  Row row;
  Session s;
  Target t = resolve(s, family);
  BuildOptions bo;
  bo.elab.nranks = n;
  bo.elab.lifecycle_as_findings = true;
  auto g = build(s, t, bo).graph;
  if (!g) return row;
  row.steps = g->size();
  auto t0 = Clock::now();
  InterpResult ir = interpret(*g);
  row.interp_s = std::chrono::duration<double>(Clock::now() - t0).count();
  VerifyOptions vo;
  vo.engine = z3 ? Engine::Z3 : Engine::Explicit;
  vo.modes = {SendMode::Eager};
  vo.explicit_opts.max_executions = 1'000'000;
  VerifyReport rep = verify_graph(*g, vo);
  const ModeResult& m = rep.modes.front();
  const EngineResult& e = z3 ? m.z3_result : m.explicit_result;
  row.engine_s = e.seconds;
  row.executions = e.executions;
  std::snprintf(row.verdict, sizeof row.verdict, "%s", verdict_name(e.verdict));
  row.ok = true;
  return row;
}

Row in_child(const std::string& family, uint32_t n, bool z3, int limit_s) {
  bool finished = false;
  long peak = 0;
  Row r = run_in_child<Row>([&] { return run_one(family, n, z3); }, static_cast<unsigned>(limit_s), finished, peak);
  r.killed = !finished;
  r.peak_kb = peak;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  // --default: only the default engine choice's section (the engines' scaling takes half an hour).
  bool only_default = argc > 1 && std::strcmp(argv[1], "--default") == 0;
  int limit = quick ? 60 : 150;
  struct Family {
    std::string name;
    std::vector<uint32_t> explicit_ns, z3_ns;
  };
  std::vector<Family> families;
  if (quick) {
    families = {{"ring", {8, 32}, {4, 8}}, {"gather", {3, 5}, {3, 5}}, {"wildsum", {3, 5}, {3, 5}}};
  } else {
    families = {{"ring", {16, 64, 256, 1024}, {8, 16, 32, 48, 64, 96, 128, 160, 192, 224, 256}},
                {"gather", {3, 4, 6, 8, 10, 12, 16, 24, 32}, {3, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64}},
                {"wildsum", {3, 4, 6, 8, 9, 10}, {3, 4, 6, 8, 9, 10, 11, 12, 14, 16}}};
  }
  std::printf("bench/verify: eager semantics; time of the engine vs one run of the reference interpreter (same graph)\n");
  std::printf("runs in their own process, killed after %d s\n\n", limit);
  std::printf("%-8s %-8s %6s %10s %15s %11s %10s %10s %11s %10s\n", "family", "engine", "N", "steps", "verdict", "engine s", "interp s",
              "ratio", "executions", "peak MiB");
  std::vector<std::string> crossing;
  if (only_default) families.clear();
  for (const auto& f : families) {
    for (int z3 = 0; z3 < 2; ++z3) {
      const auto& ns = z3 ? f.z3_ns : f.explicit_ns;
      bool crossed = false;
      for (uint32_t n : ns) {
        Row r = in_child(f.name, n, z3 != 0, limit);
        if (r.killed) {
          char killed_at[32];  // not (">" + std::to_string(limit) + " s"): GCC 12's false -Wrestrict
          std::snprintf(killed_at, sizeof killed_at, ">%d s", limit);
          std::printf("%-8s %-8s %6u %10s %15s %11s\n", f.name.c_str(), z3 ? "z3" : "explicit", n, "-", "killed", killed_at);
          if (z3 && !crossed)
            crossing.push_back(f.name + ": z3 takes more than 60 s at N = " + std::to_string(n) + " (killed at " + std::to_string(limit) +
                               " s)");
          crossed = true;
          break;
        }
        if (!r.ok) {
          std::printf("%-8s %-8s %6u  failed to build\n", f.name.c_str(), z3 ? "z3" : "explicit", n);
          continue;
        }
        double ratio = r.interp_s > 0 ? r.engine_s / r.interp_s : 0;
        std::printf("%-8s %-8s %6u %10llu %15s %10.3fs %9.4fs %9.0fx %11llu %10.1f\n", f.name.c_str(), z3 ? "z3" : "explicit", n,
                    static_cast<unsigned long long>(r.steps), r.verdict, r.engine_s, r.interp_s, ratio,
                    static_cast<unsigned long long>(r.executions), static_cast<double>(r.peak_kb) / 1024.0);
        std::fflush(stdout);
        if (z3 && r.engine_s > 60 && !crossed) {
          crossing.push_back(f.name + ": z3 takes more than 60 s at N = " + std::to_string(n) + " (" + std::to_string(r.engine_s) + " s)");
          crossed = true;
          break;
        }
      }
      if (z3 && !crossed) crossing.push_back(f.name + ": z3 stays under 60 s up to N = " + std::to_string(ns.back()));
    }
  }
  std::printf("\n");
  for (const auto& c : crossing) std::printf("%s\n", c.c_str());

  // The default engine choice: the goal is an answer within 10 s for each.
  std::printf("\ndefault engine choice (auto), rendezvous and eager, elaboration included; goal: 10 s each\n\n");
  std::printf("%-32s %6s %10s %18s %10s %10s %12s\n", "schedule", "N", "steps", "verdict", "verify s", "interp s", "of the goal");
  std::vector<std::pair<std::string, uint32_t>> runs;
  for (const char* f : {"ringtag", "alltoall"})
    for (uint32_t n : quick ? std::vector<uint32_t>{8, 16} : std::vector<uint32_t>{16, 32, 64}) runs.emplace_back(f, n);
  if (!quick) {
    Session s;
    for (const auto& e : library()) runs.emplace_back(e.name, 64u);
  }
  double worst = 0;
  for (const auto& [f, n] : runs) {
    bool finished = false;
    long peak = 0;
    std::string fam = f;
    uint32_t nn = n;
    Row r = run_in_child<Row>([&] { return run_default(fam, nn); }, static_cast<unsigned>(limit), finished, peak);
    if (!finished) {
      char killed_at[32];  // not (">" + std::to_string(limit) + " s"): GCC 12's false -Wrestrict
      std::snprintf(killed_at, sizeof killed_at, ">%d s", limit);
      std::printf("%-32s %6u %10s %18s %10s\n", f.c_str(), n, "-", "killed", killed_at);
      worst = 1e9;
      continue;
    }
    worst = std::max(worst, r.engine_s);
    std::printf("%-32s %6u %10llu %18s %9.3fs %9.4fs %11.1f%%\n", f.c_str(), n, static_cast<unsigned long long>(r.steps), r.verdict,
                r.engine_s, r.interp_s, 100.0 * r.engine_s / 10.0);
    std::fflush(stdout);
  }
  std::printf("\nslowest default run: %.3f s (%.1f%% of the 10 s goal)\n", worst, 100.0 * worst / 10.0);
  return 0;
}
