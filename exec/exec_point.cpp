#include "exec/exec_point.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "core/base/sizes.hpp"
#include "core/graph/stream_order.hpp"
#include "core/interp/bus_bandwidth.hpp"
#include "core/interp/send_policy.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"
#include "exec/executor/executor.hpp"
#include "exec/launch/launcher.hpp"
#include "exec/mpi/mpi_collective.hpp"

namespace sg::exec {

namespace {

using Clock = std::chrono::steady_clock;

// The slowest rank's mean time of f(true) over `iters` calls, after `warmup` untimed f(false)
// and a barrier. A barrier first too: a receive from any source in the run before (--check's)
// must not take a message of these runs, or a rank whose message it was left for waits in that
// run while the receiver waits for it at the collective after it (a hang, 1 run in 10 of
// wildcard_sum.sched under load).
template <class Fn>
double slowest_mean(MPI_Comm world, int warmup, int iters, Fn&& f) {
  MPI_Barrier(world);
  for (int k = 0; k < warmup; ++k) f(false);
  MPI_Barrier(world);
  auto t0 = Clock::now();
  for (int k = 0; k < iters; ++k) f(true);
  double mine = std::chrono::duration<double>(Clock::now() - t0).count() / iters, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, world);
  return all;
}

}  // namespace

void say(const std::string& text) {
  ssize_t w = write(2, text.data(), text.size());
  (void)w;
}

namespace {

[[noreturn]] void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let other stuck ranks print too
  MPI_Abort(MPI_COMM_WORLD, code);                              // the whole job, whatever communicator the point ran on
  std::_Exit(code);
}

}  // namespace

int run_exec_point(const PointRequest& req, MPI_Comm world, PointRow& row) {
  int me = 0, size = 1;
  MPI_Comm_rank(world, &me);
  MPI_Comm_size(world, &size);
  DeviceOps* device = req.device;
  StreamComm* stream = req.stream;
  // Every rank elaborates its own program and may find errors the others do not (one rank's
  // program skips the statements of other ranks): the diagnostics are captured, the ranks
  // agree on the outcome, and the lowest rank that failed prints them (rank 0 its warnings).
  std::ostringstream diag;
  Session ses;
  // A failure on this rank, after "stepgraph exec: rank R: ": at its statement (the source line
  // and a caret) when it has one.
  auto rank_failure = [&](const Diagnostic& d) { return d.loc.valid() ? render_diagnostic(d, ses.sources) : d.message + "\n"; };
  StreamOrder order;
  std::unique_ptr<StepGraph> g;
  int rc = 0;
  BuildOptions bo;
  bo.elab.nranks = static_cast<uint32_t>(size);
  bo.elab.only_rank = me;
  bo.elab.sets = req.params;
  bo.elab.max_memory = req.max_memory;
  Target t;
  if (rc == 0) {
    t = open_target(ses, req.target);
    if (ses.diags.has_errors() || !t.opened()) {
      ses.diags.print(diag, ses.sources);
      rc = 2;
    }
  }
  if (rc == 0) {
    g = build(ses, t, bo).graph;
    if (g && stream) {
      // The stream order needs every rank's program: the whole schedule, elaborated here too.
      BuildOptions whole = bo;
      whole.elab.only_rank = -1;
      size_t seen = ses.diags.all().size();
      std::unique_ptr<StepGraph> full = build(ses, t, whole).graph;
      if (!full || !stream_order(*full, static_cast<uint32_t>(me), order, ses.diags)) g.reset();
      ses.diags.drop_warnings_from(seen);  // its warnings repeat the rank program's
    }
    if (!g) {
      if (const Diagnostic* why = ses.diags.unsupported_since(0))
        diag << "exec " << t.name() << " N = " << size << ": unsupported (" << unsupported_reason(*why) << ")\n";
      ses.diags.print(diag, ses.sources);
      rc = 2;
    } else {
      for (const auto& d : ses.diags.all())
        if (d.severity != Severity::Error) diag << render_diagnostic(d, ses.sources);
    }
  }
  int failed_at = rc ? me : size, first_failed = size;
  MPI_Allreduce(&failed_at, &first_failed, 1, MPI_INT, MPI_MIN, world);
  if ((first_failed < size && me == first_failed) || (first_failed == size && me == 0 && req.print_warnings)) say(diag.str());
  else if (first_failed < size) say(job_pointer(me, size, first_failed, 2));
  if (first_failed < size) return 2;
  // FIFO connections (an MSCCL program): a send completes once its message is in the connection,
  // which the executor does by copying it (Executor's buffered sends); the transfer lane of
  // --transport nccl issues sends that complete with their receive, so it cannot run them.
  if (send_policy(*g).fifo() && stream) {
    say(me == 0 ? "stepgraph: error: exec of " + g->schedule +
                      ": its sends go into FIFO connections (MSCCL) and complete without their receiver, which --transport nccl's "
                      "grouped transfers do not; use --transport staged or auto\n"
                : job_pointer(me, size, 0, 2));
    return 2;
  }
  row.schedule = g->schedule;
  row.params = parameter_values(*g);
  // Not an attention schedule's: its declared types lay out its tiles, and --dtype is refused below.
  bool attention_expect = std::any_of(g->expects.begin(), g->expects.end(), [](const Expectation& x) {
    return x.kind == ExpectKind::Attention || x.kind == ExpectKind::AttentionBackward;
  });
  if (req.dtype_forced && !attention_expect)
    for (BufferInfo& b : g->buffers) {
      b.dtype = req.dtype;
      b.chunk_elems = b.chunk_bytes / dtype_size(req.dtype);
    }
  row.size = expected_size(*g, row.kind);
  row.value = req.value;
  ExecOptions eo;
  eo.timeout_s = req.timeout_s;
  eo.device = device;
  eo.device_direct = req.direct;
  eo.ipc = req.ipc;
  eo.node_of = req.node_of;
  eo.lanes = device && !stream && !req.device_sync;
  eo.stream = stream;
  eo.order = stream ? &order : nullptr;

  // Owned so that a refused setup frees its communicators before MPI_Finalize.
  auto owned = std::make_unique<Executor>(*g, ses.sources, world, eo);
  Executor& ex = *owned;
  {
    // The lowest rank that refused with a reason of its own says why; every rank exits 2.
    Diagnostics refused;
    bool ok = ex.setup(refused);
    int failed = ok ? 0 : 1, any = 0, says = ok || !refused.has_errors() ? size : me, sayer = size;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, world);
    MPI_Allreduce(&says, &sayer, 1, MPI_INT, MPI_MIN, world);
    if (any) {
      if (me == sayer) say(refused.render(ses.sources));  // at its statement, or "stepgraph: error: …"
      else say(job_pointer(me, size, sayer < size ? sayer : -1, 2));
      return 2;
    }
  }
  if (ex.has_attention()) {
    row.shape = ex.attention_layout();
    // Attention buffers have fixed types (q, kv in elem's type, outputs fp32).
    if (req.dtype_forced) {
      say(me == 0 ? "stepgraph: error: --dtype does not apply to attention schedules: their inputs' type is Q's and KV's declared "
                    "dtype, else the parameter elem (--set elem=4 for fp32, 2 for bf16), and their outputs are fp32\n"
                  : job_pointer(me, size, 0, 2));
      return 2;
    }
    // Real tiles on CPUs: about 25 GFLOP/s per core (exec/attention/attention_kernels); --check's
    // reference on rank 0 does all ranks' tiles at once in double precision. Say so before a run
    // of the library's default sizes (128K tokens) takes hours.
    double mine = 0, most = 0, total = 0;
    for (StepId s = 0; s < g->size(); ++s)
      if (g->kind(s) == StepKind::Compute && g->compute(s).kind != ComputeKind::Generic) mine += g->compute(s).flops;
    MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, world);
    MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, world);
    double est_s = most * (req.iters + req.warmup + (req.check ? 1 : 0)) / 25e9 + (req.check ? total / 5e9 : 0);
    if (me == 0 && est_s > 60)
      say("stepgraph exec: warning: the busiest rank's attention tiles come to " + std::to_string(static_cast<long long>(most / 1e9)) +
          " GFLOP per iteration" +
          (req.check ? " and the check's reference to " + std::to_string(static_cast<long long>(total / 1e9)) + " GFLOP" : std::string()) +
          ": about " + std::to_string(static_cast<long long>(est_s)) +
          " s on CPU cores; choose a smaller --set seq (and heads, dim) for a CPU run\n");
  }
  row.redop = op_name(ex.reduce_op());
  row.plan = ex.plan();
  for (const BufferInfo& b : g->buffers) row.shown_type = b.dtype;
  if (!g->expects.empty() && !g->expects[0].bufs.empty()) row.shown_type = g->buffers[g->expects[0].bufs[0].buf].dtype;
  const DType shown_type = row.shown_type;
  row.count = row.size / dtype_size(shown_type);

  auto one = [&](double* compute, bool flops = true, bool values = false) {
    RunResult r = ex.run(flops, values);
    // Each report in one write: the ranks print at the same moment.
    if (r.stalled) {
      say("stepgraph exec: " + r.report + "\n");
      abort_job(3);
    }
    if (!r.completed) {
      say("stepgraph exec: rank " + std::to_string(me) + ": " + (r.error ? rank_failure(*r.error) : "the run did not complete\n") +
          (r.report.empty() ? "" : r.report + "\n"));
      abort_job(3);
    }
    if (compute) *compute += r.compute_s;
  };
  // Fault injection for the tests: STEPGRAPH_EXEC_DIE=R makes rank R die (SIGKILL) before it
  // runs, as a crashed or killed process would; the launcher must take the job down.
  // STEPGRAPH_EXEC_DIE=R@V: at the point whose swept value is V (the rows before must stay).
  if (const char* die = std::getenv("STEPGRAPH_EXEC_DIE"); die && std::atoi(die) == me) {
    const char* at = std::strchr(die, '@');
    if (!at || std::strtoull(at + 1, nullptr, 10) == req.value) raise(SIGKILL);
  }
  auto fill = [&] {
    Diagnostics failed;
    if (!ex.fill_inputs(failed)) {
      say("stepgraph exec: rank " + std::to_string(me) + ": " +
          (failed.all().empty() ? "a device copy failed\n" : rank_failure(failed.all().front())));
      abort_job(3);
    }
  };
  fill();
  // MPI's own collective on the same inputs, for --check: the postcondition's range before the
  // run (an all-to-all's input buffer), compared afterwards with ours, element for element.
  // It runs on the postconditions' groups (one call per group), as the schedule does.
  MpiCollectiveGroup ng;
  mpi_collective_group(*g, world, ng);
  row.group_ranks = ng.size > 0 ? ng.size : size;
  row.native_why = ng.why;
  const Expectation* x = ng.x;
  MpiCollective ref;  // set up once the inputs are known
  ref.kind = row.kind;
  // Only where the postcondition's buffer holds inputs: initialised by `init`, written by no
  // compute step (a training step's gradients are computed: MPI would get other inputs).
  int inputs = 0;
  if (x) {
    const Range& in = x->bufs[0];
    for (const InitRule& ir : g->inits)
      if (ir.range.buf == in.buf && ir.range.lo <= in.lo && ir.range.lo + ir.range.cnt >= in.lo + in.cnt) inputs = 1;
    std::vector<Range> w;
    for (StepId s = 0; s < g->size() && inputs; ++s)
      if (g->kind(s) == StepKind::Compute) {
        w.clear();
        g->writes(s, w);
        for (const Range& r : w)
          if (r.buf == in.buf) inputs = 0;
      }
  }
  MPI_Allreduce(MPI_IN_PLACE, &inputs, 1, MPI_INT, MPI_LAND, world);
  bool compare_mpi = req.check && inputs && ng.why.empty() && ref.available() && dtype_supported(shown_type);
  std::vector<unsigned char> input;
  // Out of place (two ranges: MSCCL's i and o): MPI runs the in-place form on the input laid out
  // as it wants it (an all-gather's block at this rank's place), and its result is held against
  // the output range.
  bool two = x && x->bufs.size() == 2 &&
             (x->kind == ExpectKind::Allreduce || x->kind == ExpectKind::Allgather || x->kind == ExpectKind::ReduceScatter);
  if (compare_mpi && x) {
    const Range& in = x->bufs[0];
    if (two && x->kind == ExpectKind::Allgather) {
      input.assign(g->range_bytes(x->bufs[1]), 0);
      std::memcpy(input.data() + static_cast<uint64_t>(ng.index) * g->range_bytes(in), ex.data(in), g->range_bytes(in));
    } else {
      input.assign(ex.data(in), ex.data(in) + g->range_bytes(in));
    }
  }
  if (req.check) {
    one(nullptr, true, true);
    CheckResult cr = ex.compare_expected();
    if (cr.error) {
      say("stepgraph exec: rank " + std::to_string(me) + ": " + rank_failure(*cr.error));
      abort_job(3);
    }
    unsigned long long w = cr.wrong, all = 0;
    MPI_Reduce(&w, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, world);
    if (cr.wrong) say("stepgraph exec: " + cr.first + " (" + std::to_string(cr.wrong) + " wrong on rank " + std::to_string(me) + ")\n");
    row.wrong = all;
    row.checked = true;
    if (ex.has_attention()) {
      AttentionCheck ac = ex.check_attention();
      if (me == 0) {
        if (ac.wrong) say("stepgraph exec: " + ac.first + " (" + std::to_string(ac.wrong) + " attention elements outside the tolerance)\n");
        row.attention = true;
        row.wrong += ac.wrong;
        row.err_o = ac.err_o;
        row.err_dq = ac.err_dq;
        row.err_dkv = ac.err_dkv;
        row.max_abs_err = ac.max_abs_err();
        row.tolerance = ac.tolerance;
        row.attention_checked = ac.checked;
      }
    }
    unsigned long long differ = 0;
    if (compare_mpi && x) {
      uint64_t esize = dtype_size(shown_type);
      ref = mpi_collective_for(x->kind, shown_type, ex.reduce_op(), ng.root, input.size(), ng.size);
      ref.a = input;
      ref.run(ng.comm);
      // Where MPI's result is, and the part of ours it must equal.
      const unsigned char* theirs = ref.a.data();
      const unsigned char* ours = ex.data(x->bufs[two ? 1 : 0]);
      uint64_t n = input.size();
      switch (ref.kind) {
        case ExpectKind::Reduce:
          if (ng.index != ref.root) n = 0;
          break;
        case ExpectKind::ReduceScatter:
          theirs = ref.b.data();
          if (!two) ours += static_cast<uint64_t>(ng.index) * static_cast<uint64_t>(ref.per) * esize;
          n = static_cast<uint64_t>(ref.per) * esize;
          break;
        case ExpectKind::Alltoall:
          theirs = ref.b.data();
          if (x->bufs.size() > 1) ours = ex.data(x->bufs[1]);
          break;
        default: break;
      }
      for (uint64_t e = 0; e + esize <= n; e += esize) differ += std::memcmp(theirs + e, ours + e, esize) != 0;
    }
    if (compare_mpi) {  // every rank: those in no group add nothing
      unsigned long long total = 0;
      MPI_Reduce(&differ, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, world);
      row.mpi_differs = static_cast<int64_t>(total);
    }
    fill();
  }
  double compute = 0;
  row.time_s = slowest_mean(world, req.warmup, req.iters, [&](bool timed) { one(timed ? &compute : nullptr); });
  compute /= req.iters;
  double any_compute = 0;
  MPI_Allreduce(&compute, &any_compute, 1, MPI_DOUBLE, MPI_MAX, world);
  // Overlap only where there is compute to hide behind: flops to burn or tiles to compute (a
  // compute step with flops = 0 still writes its values, which is no work to hide anything).
  int work = 0, any_work = 0;
  for (StepId s = 0; s < g->size() && !work; ++s)
    if (g->kind(s) == StepKind::Compute && (g->compute(s).flops > 0 || g->compute(s).kind != ComputeKind::Generic)) work = 1;
  MPI_Allreduce(&work, &any_work, 1, MPI_INT, MPI_MAX, world);
  if (any_compute > 0 && any_work) {
    row.compute_s = any_compute;
    row.comm_s = slowest_mean(world, std::min(req.warmup, 1), req.iters, [&](bool) { one(nullptr, false); });
    // What was hidden is at most the shorter of the two: noise must not claim more.
    double hidden = std::clamp(row.compute_s + row.comm_s - row.time_s, 0.0, std::min(row.compute_s, row.comm_s));
    if (row.comm_s > 0) row.overlap = hidden / row.comm_s;
  }
  if (req.compare_native && ng.why.empty()) {
    MpiCollective nat = mpi_collective_for(row.kind, shown_type, ex.reduce_op(), ng.root, row.size, ng.size);
    if (!nat.available()) row.native_why = "MPI has no collective for its postcondition";
    else
      row.native_s = slowest_mean(world, req.warmup, req.iters, [&](bool) {
        if (x) nat.run(ng.comm);
      });
  }
  return 0;
}

}  // namespace sg::exec
