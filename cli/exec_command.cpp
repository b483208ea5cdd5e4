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

#ifdef STEPGRAPH_HAVE_MPI
#include <mpi.h>

#include "api/api.hpp"
#include "api/precheck.hpp"
#include "cli/exec_table.hpp"
#include "core/base/sizes.hpp"
#include "core/base/units.hpp"
#include "core/pipeline.hpp"
#include "exec/exec_point.hpp"
#include "exec/launch/launcher.hpp"
#include "exec/mpi/mpi_collective.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/transport.hpp"
#endif

namespace sg::cli {

#ifndef STEPGRAPH_HAVE_MPI
int cmd_exec(const ExecOpts&) { return fail("this stepgraph was built without MPI (STEPGRAPH_WITH_MPI=OFF): exec needs it"); }
#else

namespace {

// --predict: the same schedule, all ranks, through the analytic engine on the given platform
// (api::simulate, with the check before the run). Returns the predicted time, or -1 with the reason.
double predict(const ExecOpts& o, int size, const api::Params& params, uint64_t max_memory, std::string& why) {
  api::SimRequest r;
  r.target.target = o.target;
  r.target.ranks = {static_cast<uint32_t>(size)};
  r.target.params = params;
  r.target.max_memory = max_memory;
  r.options.model = sim::Model::Analytic;
  try {
    r.platform = api::read_platform(o.predict);
    // A platform file from `stepgraph calibrate` carries the measured reduction speed.
    if (std::string gamma = r.platform.gamma, bad; !gamma.empty() && !parse_seconds(gamma, r.options.runtime.gamma, bad))
      return why = "bad '# gamma=" + gamma + "' in " + o.predict + ": " + bad, -1;
    api::SimResult res = api::simulate(r);
    const sim::PointResult& pr = res.points.at(0);
    if (pr.error.empty() && pr.completed) return pr.time_s;
    why = pr.error.empty() ? "the simulation did not complete" : pr.error;
  } catch (const api::BadInput& e) {
    why = e.rendered().empty() ? e.what() : e.rendered();
  }
  return -1;
}

}  // namespace

int cmd_exec(const ExecOpts& o) {
  Diagnostics diags;
  // Before MPI_Init: a launcher whose job this MPI cannot join (each process would run alone).
  exec::LauncherCheck job = exec::check_launcher(-1);
  if (!job.ok) return exec::report_refusal(job);
  if (!o.native_algo.empty() && !exec::set_native_algo(o.native_algo, diags)) {
    // Every process reads the same flag: the launcher's rank 0 says why, the others point to it.
    if (job.speaks()) {
      fail(diags.messages());
      exec::let_others_speak(job.world_size);
      return 2;
    }
    std::cerr << exec::job_pointer(job.rank, job.world_size, 0, 2, "bad --native-algo");
    std::cerr.flush();
    exec::wait_for_speaker(job.world_size);
    return 2;
  }
  int me = 0, size = 1;
  if (exec::join_mpi_job(me, size) != 0) return 2;
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
  api::Params params;
  for (const std::string& kv : o.sets) {
    std::pair<std::string, std::string> p;
    if (!parse_set(kv, p, diags)) return refuse(diags.messages());
    params.push_back(p);
  }
  uint64_t max_memory = 0;
  if (!parse_memory_limit(o.max_memory, max_memory, diags)) return refuse(diags.messages());
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
    if (!parse_geometric(o.sweep.substr(eq + 1), true, values, diags)) return refuse("bad --sweep '" + o.sweep + "': " + diags.messages());
    for (const auto& [k, v] : params)
      if (k == sweep_param) return refuse("--set " + k + "=" + v + " and --sweep " + o.sweep + " both give " + sweep_param + ": keep one");
  }
  bool swept = !values.empty();
  if (!swept) values.push_back(0);  // one point at the schedule's own values (or --set)

  // The check before the run (api/precheck.hpp), on rank 0 at the first point's parameters: a
  // schedule with a defect is not run as if it were sound (exit 1); --allow-defects runs it.
  api::Precheck pc;
  {
    int defect = 0;
    if (me == 0) {
      api::Params sets = params;
      if (swept) sets.emplace_back(sweep_param, std::to_string(values.front()));
      // Under IPC a send completes when its message was received: checked as rendezvous.
      pc = api::precheck(o.target, static_cast<uint32_t>(size), sets, max_memory, tr.ipc);
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
    req.params = params;
    if (swept) req.params.emplace_back(sweep_param, std::to_string(v));
    req.max_memory = max_memory;
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
    if (!o.predict.empty() && me == 0) row.predicted_s = predict(o, size, req.params, max_memory, row.predict_error);
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
