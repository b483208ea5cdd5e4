// bench/compile: how fast and how compact elaboration is, on the ring all-reduce.
//
// For N = 256, 1024, 4096 it builds ring_allreduce through the whole front end (estimate,
// elaborate, passes) and, as the baseline, with a hand-written C++ generator that emits the same
// steps and dependencies straight into the same StepGraph (the cost of the IR itself, with no
// language in between). Each measurement runs in a child process so its peak memory is its own.
// It prints transfers per second, bytes per step, peak memory, the ratio to the baseline, and the
// ratio of time per transfer between sizes (1.0 = cost linear in transfers). Times are the
// fastest of --reps runs (default 3): on a virtual machine, touching fresh memory is noisy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/child_process.hpp"
#include "core/dsl/session.hpp"
#include "core/pipeline.hpp"

using namespace sg;
using Clock = std::chrono::steady_clock;

namespace {

struct Result {
  double estimate_s = 0, build_s = 0, passes_s = 0;
  uint64_t steps = 0, deps = 0, transfers = 0, graph_bytes = 0;
  long peak_kb = 0;
  bool ok = false;
};

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Result run_stepgraph(uint32_t n) {
  Result r;
  Session s;
  Target t = open_target(s, "ring_allreduce");
  ElabOptions o;
  o.nranks = n;
  auto t0 = Clock::now();
  SizeEstimate est = estimate_size(s, t, o);
  r.estimate_s = since(t0);
  BuildOptions bo;
  bo.elab = o;
  Built b = build(s, t, bo);  // runs the estimate again (to refuse what is too big), then builds
  r.build_s = b.elaborate_s;
  r.passes_s = b.passes_s;
  if (!b.ok()) return r;
  const std::unique_ptr<StepGraph>& g = b.graph;
  bool ok = true;
  r.steps = g->size();
  r.deps = g->dep_total();
  r.transfers = est.transfers;
  r.graph_bytes = g->memory_bytes();
  r.ok = ok;
  return r;
}

// The same graph, written by hand: ring reduce-scatter then ring all-gather, with the hazard
// rule specialised to the ring (a chunk has one writer and at most one reader between writes).
Result run_baseline(uint32_t n) {
  Result r;
  auto t0 = Clock::now();
  StepGraph g;
  g.nranks = n;
  g.buffers.push_back(BufferInfo{"data", {n}, n, (64u << 20) / n, 0, DType::F32, false, {}, 0});
  uint64_t steps = uint64_t{4} * n * (n - 1);
  g.reserve(steps, steps);
  std::vector<StepId> writer(uint64_t{n} * n, kNoStep), reader(uint64_t{n} * n, kNoStep);
  auto at = [&](uint32_t rank, uint32_t c) { return uint64_t{rank} * n + c; };
  for (int phase = 0; phase < 2; ++phase) {
    for (uint32_t s = 0; s + 1 < n; ++s) {
      for (uint32_t rk = 0; rk < n; ++rk) {
        uint32_t c = phase == 0 ? (rk + n - s % n) % n : (rk + 1 + n - s % n) % n;
        uint32_t to = (rk + 1) % n;
        StepId send = static_cast<StepId>(g.size());
        g.add_step(StepKind::Send, 0, rk, 0, Range{0, c, 1}, send + 1);
        if (writer[at(rk, c)] != kNoStep) g.add_dep(writer[at(rk, c)]);
        g.finish_step();
        reader[at(rk, c)] = send;
        g.add_step(StepKind::Recv, phase == 0 ? kFlagReduce : 0, to, 0, Range{0, c, 1}, send);
        StepId prev = reader[at(to, c)] != kNoStep ? reader[at(to, c)] : writer[at(to, c)];
        if (prev != kNoStep) g.add_dep(prev);
        g.finish_step();
        writer[at(to, c)] = send + 1;
        reader[at(to, c)] = kNoStep;
      }
    }
  }
  r.build_s = since(t0);
  r.steps = g.size();
  r.deps = g.dep_total();
  r.transfers = steps / 2;
  r.graph_bytes = g.memory_bytes();
  r.ok = true;
  return r;
}

template <class Fn>
Result in_child(Fn fn) {
  bool finished = false;
  long peak = 0;
  Result r = run_in_child<Result>(fn, 0, finished, peak);
  r.peak_kb = peak;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> ns = {256, 1024, 4096};
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) ns = {64, 256}, reps = 1;
    else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
  }
  auto best = [&](auto fn) {
    Result r = in_child(fn);
    for (int k = 1; k < reps && r.ok; ++k) {
      Result x = in_child(fn);
      if (x.ok && x.build_s < r.build_s) r.build_s = x.build_s, r.estimate_s = x.estimate_s, r.passes_s = x.passes_s;
      r.peak_kb = std::max(r.peak_kb, x.peak_kb);
    }
    return r;
  };
  std::printf("bench/compile: ring_allreduce, stepgraph front end vs a hand-written generator of the same graph\n\n");
  std::printf("%6s %12s %12s %9s %9s %9s %12s %10s %10s %10s %10s %8s\n", "N", "transfers", "steps", "estimate", "elaborate", "passes",
              "transfers/s", "bytes/step", "peak MiB", "base s", "base MiB", "ratio");
  std::vector<Result> sg_res, base_res;
  for (uint32_t n : ns) {
    Result b = best([&] { return run_baseline(n); });
    Result s = best([&] { return run_stepgraph(n); });
    if (!s.ok || !b.ok) {
      std::printf("%6u  failed\n", n);
      return 1;
    }
    if (s.steps != b.steps || s.deps != b.deps) {
      std::printf("%6u  graphs differ: %llu/%llu steps, %llu/%llu deps\n", n, (unsigned long long)s.steps, (unsigned long long)b.steps,
                  (unsigned long long)s.deps, (unsigned long long)b.deps);
      return 1;
    }
    double total = s.build_s;
    std::printf("%6u %12llu %12llu %8.3fs %8.3fs %8.3fs %12.3g %10.1f %10.1f %9.3fs %10.1f %7.2fx\n", n, (unsigned long long)s.transfers,
                (unsigned long long)s.steps, s.estimate_s, s.build_s, s.passes_s, static_cast<double>(s.transfers) / total,
                static_cast<double>(s.graph_bytes) / static_cast<double>(s.steps), static_cast<double>(s.peak_kb) / 1024.0, b.build_s,
                static_cast<double>(b.peak_kb) / 1024.0, total / b.build_s);
    sg_res.push_back(s);
    base_res.push_back(b);
  }
  std::printf("\nlinearity (time per transfer relative to N = %u; 1.00 = linear in transfers):\n", ns[0]);
  double per0 = sg_res[0].build_s / static_cast<double>(sg_res[0].transfers);
  for (size_t i = 1; i < ns.size(); ++i) {
    double per = sg_res[i].build_s / static_cast<double>(sg_res[i].transfers);
    double tratio = static_cast<double>(sg_res[i].transfers) / static_cast<double>(sg_res[i - 1].transfers);
    double time_ratio = sg_res[i].build_s / sg_res[i - 1].build_s;
    std::printf("  N = %5u: %.2f   (time ratio to N = %u: %.2f for %.2fx the transfers)\n", ns[i], per / per0, ns[i - 1], time_ratio,
                tratio);
  }
  std::printf("\npeak memory at N = %u: %.2f GiB (stepgraph), %.2f GiB (hand-written baseline)\n", ns.back(),
              static_cast<double>(sg_res.back().peak_kb) / (1024.0 * 1024.0),
              static_cast<double>(base_res.back().peak_kb) / (1024.0 * 1024.0));
  return 0;
}
