// `stepgraph exec`: every process elaborates its own rank's program, runs it on real buffers
// with the MPI executor (exec/executor.hpp), checks the result against the postcondition and
// times it next to MPI's own collective; rank 0 prints a table like nccl-tests'.
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "cli/sim_command.hpp"
#include "core/graph/passes.hpp"

#ifdef STEPGRAPH_HAVE_MPI
#include <mpi.h>

#include "exec/executor.hpp"
#include "exec/host_device.hpp"
#include "exec/mpi_stream_comm.hpp"
#endif
#ifdef STEPGRAPH_HAVE_CUDA
#include "exec/cuda/cuda_ops.hpp"
#include "exec/cuda/device.hpp"
#ifdef STEPGRAPH_HAVE_NCCL
#include "exec/cuda/nccl_comm.hpp"
#endif
#endif

namespace sg::cli {

#ifndef STEPGRAPH_HAVE_MPI
int cmd_exec(const ExecOpts&) { return fail("this stepgraph was built without MPI (STEPGRAPH_WITH_MPI=OFF): exec needs it"); }
#else

namespace {

using Clock = std::chrono::steady_clock;

// Open MPI 4.1's coll_tuned algorithm numbers (ompi/mca/coll/tuned/coll_tuned_*_decision.c).
const std::map<std::string, std::map<std::string, int>>& tuned_algorithms() {
  static const std::map<std::string, std::map<std::string, int>> t = {
      {"allreduce", {{"basic_linear", 1}, {"nonoverlapping", 2}, {"recursive_doubling", 3}, {"ring", 4}, {"segmented_ring", 5}, {"rabenseifner", 6}}},
      {"allgather", {{"linear", 1}, {"bruck", 2}, {"recursive_doubling", 3}, {"ring", 4}, {"neighbor", 5}, {"two_proc", 6}}},
      {"bcast", {{"basic_linear", 1}, {"chain", 2}, {"pipeline", 3}, {"split_binary_tree", 4}, {"binary_tree", 5}, {"binomial", 6}, {"knomial", 7}, {"scatter_allgather", 8}, {"scatter_allgather_ring", 9}}},
      {"reduce", {{"linear", 1}, {"chain", 2}, {"pipeline", 3}, {"binary", 4}, {"binomial", 5}, {"in_order_binary", 6}, {"rabenseifner", 7}}},
      {"reduce_scatter_block", {{"basic_linear", 1}, {"recursive_doubling", 2}, {"recursive_halving", 3}, {"butterfly", 4}}},
      {"alltoall", {{"linear", 1}, {"pairwise", 2}, {"modified_bruck", 3}, {"linear_sync", 4}, {"two_proc", 5}}},
  };
  return t;
}

// --native-algo NAME (every collective that has it) or COLL=NAME|NUMBER: Open MPI reads these
// from the environment at MPI_Init.
bool set_native_algo(const std::string& spec, std::string& err) {
  const auto& t = tuned_algorithms();
  std::vector<std::pair<std::string, int>> set;
  auto eq = spec.find('=');
  if (eq != std::string::npos) {
    std::string coll = spec.substr(0, eq), name = spec.substr(eq + 1);
    auto c = t.find(coll);
    if (c == t.end()) return err = "--native-algo: unknown collective '" + coll + "'", false;
    auto a = c->second.find(name);
    if (a != c->second.end()) set.emplace_back(coll, a->second);
    else if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) set.emplace_back(coll, std::atoi(name.c_str()));
    else return err = "--native-algo: '" + name + "' is not one of Open MPI's " + coll + " algorithms", false;
  } else {
    for (const auto& [coll, names] : t) {
      auto a = names.find(spec);
      if (a != names.end()) set.emplace_back(coll, a->second);
    }
    if (set.empty()) return err = "--native-algo: no Open MPI collective has an algorithm named '" + spec + "' (use COLL=NAME or COLL=NUMBER)", false;
  }
  setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
  for (const auto& [coll, num] : set) setenv(("OMPI_MCA_coll_tuned_" + coll + "_algorithm").c_str(), std::to_string(num).c_str(), 1);
  return true;
}

const char* dtype_word(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::F16: return "half";
    case DType::BF16: return "bfloat16";
    default: return dtype_name(t);
  }
}

struct Row {
  uint64_t size = 0, count = 0;
  double time_s = 0, native_s = -1;
  uint64_t wrong = 0;
  bool checked = false;
  int64_t mpi_differs = -1;  // --check: elements where MPI's own collective on the same inputs differs (-1: not compared)
  // With compute steps: the mean compute time of an iteration and the communication alone (the
  // same run without the flops), both the slowest rank's; overlap = the share of the
  // communication that the compute hid: (compute + communication alone - together) / communication.
  double compute_s = -1, comm_s = -1, overlap = -1;
  double predicted_s = -1;  // --predict: the analytic simulator's time on that platform
  std::string predict_error;
  // Attention schedules under --check: the outputs against full attention on one rank.
  bool attention = false;
  double err_o = 0, err_dq = 0, err_dkv = 0, max_abs_err = 0, tolerance = 0;
  uint64_t attention_checked = 0;
  uint64_t value = 0;  // the swept parameter's value at this point
  // Attention schedules, checked or not: the layout (its shape), and the work in the count
  // FlashAttention's and ring attention's benchmarks report (exec/attention_exec.hpp), for TFLOP/s.
  exec::AttentionLayout shape;
  bool shaped() const { return shape.active; }
  double model_flops() const { return shaped() ? exec::attention_model_flops(shape) : 0; }
  double tflops() const { return time_s > 0 ? model_flops() / time_s / 1e12 : 0; }
};

void say(const std::string& text) {
  ssize_t w = write(2, text.data(), text.size());
  (void)w;
}

[[noreturn]] void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let other stuck ranks print too
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// MPI's own collective for the postcondition's kind, on `bytes` per rank of type t.
struct Native {
  ExpectKind kind = ExpectKind::Nothing;
  int root = 0;
  std::vector<unsigned char> a, b;
  int count = 0, per = 0;
  MPI_Datatype t = MPI_FLOAT;
  MPI_Op op = MPI_SUM;
  bool available() const {
    switch (kind) {
      case ExpectKind::Allreduce:
      case ExpectKind::Reduce:
      case ExpectKind::ReduceScatter:
      case ExpectKind::Allgather:
      case ExpectKind::Broadcast:
      case ExpectKind::Alltoall: return true;
      default: return false;
    }
  }
  void run(MPI_Comm c) {
    int me = 0;
    MPI_Comm_rank(c, &me);
    switch (kind) {
      case ExpectKind::Allreduce: MPI_Allreduce(MPI_IN_PLACE, a.data(), count, t, op, c); break;
      case ExpectKind::Reduce:
        if (me == root) MPI_Reduce(MPI_IN_PLACE, a.data(), count, t, op, root, c);
        else MPI_Reduce(a.data(), nullptr, count, t, op, root, c);
        break;
      case ExpectKind::ReduceScatter: MPI_Reduce_scatter_block(a.data(), b.data(), per, t, op, c); break;
      case ExpectKind::Allgather: MPI_Allgather(MPI_IN_PLACE, 0, t, a.data(), per, t, c); break;
      case ExpectKind::Broadcast: MPI_Bcast(a.data(), count, t, root, c); break;
      case ExpectKind::Alltoall: MPI_Alltoall(a.data(), per, t, b.data(), per, t, c); break;
      default: break;
    }
  }
};

// MPI's own collective for `kind` on `bytes` per rank of type t, with op and root; zeroed buffers.
Native native_for(ExpectKind kind, DType t, ReduceOp op, int root, uint64_t bytes, int size) {
  Native n;
  n.kind = kind;
  n.t = exec::mpi_type(t);
  n.op = exec::mpi_op(op, t);
  n.root = root;
  n.count = static_cast<int>(bytes / dtype_size(t));
  n.per = n.count / size;
  n.a.assign(bytes, 0);
  n.b.assign(bytes, 0);
  return n;
}

// The slowest rank's mean time of f(true) over `iters` calls, after `warmup` untimed f(false)
// and a barrier.
template <class Fn>
double slowest_mean(int warmup, int iters, Fn&& f) {
  for (int k = 0; k < warmup; ++k) f(false);
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  for (int k = 0; k < iters; ++k) f(true);
  double mine = std::chrono::duration<double>(Clock::now() - t0).count() / iters, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

}  // namespace

int cmd_exec(const ExecOpts& o) {
  std::string err;
  if (!o.native_algo.empty() && !set_native_algo(o.native_algo, err)) return fail(err);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // Where the buffers live: host memory (cpu), a CUDA device (cuda), or host memory standing in
  // for a device (host-staged: the GPU path's staged transport, testable without a GPU).
  exec::HostDeviceOps host_device;
  DeviceOps* device = nullptr;
  std::string device_note;
#ifdef STEPGRAPH_HAVE_CUDA
  cuda::CudaOps cuda_device;
#endif
  // The transport with a device: staged through host memory (works everywhere), or MPI on device
  // memory itself when the MPI is CUDA-aware (or the "device" is host memory).
  bool direct = false;
  std::string transport = "host", transport_why;
  // The stream-ordered transport (--transport nccl): NCCL on a GPU, or MPI keeping NCCL's rules
  // on the stand-in device. Transfers then go in the stream order's groups (computed per size).
  // Declared after the devices, so that it goes first even if an exception unwinds.
  std::unique_ptr<StreamComm> stream_comm;
  // Every exit finalizes through here: the transport's communicators are freed while MPI is up.
  auto finalize = [&] {
    stream_comm.reset();
    MPI_Finalize();
  };
  // Every rank decides the same way on bad input; only rank 0 says why.
  auto refuse = [&](const std::string& msg) {
    if (me == 0 && !msg.empty()) fail(msg);
    finalize();
    return 2;
  };
  if (o.device == "cpu" && o.transport != "auto") return refuse("--transport " + o.transport + " needs --device cuda (or host-staged)");
  if (o.device == "cpu" && o.device_sync) return refuse("--device-sync needs --device cuda (or host-staged)");
  if (o.transport == "nccl" && o.device_sync)
    return refuse("--device-sync does not apply to --transport nccl, whose transfers are ordered on the device's streams");
  if (o.device == "host-staged") {
    device = &host_device;
    direct = o.transport == "cuda-aware";
    transport = direct ? "cuda-aware" : "staged";
    transport_why = direct ? "--transport cuda-aware: point-to-point on the stand-in device memory itself, collectives staged"
                           : "staged through host mirrors";
    // The stand-in device defers its lanes like a GPU, in an order drawn per rank (and per
    // STEPGRAPH_LANE_SEED), so that a missing wait between lanes, or MPI touching memory before
    // the host saw the mark it needs, shows in --check.
    const char* seed = std::getenv("STEPGRAPH_LANE_SEED");
    host_device.set_lanes(static_cast<uint64_t>(me) * 7919u + (seed ? std::strtoull(seed, nullptr, 10) : 1));
    if (o.transport == "nccl") {
      stream_comm = std::make_unique<exec::MpiStreamComm>(MPI_COMM_WORLD, &host_device);
      transport = "nccl";
      transport_why = "MPI standing in for NCCL on host memory, with NCCL's rules: transfers matched by issue order, in groups issued in "
                      "one global order, each run to completion; local work and transfers on two deferred lanes interleaved at random";
    }
    device_note = "host memory standing in for a device";
  } else if (o.device == "cuda") {
#ifdef STEPGRAPH_HAVE_CUDA
    // Any error from cudaGetDeviceCount means no device; the runtime's words say which.
    cuda::DeviceProbe dp = cuda::probe_devices();
    int mine = dp.count, fewest = 0;
    MPI_Allreduce(&mine, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (fewest == 0) return refuse("--device cuda: no CUDA device (" + (dp.count ? std::string("on another rank") : dp.reason) + ")");
    // The device of this process: its rank on the node modulo the node's devices.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
    int local = 0, local_size = 1;
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    int d = cuda::device_for_local_rank(local, dp.count);
    std::string why;
    int bad = cuda_device.open(d, dp.names[static_cast<size_t>(d)], why) ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
      if (bad) say("stepgraph: error: --device cuda: rank " + std::to_string(me) + ", device " + std::to_string(d) + ": " + why + "\n");
      finalize();
      return 2;
    }
    device = &cuda_device;
    if (o.transport == "nccl") {
#ifdef STEPGRAPH_HAVE_NCCL
      // NCCL needs a GPU of its own per rank: ranks on one node must not share a device.
      int crowded = local_size > dp.count ? 1 : 0, any_crowded = 0;
      MPI_Allreduce(&crowded, &any_crowded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (any_crowded)
        return refuse("--transport nccl: NCCL needs a GPU per rank, and " + std::to_string(local_size) + " ranks on a node share " +
                      std::to_string(dp.count) + " device" + (dp.count == 1 ? "" : "s") + " (use --transport staged, or fewer ranks per node)");
      std::string id, why_id;
      int id_ok = me == 0 ? (cuda::NcclComm::unique_id(id, why_id) ? 1 : 0) : 1, all_id = 0;
      MPI_Allreduce(&id_ok, &all_id, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all_id) return refuse("--transport nccl: " + why_id);
      id.resize(128);
      MPI_Bcast(id.data(), 128, MPI_CHAR, 0, MPI_COMM_WORLD);
      auto nc = std::make_unique<cuda::NcclComm>();
      std::string why_init;
      int init_ok = nc->init(id, size, me, cuda_device.lane_stream(1), why_init) ? 1 : 0, all_init = 0;
      MPI_Allreduce(&init_ok, &all_init, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all_init) {
        if (!init_ok) say("stepgraph: error: --transport nccl: rank " + std::to_string(me) + ": " + why_init + "\n");
        nc->abort();
        finalize();
        return 2;
      }
      stream_comm = std::move(nc);
#else
      return refuse("--transport nccl: this stepgraph was built without NCCL (no nccl.h and libnccl beside the CUDA toolkit)");
#endif
    }
    device_note = dp.names[0] + (dp.count > 1 ? " and " + std::to_string(dp.count - 1) + " more" : std::string()) +
                  ", device = local rank mod " + std::to_string(dp.count) + (local_size > dp.count ? " (ranks share devices)" : "");
    std::string why_not;
    bool aware = exec::mpi_cuda_aware(why_not);
    int mine_aware = aware ? 1 : 0, all_aware = 0;
    MPI_Allreduce(&mine_aware, &all_aware, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (stream_comm) {
      transport = "nccl";
      transport_why = stream_comm->name() + ", one GPU per rank; transfers in groups issued in one global order";
    } else if (all_aware && o.transport != "staged") {
      direct = true;
      transport = "cuda-aware";
      transport_why = "the MPI library reports CUDA support (MPIX_Query_cuda_support); collectives stay staged";
    } else {
      transport = "staged";
      transport_why = o.transport == "staged" ? "--transport staged"
                      : (o.transport == "cuda-aware" ? "--transport cuda-aware falls back: " : "not CUDA-aware: ") +
                            (aware ? std::string("another rank's MPI reports no CUDA support") : why_not);
    }
#else
    return refuse("--device cuda: no CUDA device (this stepgraph was built without CUDA: STEPGRAPH_WITH_CUDA=OFF)");
#endif
  }
  if (!o.ranks.empty() && o.ranks != std::to_string(size))
    return refuse("-n " + o.ranks + " but the job has " + std::to_string(size) + " process" + (size == 1 ? "" : "es") +
                  " (run `mpiexec -n " + o.ranks + " stepgraph exec …`, or leave -n out)");
  DType dtype = DType::F32;
  bool dtype_forced = !o.dtype.empty();
  if (dtype_forced && !parse_dtype(o.dtype, dtype)) return refuse("bad --dtype '" + o.dtype + "'");
  // --sweep NAME=RANGE sets any parameter the schedule declares, as in sim: size for the
  // collectives, seq (or heads, dim, batch) for attention. One point without it.
  std::vector<uint64_t> sizes;
  std::string sweep_param;
  if (!o.sweep.empty()) {
    auto eq = o.sweep.find('=');
    if (eq == std::string::npos || eq == 0)
      return refuse("--sweep needs NAME=RANGE, e.g. size=1KiB..64MiB or seq=1024,2048, got '" + o.sweep + "'");
    sweep_param = o.sweep.substr(0, eq);
    if (!parse_geometric(o.sweep.substr(eq + 1), true, sizes, err)) return refuse("bad --sweep '" + o.sweep + "': " + err);
    for (const std::string& kv : o.sets)
      if (kv.rfind(sweep_param + "=", 0) == 0)
        return refuse("--set " + kv + " and --sweep " + o.sweep + " both give " + sweep_param + ": keep one");
  }
  bool swept = !sizes.empty();
  if (!swept) sizes.push_back(0);  // one point at the schedule's own values (or --set)

  std::vector<Row> rows;
  std::string schedule_name, redop = "sum";
  ExpectKind kind = ExpectKind::Nothing;
  DType shown_type = dtype;
  for (uint64_t sz : sizes) {
    Common c;
    c.target = o.target;
    c.ranks = std::to_string(size);
    c.sets = o.sets;
    c.max_memory = o.max_memory;
    if (swept) c.sets.push_back(sweep_param + "=" + std::to_string(sz));
    Prepared p;
    StreamOrder order;
    // Every rank elaborates its own program and may find errors the others do not (one rank's
    // program skips the statements of other ranks): the diagnostics are captured, the ranks
    // agree on the outcome, and the lowest rank that failed prints them (rank 0 its warnings).
    std::ostringstream diag;
    std::streambuf* saved = std::cerr.rdbuf(diag.rdbuf());
    int rc = prepare(c, p, false);
    std::unique_ptr<StepGraph> g;
    if (rc == 0) {
      p.opts.nranks = static_cast<uint32_t>(size);
      p.opts.only_rank = me;
      g = elaborate(p.s, p.t, p.opts);
      if (g && !run_passes(*g, p.s.diags, {}, nullptr)) g.reset();
      if (g && stream_comm) {
        // The stream order needs every rank's program: the whole schedule, elaborated here too.
        ElabOptions whole = p.opts;
        whole.only_rank = -1;
        size_t seen = p.s.diags.all().size();
        std::unique_ptr<StepGraph> full = elaborate(p.s, p.t, whole);
        if (!full || !run_passes(*full, p.s.diags, {}, nullptr) || !stream_order(*full, static_cast<uint32_t>(me), order, p.s.diags)) g.reset();
        p.s.diags.drop_warnings_from(seen);  // its warnings repeat the rank program's
      }
      if (!g) {
        if (const Diagnostic* why = p.s.diags.unsupported_since(0))
          std::cerr << "exec " << p.t.schedule->name << " N = " << size << ": unsupported (" << unsupported_reason(*why) << ")\n";
        p.s.diags.print(std::cerr, p.s.sources);
        rc = 2;
      } else {
        print_warnings(p.s);
      }
    }
    std::cerr.rdbuf(saved);
    int failed_at = rc ? me : size, first_failed = size;
    MPI_Allreduce(&failed_at, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if ((first_failed < size && me == first_failed) || (first_failed == size && me == 0 && sz == sizes.front())) say(diag.str());
    if (first_failed < size) {
      finalize();
      return 2;
    }
    schedule_name = g->schedule;
    if (dtype_forced)
      for (BufferInfo& b : g->buffers) {
        b.dtype = dtype;
        b.chunk_elems = b.chunk_bytes / dtype_size(dtype);
      }
    Row row;
    row.size = expected_size(*g, kind);
    row.value = sz;
    exec::ExecOptions eo;
    eo.timeout_s = o.timeout_s;
    eo.device = device;
    eo.device_direct = direct;
    eo.lanes = device && !stream_comm && !o.device_sync;
    eo.stream = stream_comm.get();
    eo.order = stream_comm ? &order : nullptr;

    // Owned so that a refused setup frees its communicators before MPI_Finalize.
    auto owned = std::make_unique<exec::Executor>(*g, p.s.sources, MPI_COMM_WORLD, eo);
    exec::Executor& ex = *owned;
    {
      // The lowest rank that refused with a reason of its own says why; every rank exits 2.
      bool ok = ex.setup(err);
      int bad = ok ? 0 : 1, any = 0, says = ok || err.empty() ? size : me, sayer = size;
      MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&says, &sayer, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (any) {
        if (me == sayer && !err.empty() && err.back() == '\n') say(err);  // a rendered diagnostic
        else if (me == sayer) fail(err);
        owned.reset();
        finalize();
        return 2;
      }
    }
    if (ex.has_attention()) {
      row.shape = ex.attention_layout();
      // Attention buffers have fixed types (q, kv in elem's type, outputs fp32).
      if (dtype_forced) {
        owned.reset();  // its communicators go before MPI_Finalize
        return refuse("--dtype does not apply to attention schedules: their inputs' type is the parameter elem (--set elem=4 for fp32, 2 for "
                      "bf16) and their outputs are fp32");
      }
      // Real tiles on CPUs: about 25 GFLOP/s per core (exec/attention_kernels); --check's
      // reference on rank 0 does all ranks' tiles at once in double precision. Say so before a run
      // of the library's default sizes (128K tokens) takes hours.
      double mine = 0, most = 0, total = 0;
      for (StepId s = 0; s < g->size(); ++s)
        if (g->kind(s) == StepKind::Compute && g->compute(s).kind != ComputeKind::Generic) mine += g->compute(s).flops;
      MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      double est_s = most * (o.iters + o.warmup + (o.check ? 1 : 0)) / 25e9 + (o.check ? total / 5e9 : 0);
      if (me == 0 && est_s > 60)
        say("stepgraph exec: warning: the busiest rank's attention tiles come to " + std::to_string(static_cast<long long>(most / 1e9)) +
            " GFLOP per iteration" +
            (o.check ? " and the check's reference to " + std::to_string(static_cast<long long>(total / 1e9)) + " GFLOP" : std::string()) +
            ": about " + std::to_string(static_cast<long long>(est_s)) + " s on CPU cores; choose a smaller --set seq (and heads, dim) for a CPU run\n");
    }
    redop = op_name(ex.reduce_op());
    for (const BufferInfo& b : g->buffers) shown_type = b.dtype;
    if (!g->expects.empty() && !g->expects[0].bufs.empty()) shown_type = g->buffers[g->expects[0].bufs[0].buf].dtype;
    row.count = row.size / dtype_size(shown_type);

    auto one = [&](double* compute, bool flops = true, bool values = false) {
      exec::RunResult r = ex.run(flops, values);
      // Each report in one write: the ranks print at the same moment.
      if (r.stalled) {
        say("stepgraph exec: " + r.report + "\n");
        abort_job(3);
      }
      if (!r.completed) {
        say("stepgraph exec: rank " + std::to_string(me) + ": " + (r.error.empty() ? "the run did not complete" : r.error) + "\n" +
            (r.report.empty() ? "" : r.report + "\n"));
        abort_job(3);
      }
      if (compute) *compute += r.compute_s;
    };
    // Fault injection for the tests: STEPGRAPH_EXEC_DIE=R makes rank R die (SIGKILL) before it
    // runs, as a crashed or killed process would; the launcher must take the job down.
    if (const char* die = std::getenv("STEPGRAPH_EXEC_DIE"); die && std::atoi(die) == me) raise(SIGKILL);
    auto fill = [&] {
      std::string why;
      if (!ex.fill_inputs(why)) {
        say("stepgraph exec: rank " + std::to_string(me) + ": " + why + "\n");
        abort_job(3);
      }
    };
    fill();
    // MPI's own collective on the same inputs, for --check: the postcondition's range before the
    // run (an all-to-all's input buffer), compared afterwards with ours, element for element.
    const Expectation* x = g->expects.empty() || g->expects[0].bufs.empty() ? nullptr : &g->expects[0];
    bool world_group = x && g->groups[x->group].start == 0 && g->groups[x->group].stride == 1 &&
                       g->groups[x->group].count == static_cast<uint32_t>(size);
    Native ref;  // set up once the inputs are known
    ref.kind = x ? x->kind : ExpectKind::Nothing;
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
    MPI_Allreduce(MPI_IN_PLACE, &inputs, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    bool compare_mpi = o.check && inputs && world_group && ref.available() && exec::dtype_supported(shown_type);
    std::vector<unsigned char> input;
    if (compare_mpi) {
      const Range& in = x->bufs[0];
      input.assign(ex.data(in), ex.data(in) + g->range_bytes(in));
    }
    if (o.check) {
      one(nullptr, true, true);
      exec::CheckResult cr = ex.check();
      if (!cr.error.empty()) {
        say("stepgraph exec: rank " + std::to_string(me) + ": " + cr.error + "\n");
        abort_job(3);
      }
      unsigned long long w = cr.wrong, all = 0;
      MPI_Reduce(&w, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      if (cr.wrong) say("stepgraph exec: " + cr.first + " (" + std::to_string(cr.wrong) + " wrong on rank " + std::to_string(me) + ")\n");
      row.wrong = all;
      row.checked = true;
      if (ex.has_attention()) {
        exec::AttentionCheck ac = ex.check_attention();
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
      if (compare_mpi) {
        uint64_t esize = dtype_size(shown_type);
        ref = native_for(x->kind, shown_type, ex.reduce_op(), static_cast<int>(x->root), input.size(), size);
        ref.a = input;
        ref.run(MPI_COMM_WORLD);
        // Where MPI's result is, and the part of ours it must equal.
        const unsigned char* theirs = ref.a.data();
        const unsigned char* ours = ex.data(x->bufs[0]);
        uint64_t n = input.size();
        switch (ref.kind) {
          case ExpectKind::Reduce:
            if (me != ref.root) n = 0;
            break;
          case ExpectKind::ReduceScatter:
            theirs = ref.b.data();
            ours += static_cast<uint64_t>(me) * static_cast<uint64_t>(ref.per) * esize;
            n = static_cast<uint64_t>(ref.per) * esize;
            break;
          case ExpectKind::Alltoall:
            theirs = ref.b.data();
            if (x->bufs.size() > 1) ours = ex.data(x->bufs[1]);
            break;
          default: break;
        }
        unsigned long long differ = 0, total = 0;
        for (uint64_t e = 0; e + esize <= n; e += esize) differ += std::memcmp(theirs + e, ours + e, esize) != 0;
        MPI_Reduce(&differ, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        row.mpi_differs = static_cast<int64_t>(total);
      }
      fill();
    }
    double compute = 0;
    row.time_s = slowest_mean(o.warmup, o.iters, [&](bool timed) { one(timed ? &compute : nullptr); });
    compute /= o.iters;
    double any_compute = 0;
    MPI_Allreduce(&compute, &any_compute, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (any_compute > 0) {
      row.compute_s = any_compute;
      row.comm_s = slowest_mean(std::min(o.warmup, 1), o.iters, [&](bool) { one(nullptr, false); });
      if (row.comm_s > 0) row.overlap = std::clamp((row.compute_s + row.comm_s - row.time_s) / row.comm_s, 0.0, 1.0);
    }
    if (o.compare == "native") {
      Native nat = native_for(kind, shown_type, ex.reduce_op(), g->expects.empty() ? 0 : static_cast<int>(g->expects[0].root),
                              row.size, size);
      if (nat.available()) row.native_s = slowest_mean(o.warmup, o.iters, [&](bool) { nat.run(MPI_COMM_WORLD); });
    }
    if (!o.predict.empty() && me == 0) {
      // The same schedule, all ranks, through the analytic engine on the given platform.
      SimOpts so;
      so.targets = {o.target};
      so.ranks = std::to_string(size);
      so.sets = c.sets;
      so.max_memory = o.max_memory;
      so.platform = o.predict;
      so.model = "analytic";
      so.quiet = true;
      PointPlan plan;
      std::ostringstream sink;
      std::streambuf* saved_err = std::cerr.rdbuf(sink.rdbuf());
      if (plan_points(so, plan) == 0 && sim_options(so, plan.sim) == 0 && !plan.points.empty()) {
        PointResult pr = run_point(so, plan, 0);
        if (pr.error.empty() && pr.completed) row.predicted_s = pr.time_s;
        else row.predict_error = pr.error.empty() ? "the simulation did not complete" : pr.error;
      } else {
        row.predict_error = sink.str();
      }
      std::cerr.rdbuf(saved_err);
    }
    rows.push_back(row);
  }

  uint64_t total_wrong = 0;
  for (const Row& r : rows) total_wrong += r.wrong + static_cast<uint64_t>(std::max<int64_t>(0, r.mpi_differs));
  if (me == 0) {
    std::string factor_name;
    double factor = bus_factor(kind, static_cast<uint32_t>(size), factor_name);
    bool native = o.compare == "native";
    if (o.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const Row& r : rows) {
        nlohmann::json j = {{"schedule", schedule_name},
                            {"ranks", size},
                            {"size_bytes", r.size},
                            {"count", r.count},
                            {"dtype", dtype_name(shown_type)},
                            {"redop", redop},
                            {"time_us", r.time_s * 1e6},
                            {"algbw_GBps", r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 : 0.0},
                            {"busbw_GBps", r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 * factor : 0.0},
                            {"wrong", r.checked ? nlohmann::json(r.wrong) : nlohmann::json(nullptr)},
                            {"device", o.device},
                            {"transport", transport}};
        if (device) j["device_calls"] = o.device_sync ? "sync" : "streams";
        if (r.checked) j["mpi_agrees"] = r.mpi_differs < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.mpi_differs == 0);
        if (r.shaped()) {
          j["seq"] = r.shape.seq;
          j["heads"] = r.shape.heads;
          j["dim"] = r.shape.dim;
          j["batch"] = r.shape.batch;
          j["mask"] = r.shape.causal ? "causal" : "full";
          j["direction"] = r.shape.backward ? "backward" : "forward";
          j["attention_inputs"] = r.shape.bf16 ? "bf16" : "fp32";
          j["model_flops"] = r.model_flops();
          j["tflops"] = r.tflops();
          j["tflops_per_rank"] = r.tflops() / size;
        }
        if (r.attention) {
          j["max_abs_err"] = r.max_abs_err;
          if (r.shape.backward) {
            j["max_abs_err_dq"] = r.err_dq;
            j["max_abs_err_dkv"] = r.err_dkv;
          }
          j["tolerance"] = r.tolerance;
          j["elements_checked"] = r.attention_checked;
        }
        if (native) j["native_time_us"] = r.native_s >= 0 ? nlohmann::json(r.native_s * 1e6) : nlohmann::json(nullptr);
        if (!o.predict.empty()) {
          j["predicted_time_us"] = r.predicted_s >= 0 ? nlohmann::json(r.predicted_s * 1e6) : nlohmann::json(nullptr);
          if (r.predicted_s > 0) j["predict_error"] = (r.time_s - r.predicted_s) / r.predicted_s;
        }
        if (r.compute_s >= 0) {
          j["compute_us"] = r.compute_s * 1e6;
          j["comm_alone_us"] = r.comm_s * 1e6;
          j["overlap"] = r.overlap;
        }
        if (swept) {
          // Under the parameter's own name (as sim) unless that is a key already, and always here.
          if (!j.contains(sweep_param)) j[sweep_param] = r.value;
          j["sweep"] = {{"param", sweep_param}, {"value", r.value}};
        }
        out.push_back(j);
      }
      std::cout << out.dump(2) << "\n";
    } else {
      bool shaped = !rows.empty() && rows[0].shaped();
      std::printf("# stepgraph exec %s: %d ranks, %d iterations after %d warm-up%s%s\n", schedule_name.c_str(), size, o.iters, o.warmup,
                  shaped ? "" : (", bus factor " + factor_name).c_str(), o.check ? ", checked" : "");
      if (device)
        std::printf("# device: %s; transport: %s (%s); device calls: %s\n", device_note.c_str(), transport.c_str(), transport_why.c_str(),
                    o.device_sync ? "synchronous (--device-sync)" : "two streams, local work and transfers, ordered by events");
      std::printf("#\n");
      bool predict = !o.predict.empty();
      // Attention: the shape and TFLOP/s (the model count, per job and per rank), as the
      // ring-attention benchmarks print them; bytes and bus bandwidth say little there.
      // Collectives: the nccl-tests table, with the swept parameter first when it is not size.
      // The swept parameter gets a column of its own unless one shows it already (size; an
      // attention table's seq, heads, dim and batch), e.g. --sweep causal=0,1 or elem=2,4.
      bool own_column = shaped ? (sweep_param == "seq" || sweep_param == "heads" || sweep_param == "dim" || sweep_param == "batch")
                               : sweep_param == "size";
      bool lead = swept && !own_column;
      const char* pre = lead ? "" : "#";
      if (shaped) {
        // What every row shares goes in the header; what the sweep varies, in the column.
        bool same_mask = true, same_type = true, same_dir = true;
        for (const Row& r : rows)
          same_mask &= r.shape.causal == rows[0].shape.causal, same_type &= r.shape.bf16 == rows[0].shape.bf16,
              same_dir &= r.shape.backward == rows[0].shape.backward;
        const exec::AttentionLayout& r0 = rows[0].shape;
        std::string what = std::string(same_dir ? (r0.backward ? "backward" : "forward") : "forward or backward") + ", " +
                           (same_mask ? (r0.causal ? "causal mask" : "full mask") : "mask by " + sweep_param) + ", " +
                           (same_type ? (r0.bf16 ? "bf16 inputs" : "fp32 inputs") : "inputs by " + sweep_param);
        std::printf("# attention %s; TFLOP/s counts 4·batch·heads·seq²·dim, halved for a causal mask, × 2.5 for the backward\n",
                    what.c_str());
        if (lead) std::printf("# %10s", sweep_param.c_str());
        std::printf("%s %8s %6s %5s %6s %12s %10s %9s %9s %7s", pre, "seq", "heads", "dim", "batch", "model", "time", "TFLOP/s", "TFLOP/s", "#wrong");
      } else {
        if (lead) std::printf("# %10s", sweep_param.c_str());
        std::printf("%s %10s %12s %8s %6s %10s %8s %8s %7s", pre, "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
      }
      if (native) std::printf(" %10s %7s", "MPI time", "speed");
      if (predict) std::printf(" %10s %7s", "predicted", "error");
      if (lead) std::printf("\n# %10s", "");
      else std::printf("\n#");
      if (shaped) std::printf(" %8s %6s %5s %6s %12s %10s %9s %9s %7s", "", "", "", "", "(GFLOP)", "(us)", "(job)", "(rank)", "");
      else std::printf(" %10s %12s %8s %6s %10s %8s %8s %7s", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
      if (native) std::printf(" %10s %7s", "(us)", "vs MPI");
      if (predict) std::printf(" %10s %7s", "(us)", "");
      std::printf("\n");
      // How the notes below the table name a row.
      auto point = [&](const Row& r) {
        if (shaped) return "seq " + std::to_string(r.shape.seq) + (swept && sweep_param != "seq" ? ", " + sweep_param + " " + std::to_string(r.value) : "");
        return (lead ? sweep_param + " " + std::to_string(r.value) + ", " : std::string()) + std::to_string(r.size) + " B";
      };
      for (const Row& r : rows) {
        std::string wrong_s = r.checked ? std::to_string(r.wrong) : "-";
        if (lead) std::printf("  %10llu", static_cast<unsigned long long>(r.value));
        if (shaped) {
          std::printf("%s %8u %6u %5u %6u %12.3f %10.2f %9.3f %9.3f %7s", lead ? "" : " ", r.shape.seq, r.shape.heads, r.shape.dim, r.shape.batch, r.model_flops() / 1e9, r.time_s * 1e6,
                      r.tflops(), r.tflops() / size, wrong_s.c_str());
        } else {
          double alg = r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 : 0;
          std::printf("%s %10llu %12llu %8s %6s %10.2f %8.3f %8.3f %7s", lead ? "" : " ", static_cast<unsigned long long>(r.size),
                      static_cast<unsigned long long>(r.count), dtype_word(shown_type), redop.c_str(), r.time_s * 1e6, alg, alg * factor,
                      wrong_s.c_str());
        }
        if (native) {
          if (r.native_s >= 0) std::printf(" %10.2f %6.2fx", r.native_s * 1e6, r.native_s / r.time_s);
          else std::printf(" %10s %7s", "-", "-");
        }
        if (predict) {
          if (r.predicted_s > 0) std::printf(" %10.2f %+6.0f%%", r.predicted_s * 1e6, (r.time_s - r.predicted_s) / r.predicted_s * 100);
          else std::printf(" %10s %7s", "-", "-");
        }
        std::printf("\n");
      }
      for (const Row& r : rows)
        if (r.compute_s >= 0)
          std::printf("# %s: compute %.2f ms + communication alone %.2f ms, together %.2f ms: %.0f%% of the communication hidden\n",
                      point(r).c_str(), r.compute_s * 1e3, r.comm_s * 1e3, r.time_s * 1e3, r.overlap * 100);
      if (predict) {
        std::printf("# predicted: the analytic simulator on %s; error = (measured - predicted) / predicted\n", o.predict.c_str());
        for (const Row& r : rows)
          if (!r.predict_error.empty()) {
            std::printf("# prediction failed: %s\n", r.predict_error.c_str());
            break;
          }
      }
      for (const Row& r : rows)
        if (r.mpi_differs > 0)
          std::printf("# %s: MPI's own collective on the same inputs differs from ours in %lld elements\n", point(r).c_str(), static_cast<long long>(r.mpi_differs));
      bool compared = false, agreed = true;
      for (const Row& r : rows) compared |= r.mpi_differs >= 0, agreed &= r.mpi_differs <= 0;
      if (compared && agreed) std::printf("# MPI's own collective on the same inputs gives the same elements at every size\n");
      for (const Row& r : rows)
        if (r.attention) {
          if (r.shape.backward)
            std::printf("# %s: attention backward against full attention on one rank (%s inputs): max |dQ - ref| = %.3g, max |dKV - ref| = %.3g over %llu elements (tolerance %.3g)\n",
                        point(r).c_str(), r.shape.bf16 ? "bf16" : "fp32", r.err_dq, r.err_dkv, static_cast<unsigned long long>(r.attention_checked), r.tolerance);
          else
            std::printf("# %s: attention against full attention on one rank (%s inputs): max |O|lse - ref| = %.3g over %llu elements (tolerance %.3g)\n",
                        point(r).c_str(), r.shape.bf16 ? "bf16" : "fp32", r.err_o, static_cast<unsigned long long>(r.attention_checked), r.tolerance);
        }
      if (total_wrong) std::printf("# %llu wrong elements\n", static_cast<unsigned long long>(total_wrong));
    }
    std::fflush(stdout);
  }
  finalize();
  return total_wrong ? 1 : 0;
}

#endif

}  // namespace sg::cli
