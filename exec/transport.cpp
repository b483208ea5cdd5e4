#include "exec/transport.hpp"

#include <cstdint>
#include <cstdlib>

#include "exec/executor/host_device.hpp"
#include "exec/mpi/mpi_stream_comm.hpp"
#include "exec/mpi/mpi_types.hpp"
#ifdef STEPGRAPH_HAVE_CUDA
#include "exec/cuda/cuda_ops.hpp"
#include "exec/cuda/device.hpp"
#ifdef STEPGRAPH_HAVE_NCCL
#include "exec/cuda/nccl_comm.hpp"
#endif
#endif

namespace sg::exec {

struct Transport::Held {
  HostDeviceOps host_device;
#ifdef STEPGRAPH_HAVE_CUDA
  cuda::CudaOps cuda_device;
#endif
  // Declared after the devices, so that it goes first even if an exception unwinds.
  std::unique_ptr<StreamComm> stream_comm;
};

Transport::Transport() : held_(std::make_unique<Held>()) {}
Transport::~Transport() = default;
StreamComm* Transport::stream() const { return held_->stream_comm.get(); }
void Transport::close() { held_->stream_comm.reset(); }

namespace {

Refusal refuse(std::string msg) { return Refusal{true, true, std::move(msg)}; }
// A refusal whose words only the failing rank has ("" on the others): CUDA's and NCCL's.
[[maybe_unused]] Refusal refuse_here(std::string msg) { return Refusal{true, false, std::move(msg)}; }

}  // namespace

Refusal open_transport(const TransportRequest& o, MPI_Comm world, Transport& out) {
  int me = 0, size = 1;
  MPI_Comm_rank(world, &me);
  MPI_Comm_size(world, &size);
  Transport::Held& h = *out.held_;
  if (o.device == "cpu" && o.transport != "auto") return refuse("--transport " + o.transport + " needs --device cuda (or host-staged)");
  if (o.device == "cpu" && o.device_sync) return refuse("--device-sync needs --device cuda (or host-staged)");
  if (o.transport == "nccl" && o.device_sync)
    return refuse("--device-sync does not apply to --transport nccl, whose transfers are ordered on the device's streams");
  // IPC reaches the ranks of one node: every rank's node, named by its lowest world rank.
  // STEPGRAPH_NODE_SIZE=k makes nodes of k consecutive ranks instead (testing the pairs between
  // nodes on one machine).
  std::string pairs;
  int cross = 0;
  if (o.transport == "ipc") {
    int my_node = me;
    const char* k = std::getenv("STEPGRAPH_NODE_SIZE");
    if (k && std::atoi(k) > 0) {
      my_node = me / std::atoi(k) * std::atoi(k);
    } else {
      MPI_Comm node;
      MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
      MPI_Allreduce(&me, &my_node, 1, MPI_INT, MPI_MIN, node);
      MPI_Comm_free(&node);
    }
    out.node_of.assign(static_cast<size_t>(size), 0);
    MPI_Allgather(&my_node, 1, MPI_INT, out.node_of.data(), 1, MPI_INT, world);
    int same = 0, nodes = 0;
    for (int a = 0; a < size; ++a) {
      nodes += out.node_of[static_cast<size_t>(a)] == a;
      for (int b = 0; b < size; ++b)
        if (a != b) (out.node_of[static_cast<size_t>(a)] == out.node_of[static_cast<size_t>(b)] ? same : cross) += 1;
    }
    pairs = std::to_string(same) + " ordered pairs within " + (nodes == 1 ? "one node" : "each of " + std::to_string(nodes) + " nodes");
  }
  if (o.device == "host-staged") {
    out.device = &h.host_device;
    out.direct = o.transport == "cuda-aware";
    out.ipc = o.transport == "ipc";
    out.name = out.ipc ? "ipc" : out.direct ? "cuda-aware" : "staged";
    out.why = out.ipc ? pairs + " copy from each other's stand-in device memory, mapped shared (CUDA IPC's protocol)" +
                            (cross ? "; " + std::to_string(cross) + " pairs between nodes staged" : std::string()) + "; collectives staged"
              : out.direct ? "--transport cuda-aware: point-to-point on the stand-in device memory itself, collectives staged"
                           : "staged through host mirrors";
    if (out.ipc) h.host_device.set_shared();
    if (const char* fault = std::getenv("STEPGRAPH_DEVICE_FAULT")) h.host_device.inject_fault(fault);
    // The stand-in device defers its lanes like a GPU, in an order drawn per rank (and per
    // STEPGRAPH_LANE_SEED), so that a missing wait between lanes, or MPI touching memory before
    // the host saw the mark it needs, shows in --check.
    const char* seed = std::getenv("STEPGRAPH_LANE_SEED");
    h.host_device.set_lanes(static_cast<uint64_t>(me) * 7919u + (seed ? std::strtoull(seed, nullptr, 10) : 1));
    if (o.transport == "nccl") {
      h.stream_comm = std::make_unique<MpiStreamComm>(world, &h.host_device);
      out.name = "nccl";
      out.why =
          "MPI standing in for NCCL on host memory, with NCCL's rules: transfers matched by issue order, in groups issued in "
          "one global order, each run to completion; local work and transfers on two deferred lanes interleaved at random";
    }
    out.device_note = "host memory standing in for a device";
  } else if (o.device == "cuda") {
#ifdef STEPGRAPH_HAVE_CUDA
    // Any error from cudaGetDeviceCount means no device; the runtime's words say which.
    cuda::DeviceProbe dp = cuda::probe_devices();
    int mine = dp.count, fewest = 0;
    MPI_Allreduce(&mine, &fewest, 1, MPI_INT, MPI_MIN, world);
    if (fewest == 0) return refuse("--device cuda: no CUDA device (" + (dp.count ? std::string("on another rank") : dp.reason) + ")");
    // The device of this process: its rank on the node modulo the node's devices.
    MPI_Comm node;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
    int local = 0, local_size = 1;
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    int d = cuda::device_for_local_rank(local, dp.count);
    Diagnostics why;
    int bad = h.cuda_device.open(d, dp.names[static_cast<size_t>(d)], why) ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world);
    if (any)
      return refuse_here(bad ? "stepgraph: error: --device cuda: rank " + std::to_string(me) + ", device " + std::to_string(d) + ": " +
                                   why.messages() + "\n"
                             : std::string());
    out.device = &h.cuda_device;
    if (o.transport == "nccl") {
#ifdef STEPGRAPH_HAVE_NCCL
      // NCCL needs a GPU of its own per rank: ranks on one node must not share a device.
      int crowded = local_size > dp.count ? 1 : 0, any_crowded = 0;
      MPI_Allreduce(&crowded, &any_crowded, 1, MPI_INT, MPI_MAX, world);
      if (any_crowded)
        return refuse("--transport nccl: NCCL needs a GPU per rank, and " + std::to_string(local_size) + " ranks on a node share " +
                      std::to_string(dp.count) + " device" + (dp.count == 1 ? "" : "s") +
                      " (use --transport staged, or fewer ranks per node)");
      std::string id;
      Diagnostics why_id;
      int id_ok = me == 0 ? (cuda::NcclComm::unique_id(id, why_id) ? 1 : 0) : 1, all_id = 0;
      MPI_Allreduce(&id_ok, &all_id, 1, MPI_INT, MPI_MIN, world);
      if (!all_id) return refuse("--transport nccl: " + why_id.messages());
      id.resize(128);
      MPI_Bcast(id.data(), 128, MPI_CHAR, 0, world);
      auto nc = std::make_unique<cuda::NcclComm>();
      Diagnostics why_init;
      int init_ok = nc->init(id, size, me, h.cuda_device.lane_stream(1), why_init) ? 1 : 0, all_init = 0;
      MPI_Allreduce(&init_ok, &all_init, 1, MPI_INT, MPI_MIN, world);
      if (!all_init) {
        nc->abort();
        return refuse_here(!init_ok ? "stepgraph: error: --transport nccl: rank " + std::to_string(me) + ": " + why_init.messages() + "\n"
                                    : std::string());
      }
      h.stream_comm = std::move(nc);
#else
      return refuse("--transport nccl: this stepgraph was built without NCCL (no nccl.h and libnccl beside the CUDA toolkit)");
#endif
    }
    out.device_note = dp.names[0] + (dp.count > 1 ? " and " + std::to_string(dp.count - 1) + " more" : std::string()) +
                      ", device = local rank mod " + std::to_string(dp.count) + (local_size > dp.count ? " (ranks share devices)" : "");
    std::string why_not;
    bool aware = mpi_cuda_aware(why_not);
    int mine_aware = aware ? 1 : 0, all_aware = 0;
    MPI_Allreduce(&mine_aware, &all_aware, 1, MPI_INT, MPI_MIN, world);
    if (o.transport == "ipc") {
      // Pairs on one node: CUDA IPC; between nodes MPI on device memory where it is CUDA-aware,
      // else staged through the host.
      out.ipc = true;
      out.direct = cross > 0 && all_aware;
      out.name = "ipc";
      out.why = "CUDA IPC: " + pairs + (local_size > dp.count ? " (ranks sharing devices)" : "") + " copy device to device" +
                (cross ? "; " + std::to_string(cross) + " pairs between nodes " +
                             (out.direct ? std::string("through CUDA-aware MPI") : "staged (" + why_not + ")")
                       : std::string()) +
                "; collectives staged";
    } else if (h.stream_comm) {
      out.name = "nccl";
      out.why = h.stream_comm->name() + ", one GPU per rank; transfers in groups issued in one global order";
    } else if (all_aware && o.transport != "staged") {
      out.direct = true;
      out.name = "cuda-aware";
      out.why = "the MPI library reports CUDA support (MPIX_Query_cuda_support); collectives stay staged";
    } else {
      out.name = "staged";
      out.why = o.transport == "staged" ? "--transport staged"
                                        : (o.transport == "cuda-aware" ? "--transport cuda-aware falls back: " : "not CUDA-aware: ") +
                                              (aware ? std::string("another rank's MPI reports no CUDA support") : why_not);
    }
#else
    return refuse("--device cuda: no CUDA device (this stepgraph was built without CUDA: STEPGRAPH_WITH_CUDA=OFF)");
#endif
  }
  return Refusal{};
}

}  // namespace sg::exec
