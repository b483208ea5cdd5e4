// One point of `stepgraph exec` (one value of the swept parameter), run by every rank of the job:
// build this rank's program through the pipeline (and, for the stream-ordered transport, the whole
// schedule's order), set the executor up, fill the inputs, check the result against the
// postcondition and MPI's own collective, and time it next to that collective. The command
// (cli/exec_command.cpp) loops over the points and prints the rows; a run that stalls or fails
// aborts the job here with the report (exit 3).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/device/device_ops.hpp"
#include "core/device/stream_comm.hpp"
#include "core/graph/step_graph.hpp"
#include "exec/attention/attention_exec.hpp"

namespace sg::exec {

struct PointRequest {
  std::string target;                                       // FILE, FILE:SCHEDULE or a library name
  std::vector<std::pair<std::string, std::string>> params;  // (NAME, VALUE), the swept value among them
  uint64_t max_memory = 0;                                  // the bound on an instance's estimate (0: none)
  bool dtype_forced = false;                                // --dtype: every buffer's element type
  DType dtype = DType::F32;
  int iters = 20, warmup = 5;
  double timeout_s = 60;
  bool check = false, compare_native = false, device_sync = false;
  // Where the buffers live and how bytes move (exec/transport.hpp opens them): a device or null,
  // MPI on device memory itself, the stream-ordered transport or null.
  DeviceOps* device = nullptr;
  bool direct = false;
  bool ipc = false;          // point-to-point between ranks of one node through their mapped device memory
  std::vector<int> node_of;  // with ipc: per world rank, its node
  StreamComm* stream = nullptr;
  bool print_warnings = false;  // rank 0 prints the build's warnings (the first point only)
  uint64_t value = 0;           // the swept parameter's value (for the row)
};

// One row of the table.
struct PointRow {
  std::string schedule;
  ExpectKind kind = ExpectKind::Nothing;  // the first postcondition's
  DType shown_type = DType::F32;          // the element type the table shows
  std::string redop = "sum";
  uint64_t size = 0, count = 0;
  double time_s = 0, native_s = -1;
  std::string native_why;  // why MPI's own collective was not run (--compare native, --check), "" when it was
  int group_ranks = 0;     // ranks in the postcondition's group (the bus factor's N)
  std::string plan;        // how rank 0's runs move messages (Executor::plan)
  std::string params;      // the parameter values the point was built with ("size = 1,048,576")
  uint64_t wrong = 0;
  bool checked = false;
  int64_t mpi_differs = -1;  // --check: elements where MPI's own collective on the same inputs differs (-1: not compared)
  // With compute steps: the mean compute time of an iteration and the communication alone (the
  // same run without the flops), both the slowest rank's; overlap = the share of the
  // communication that the compute hid: (compute + communication alone - together) / communication.
  double compute_s = -1, comm_s = -1, overlap = -1;
  double predicted_s = -1;  // --predict: the analytic simulator's time on that platform (set by the command)
  std::string predict_error;
  // Attention schedules under --check: the outputs against full attention on one rank.
  bool attention = false;
  double err_o = 0, err_dq = 0, err_dkv = 0, max_abs_err = 0, tolerance = 0;
  uint64_t attention_checked = 0;
  uint64_t value = 0;  // the swept parameter's value at this point
  // Attention schedules, checked or not: the layout (its shape), and the work in the count
  // FlashAttention's and ring attention's benchmarks report (exec/attention/attention_exec.hpp), for TFLOP/s.
  AttentionLayout shape;
  bool shaped() const { return shape.active; }
  double model_flops() const { return shaped() ? attention_model_flops(shape) : 0; }
  double tflops() const { return time_s > 0 ? model_flops() / time_s / 1e12 : 0; }
};

// Runs one point on every rank of `world`. Returns 0 with the row (complete on rank 0), or 2
// when every rank refuses (bad input, said once, by the lowest rank that found it). A stall or
// a failed run aborts the job (exit 3) with each rank's report.
int run_exec_point(const PointRequest& req, MPI_Comm world, PointRow& row);

// Writes `text` to stderr in one call (the ranks print at the same moment).
void say(const std::string& text);

}  // namespace sg::exec
