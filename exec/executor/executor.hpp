// The MPI executor: runs one rank's step graph (elaborated with only_rank) on real buffers.
//
// Semantics (the interpreter's, docs/exec.md):
// - A step starts when its dependencies are satisfied: a dependency on a blocking step when that
//   step completes, on a nonblocking one (isend, irecv) when it starts. One progress loop per
//   rank starts ready steps, tests every request in flight (MPI_Testsome) and completes steps.
// - Choreographic transfers go over their own communicator. The k-th transfer from rank a to
//   rank b carries tag k on both sides (both ranks elaborate the same statements in the same
//   order), so matching is exact whatever order the sends start in. Every message is taken as
//   soon as it comes (matched probes, source by source, in send order): straight into its
//   destination when its receive step has started, else into the step's staging area, which the
//   step copies or reduces into its destination once its dependencies are done (a message whose
//   receive waits only on local work is left in MPI's queue until then). A send completes when
//   MPI_Isend does, which never waits on the receiver's progress. With more than 64 sources the
//   receives are pre-posted into staging instead.
// - `on`-block sends and receives keep their tags, wildcards and communicators (one MPI
//   communicator per group of the schedule, built with MPI_Comm_create_group over the union of
//   every rank's groups, in one order); a receive is posted when the rank reaches it; a reducing
//   receive goes through staging.
// - Collective steps call MPI's own nonblocking collective on the group's communicator.
// - copy and reduce run on the buffers (reductions vectorised); a generic compute step performs
//   its flops for real (kernels.hpp); an attention tile computes the real tile (fp32 accumulation)
//   on real q, k, v with the shapes the schedule's parameters give, and reductions of partial
//   attention outputs merge them (exec/attention/attention_exec.hpp).
// - A run that makes no progress for the timeout stops and reports what this rank waits on.
// - With a stream-ordered transport (ExecOptions::stream, NCCL's model) none of the above moves
//   data: the rank issues its steps in the global group order of core/graph/stream_order.hpp
//   onto two device lanes (docs/exec.md, "The NCCL transport").
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device/device_ops.hpp"
#include "core/device/stream_comm.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/dsl/source.hpp"
#include "core/graph/step_graph.hpp"
#include "core/graph/stream_order.hpp"
#include "exec/attention/attention_exec.hpp"
#include "exec/mpi/mpi_types.hpp"  // dtype_supported, mpi_type, mpi_op, mpi_error_string, mpi_cuda_aware

namespace sg::exec {

struct ExecOptions {
  double timeout_s = 60;  // no progress for this long: the run stops (RunResult::stalled)
  // Buffers on a device (core/device/device_ops.hpp; the CUDA path's exec/cuda/cuda_ops.hpp):
  // copies and reductions run there, and MPI moves data staged through host memory: a range is
  // copied to the host before MPI reads it and back to the device after MPI wrote it. nullptr:
  // buffers in host memory.
  DeviceOps* device = nullptr;
  // With a device: MPI reads and writes device memory itself (CUDA-aware MPI), nothing staged
  // (with ipc: between ranks of different nodes).
  bool device_direct = false;
  // With a device: point-to-point between ranks of one node (node_of: per world rank, its node)
  // goes through each other's device memory (CUDA IPC on a GPU, shared memory on the stand-in):
  // each rank maps its node's buffers once in setup; a send posts a descriptor (buffer, offset,
  // bytes), the receiver copies from the sender's buffer on its transfer lane and acknowledges
  // once the copy is done, which completes the send (executor_ipc.cpp). Pairs between nodes:
  // device_direct, or staged. Collectives stay staged.
  bool ipc = false;
  std::vector<int> node_of;
  // With a device: its calls are asynchronous, on two lanes (streams): local work on lane 0, the
  // copies around MPI on lane 1, ordered by marks (events) on the device; MPI touches memory only
  // once the host has seen the marks it needs. So compute overlaps transfers and the host keeps
  // MPI going while the device works. false: every device call waits for the device.
  bool lanes = false;
  // The stream-ordered transport (--transport nccl; needs a device): every transfer and
  // collective goes through `stream` in the groups of `order` (core/graph/stream_order.hpp,
  // computed on the whole schedule for this rank), transfers on the device's lane 1 and local
  // work on lane 0, ordered by marks. MPI then only builds communicators and checks.
  StreamComm* stream = nullptr;
  const StreamOrder* order = nullptr;
};

struct RunResult {
  bool completed = false;
  bool stalled = false;
  // Why it did not complete: an MPI or device failure, at the statement of the step it hit.
  std::optional<Diagnostic> error;
  std::string report;    // when stalled: the steps this rank waits on, with source lines
  double compute_s = 0;  // time spent in compute steps
  double wall_s = 0;     // the stream-ordered run's own time (the dataflow run reads no clock: callers time it)
};

struct CheckResult {
  uint64_t checked = 0;             // elements compared
  uint64_t wrong = 0;               // elements that differ from the expected value
  uint64_t unchecked = 0;           // elements whose expected value is not numeric (attention terms)
  std::optional<Diagnostic> error;  // device mode: a device failure (the comparison is then meaningless)
  std::string first;                // the first wrong element, described
};

class Executor {
 public:
  // g: this rank's graph (only_rank = the rank). world: MPI_COMM_WORLD or a duplicate of it.
  Executor(const StepGraph& g, const SourceManager& sources, MPI_Comm world, const ExecOptions& o);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Allocates buffers and staging, and builds communicators: collective over `world`.
  // False with the reasons in diags (located where a statement is to blame).
  bool setup(Diagnostics& diags);
  // Fills every buffer with its initial values (inputs) and zeros elsewhere.
  // False with the failure in diags when a device copy failed (device mode).
  bool fill_inputs(Diagnostics& diags);
  // Runs every step once. `compute`: compute steps do their flops (without: the communication
  // alone, the baseline overlap is measured against). `values`: compute steps write the values
  // the postcondition expects into the chunks they write (for --check; timed runs skip it, so
  // that a compute step's time is its flops).
  RunResult run(bool compute = true, bool values = true);
  // Compares every chunk a postcondition covers on this rank with its expected value.
  CheckResult compare_expected() const;
  // Whether the schedule computes attention (then compare_expected() leaves the attention outputs unchecked
  // and check_attention compares them with the one-rank reference).
  // How this rank's runs move messages (after setup), one line: e.g. "12 steps; 3 receives posted
  // at the start, 3 matched by probe; 9 persistent requests", or why a path is not taken.
  std::string plan() const;
  bool has_attention() const;
  // Its shapes (seq, heads, dim, batch, mask, direction), read off the schedule by setup().
  const AttentionLayout& attention_layout() const;
  // Collective over `world`: the attention outputs against full attention computed on rank 0;
  // complete on rank 0.
  AttentionCheck check_attention() const;

  ReduceOp reduce_op() const { return op_; }
  // The bytes of range r on this rank (for comparing with MPI's own collective). Device mode:
  // the host mirror, current after fill_inputs and after check (which copy everything over).
  const unsigned char* data(const Range& r) const;

 private:
  struct Impl;  // exec/executor/executor_impl.hpp
  std::unique_ptr<Impl> impl_;
  ReduceOp op_ = ReduceOp::Sum;
};

}  // namespace sg::exec
