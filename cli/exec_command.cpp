// `stepgraph exec`: every process elaborates its own rank's program and runs it on real buffers
// (exec/exec_point.hpp: the executor, the check, MPI's own collective beside it); this file reads
// the flags, starts MPI, opens the device and transport (exec/transport.hpp), walks the sweep,
// asks the simulator for a prediction (--predict) and has rank 0 print the rows
// (cli/exec_table.cpp).
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "cli/sim_command.hpp"

#ifdef STEPGRAPH_HAVE_MPI
#include <mpi.h>

#include "api/precheck.hpp"
#include "cli/exec_table.hpp"
#include "core/base/sizes.hpp"
#include "core/pipeline.hpp"
#include "exec/exec_point.hpp"
#include "exec/launcher.hpp"
#include "exec/mpi_world.hpp"
#include "exec/native.hpp"
#include "exec/transport.hpp"
#endif

namespace sg::cli {

#ifndef STEPGRAPH_HAVE_MPI
int cmd_exec(const ExecOpts&) { return fail("this stepgraph was built without MPI (STEPGRAPH_WITH_MPI=OFF): exec needs it"); }
#else

namespace {

// --predict: the same schedule, all ranks, through the analytic engine on the given platform.
// Returns the predicted time, or -1 with the reason.
double predict(const ExecOpts& o, int size, const std::vector<std::string>& sets, std::string& why) {
  SimOpts so;
  so.targets = {o.target};
  so.ranks = std::to_string(size);
  so.sets = sets;
  so.max_memory = o.max_memory;
  so.platform = o.predict;
  so.model = "analytic";
  so.quiet = true;
  PointPlan plan;
  std::ostringstream sink;
  std::streambuf* saved_err = std::cerr.rdbuf(sink.rdbuf());
  double t = -1;
  if (plan_points(so, plan) == 0 && sim_options(so, plan.sim) == 0 && !plan.points.empty()) {
    PointResult pr = run_point(so, plan, 0);
    if (pr.error.empty() && pr.completed) t = pr.time_s;
    else why = pr.error.empty() ? "the simulation did not complete" : pr.error;
  } else {
    why = sink.str();
  }
  std::cerr.rdbuf(saved_err);
  return t;
}

}  // namespace

int cmd_exec(const ExecOpts& o) {
  std::string err;
  // Before MPI_Init: a launcher whose job this MPI cannot join (each process would run alone).
  exec::LauncherCheck job = exec::check_launcher(-1);
  if (!job.ok) return exec::report_refusal(job);
  if (!o.native_algo.empty() && !exec::set_native_algo(o.native_algo, err)) {
    // Every process reads the same flag: the launcher's rank 0 says why, the others point to it.
    if (job.speaks()) {
      fail(err);
      exec::let_others_speak(job.world_size);
      return 2;
    }
    std::cerr << exec::job_pointer(job.rank, job.world_size, 0, 2, "bad --native-algo");
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (exec::LauncherCheck after = exec::check_launcher(size); !after.ok) {  // and after: the launcher's world is MPI's
    exec::report_refusal(after);
    MPI_Finalize();
    return 2;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // Where the buffers live and how bytes move (host memory and MPI, or a device and its transport).
  exec::Transport tr;
  // Every exit finalizes through here: the transport's communicators are freed while MPI is up.
  auto finalize = [&] {
    tr.close();
    MPI_Finalize();
  };
  // Every rank decides the same way on bad input; only rank 0 says why, the others point to it.
  auto refuse = [&](const std::string& msg) {
    if (me == 0) fail(msg);
    else exec::say(exec::job_pointer(me, size, 0, 2));
    finalize();
    return 2;
  };
  exec::Refusal no = exec::open_transport({o.device, o.transport, o.device_sync}, MPI_COMM_WORLD, tr);
  if (no.refused) {
    if (!no.from_root) {
      // The ranks that failed say why; the others do not know which ranks those are.
      exec::say(!no.message.empty() ? no.message : exec::job_pointer(me, size, -1, 2));
      finalize();
      return 2;
    }
    return refuse(no.message);
  }
  if (!o.ranks.empty() && o.ranks != std::to_string(size))
    return refuse("-n " + o.ranks + " but the job has " + std::to_string(size) + " process" + (size == 1 ? "" : "es") +
                  " (run `mpiexec -n " + o.ranks + " stepgraph exec …`, or leave -n out)");
  if (std::string twice = repeated_set(o.sets); !twice.empty()) return refuse(twice);
  DType dtype = DType::F32;
  bool dtype_forced = !o.dtype.empty();
  if (dtype_forced && !parse_dtype(o.dtype, dtype)) return refuse("bad --dtype '" + o.dtype + "'");
  // --sweep NAME=RANGE sets any parameter the schedule declares, as in sim: size for the
  // collectives, seq (or heads, dim, batch) for attention. One point without it.
  std::vector<uint64_t> values;
  std::string sweep_param;
  if (!o.sweep.empty()) {
    auto eq = o.sweep.find('=');
    if (eq == std::string::npos || eq == 0)
      return refuse("--sweep needs NAME=RANGE, e.g. size=1KiB..64MiB or seq=1024,2048, got '" + o.sweep + "'");
    sweep_param = o.sweep.substr(0, eq);
    if (!parse_geometric(o.sweep.substr(eq + 1), true, values, err)) return refuse("bad --sweep '" + o.sweep + "': " + err);
    for (const std::string& kv : o.sets)
      if (kv.rfind(sweep_param + "=", 0) == 0)
        return refuse("--set " + kv + " and --sweep " + o.sweep + " both give " + sweep_param + ": keep one");
  }
  bool swept = !values.empty();
  if (!swept) values.push_back(0);  // one point at the schedule's own values (or --set)

  // The check before the run (cli/precheck.hpp), on rank 0 at the first point's parameters: a
  // schedule with a defect is not run as if it were sound (exit 1); --allow-defects runs it.
  api::Precheck pc;
  {
    int defect = 0;
    if (me == 0) {
      std::vector<std::pair<std::string, std::string> > sets;
      for (const std::string& kv : o.sets)
        if (auto eq = kv.find('='); eq != std::string::npos && eq > 0) sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      if (swept) sets.emplace_back(sweep_param, std::to_string(values.front()));
      uint64_t limit = default_memory_limit();
      if (!o.max_memory.empty()) parse_size(o.max_memory, limit);  // (a bad value is refused with the point)
      // Under IPC a send completes when its message was received: checked as rendezvous.
      pc = api::precheck(o.target, static_cast<uint32_t>(size), sets, limit, tr.ipc);
      defect = pc.state == api::Precheck::State::Defect ? 1 : 0;
    }
    MPI_Bcast(&defect, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (defect && !o.allow_defects) {
      if (me == 0) {
        exec::say("stepgraph: error: refused: " + pc.line() + " (--allow-defects runs it anyway)\n" + pc.detail);
      } else {
        exec::say(exec::job_pointer(me, size, 0, 1, "the check before the run found a defect"));
      }
      finalize();
      return 1;
    }
    if (defect && me == 0) exec::say("stepgraph exec: warning: " + pc.line() + " (run anyway: --allow-defects)\n");
  }

  ExecTable x{o, size, tr.device != nullptr, tr.name, tr.why, tr.device_note, swept ? sweep_param : std::string(), std::string(), nullptr};
  if (me == 0) x.check_line = pc.line(), x.check = pc.json();
  ExecPrinter printer(x);
  uint64_t total_wrong = 0, total_differs = 0;
  for (uint64_t v : values) {
    exec::PointRequest req;
    req.target = o.target;
    req.sets = o.sets;
    if (swept) req.sets.push_back(sweep_param + "=" + std::to_string(v));
    req.max_memory = o.max_memory;
    req.dtype_forced = dtype_forced;
    req.dtype = dtype;
    req.iters = o.iters;
    req.warmup = o.warmup;
    req.timeout_s = o.timeout_s;
    req.check = o.check;
    req.compare_native = o.compare == "native";
    req.device_sync = o.device_sync;
    req.device = tr.device;
    req.direct = tr.direct;
    req.ipc = tr.ipc;
    req.node_of = tr.node_of;
    req.stream = tr.stream();
    req.print_warnings = v == values.front();
    req.value = v;
    exec::PointRow row;
    if (exec::run_exec_point(req, MPI_COMM_WORLD, row) != 0) {
      if (me == 0 && v != values.front()) printer.end(total_wrong);  // the rows before stay a whole table
      finalize();
      return 2;
    }
    if (!o.predict.empty() && me == 0) row.predicted_s = predict(o, size, req.sets, row.predict_error);
    // Two counts, kept apart: our wrong elements (the #wrong column and the trailer) and where
    // MPI's own collective differs from ours (its own line); either exits 1.
    total_wrong += row.wrong;
    total_differs += static_cast<uint64_t>(std::max<int64_t>(0, row.mpi_differs));
    if (me == 0) printer.row(row);  // now: a job killed later keeps it
  }
  if (me == 0) printer.end(total_wrong);
  finalize();
  return total_wrong || total_differs ? 1 : 0;
}

#endif

}  // namespace sg::cli
