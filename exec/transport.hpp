// Where exec's buffers live and how its bytes move: the device (host memory, a CUDA GPU, or host
// memory standing in for one) and the transport (host MPI; staged through host mirrors; CUDA-aware
// MPI on device memory; NCCL, or MPI keeping NCCL's rules). Opening them is collective over the
// world: every rank probes its device, the ranks agree (the fewest devices, CUDA-awareness on
// every rank, the NCCL id from rank 0) and refuse together.
//
// This is the one file of exec/ that names exec/cuda (its own library target, stepgraph_transport,
// so that the executor itself never links CUDA); every CUDA and NCCL #ifdef of the command is here.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/device/device_ops.hpp"
#include "core/device/stream_comm.hpp"

namespace sg::exec {

struct TransportRequest {
  std::string device = "cpu";      // cpu, cuda or host-staged
  std::string transport = "auto";  // with a device: auto, staged, cuda-aware, ipc or nccl
  bool device_sync = false;        // with a device: every device call waits (no streams)
};

// Why opening failed. Every rank returns a refusal together; `from_root`: the ranks agree and rank 0
// prints `message`; otherwise each rank that failed prints its own (already complete) `message`,
// or nothing when it is empty (another rank failed).
struct Refusal {
  bool refused = false;
  bool from_root = true;
  std::string message;
};

class Transport {
 public:
  Transport();
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  DeviceOps* device = nullptr;  // null: buffers in host memory
  bool direct = false;          // MPI reads and writes device memory itself (CUDA-aware), or IPC does
  bool ipc = false;             // point-to-point through the peers' device memory, between ranks of one node
  std::vector<int> node_of;     // with ipc: per world rank, its node (the node's lowest world rank)
  std::string name = "host";    // host, staged, cuda-aware, ipc or nccl
  std::string why;              // how it was chosen, for the table's header
  std::string device_note;      // the device in words
  // The stream-ordered transport (--transport nccl), or null.
  StreamComm* stream() const;
  // Frees the stream transport's communicators: call it while MPI is still up (before MPI_Finalize).
  void close();

 private:
  friend Refusal open_transport(const TransportRequest& req, MPI_Comm world, Transport& out);
  struct Held;  // the device objects and the stream transport (CUDA types stay in transport.cpp)
  std::unique_ptr<Held> held_;
};

// Opens the device and transport `req` asks for, collectively over `world` (after MPI_Init).
Refusal open_transport(const TransportRequest& req, MPI_Comm world, Transport& out);

}  // namespace sg::exec
