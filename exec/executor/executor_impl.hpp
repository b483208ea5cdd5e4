// The executor's shared state (Executor::Impl, behind exec/executor/executor.hpp): internal to the
// executor's files, included by nothing else.
//
// Why one struct: the dataflow loop, the lanes, the staging and the stream-ordered path all read
// and write the same per-step state (st, stage_off, dm, the error), so splitting it into objects
// would only add indirections on every step. Instead the state lives here, in one place, and the
// code is split by what it does, one file per seam (each file's top comment says what it holds):
//   executor.cpp             the front door (Executor); Impl's end (communicators, device memory)
//   executor_setup.cpp       setup: buffers, staging layout, tags, successors, device memory
//   executor_comms.cpp       the MPI communicators (groups, choreography, on-block targets)
//   executor_dataflow.cpp    the dataflow run: the progress loop, issue, complete
//   executor_transfers.cpp   its MPI transfers: choreographic messages (matched probes), collectives
//   executor_lanes.cpp       lanes and gates on the dataflow path (asynchronous device work)
//   executor_local_work.cpp  copies, reductions, compute (generic) steps
//   executor_attention.cpp   attention tiles, their items moved between declared layouts and the kernels'
//   executor_streamed.cpp    the stream-ordered run (ExecOptions::stream, NCCL's model)
//   executor_fill_check.cpp  initial values, fill_inputs, the check, the attention outputs
//   executor_report.cpp      step descriptions and stall reports
// The helpers below that sit on every step (pointers, the staged copies, request tracking, the
// lane switch) are defined here, inline, so that the split adds no call for them; what crosses
// files is a whole piece of a step's work (a collective started, a tile computed), one direct
// call each: no virtual calls, no std::function, no allocation.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/interp/state.hpp"
#include "core/interp/value.hpp"
#include "exec/attention/attention_exec.hpp"
#include "exec/executor/executor.hpp"
#include "exec/half.hpp"
#include "exec/mpi/mpi_types.hpp"

namespace sg::exec {

struct Executor::Impl {
  using Clock = std::chrono::steady_clock;

  // A step's state in a run (st[s]).
  enum : uint8_t { kIssued = 1, kCompleted = 2, kArrived = 4, kTaken = 8, kDeferred = 16, kHeld = 32 };
  // What a request in flight is (on_request_done).
  enum class Req : uint8_t { ChoreoData, Send, LocalRecv, Coll, BufferedSend, IpcAck };

  // Aligned storage: reductions vectorise better on 64-byte boundaries.
  struct Block {
    unsigned char* p = nullptr;
    uint64_t size = 0;
    DeviceOps* pinned_by = nullptr;  // device mode: host memory from the device (pinned), given back to it
    // False when the memory is not there (the caller refuses the run: fill_inputs would write
    // through a null pointer).
    bool allocate(uint64_t n) {
      size = n;
      p = n > UINT64_MAX - 63 ? nullptr : static_cast<unsigned char*>(std::aligned_alloc(64, std::max<uint64_t>(64, (n + 63) / 64 * 64)));
      return p != nullptr;
    }
    // Replaces the (still unused) allocation with the device's host memory: DMA-able, so the staged
    // copies run at full speed.
    bool pin(DeviceOps* d, Diagnostics& diags) {
      unsigned char* q = d->allocate_host(std::max<uint64_t>(64, size), diags);
      if (!q) return false;
      std::free(p);
      p = q;
      pinned_by = d;
      return true;
    }
    ~Block() {
      if (pinned_by) pinned_by->release_host(p);
      else std::free(p);
    }
  };

  const StepGraph& g;
  const SourceManager& sources;
  MPI_Comm world;
  ExecOptions o;
  uint32_t me = 0;
  ReduceOp op = ReduceOp::Sum;

  std::vector<std::unique_ptr<Block>> bufs;
  Block staging;
  std::vector<uint64_t> stage_off;  // per step (choreographic and reducing receives, some collectives)
  std::vector<int> tag;             // per choreographic send / receive: its per-pair sequence number
  // Choreographic receives by source: the steps of each source by sequence number (= tag), for
  // matched probes (MPI_Improbe / MPI_Imrecv): a message whose receive step has started lands
  // straight in its destination; one that comes early lands in staging, as the design says.
  std::vector<uint32_t> srcs;                 // the sources choreographic messages come from
  std::vector<std::vector<StepId>> from_src;  // per entry of srcs: its receive steps by sequence
  bool probe = false;                         // matched probes (false: every receive pre-posted into staging)
  std::vector<uint32_t> taken;                // per run, per entry of srcs: messages taken
  // Per step: a message matched (MPI_Improbe) before its receive started, held until it does and
  // then received straight into its destination (kHeld in st).
  std::vector<MPI_Message> held;
  // Receives that depend on nothing (host memory, matched-probe mode): posted at the start of
  // every run straight into their destination (a reducing one into its staging slot), as a
  // hand-written program posts its MPI_Irecv before its send; the rest are probed for.
  // probe_count: per entry of srcs, the messages a run probes for.
  std::vector<uint8_t> prepost;
  std::vector<uint32_t> probe_count;
  // Persistent requests (host memory): per choreographic send and per posted receive, made once
  // in setup (MPI_Send_init / MPI_Recv_init: the buffer, count, peer and tag never change between
  // runs) and started every run; MPI_REQUEST_NULL for every other step. Empty when none.
  std::vector<MPI_Request> persistent;
  // The rest of the plan, made once in setup: every step's dependency count, the steps ready at
  // the start, the receives posted at the start (prepost, or all of them without probes).
  std::vector<uint32_t> pending0;
  std::vector<StepId> ready0, post0;
  std::vector<uint8_t> direct;                  // per run, per step: its data went straight to the destination
  const StepGraph::Successors* succ = nullptr;  // the graph's successor view
  // MPI matches nonblocking collectives on a communicator by the order they are started in, which
  // must be the same on every member: the collective steps on one communicator start in program
  // order (the order every member elaborated them in), whatever order dataflow makes them ready.
  // coll_next[s]: the next collective step on s's communicator; coll_prev likewise.
  std::vector<StepId> coll_prev, coll_next;
  MPI_Comm choreo = MPI_COMM_NULL, p2p_world = MPI_COMM_NULL;
  std::vector<MPI_Comm> group_comm;  // per group id of g: its communicator (MPI_COMM_NULL: not a member)
  std::vector<MPI_Comm> owned_comms;
  // Every rank's initial values (the interpreter's state): built for --check only, where the
  // postcondition needs them; N x chunks symbolic values would dominate start-up at N = 4,096.
  mutable std::unique_ptr<MachineState> initial;

  // Per run.
  std::vector<uint32_t> pending;
  std::vector<uint8_t> st;
  std::deque<StepId> ready;
  std::vector<MPI_Request> reqs;
  std::vector<StepId> req_step;
  std::vector<Req> req_kind;
  std::vector<StepId> waits;  // wait steps issued whose handles are not all complete
  // Buffered sends (a graph with FIFO connections, MSCCL): the message is copied here and the
  // send completes at once, as it does once it holds a slot of its connection; the copy lives
  // until MPI is done with it, and the run ends only when every one is.
  std::vector<std::vector<unsigned char>> sent_copy;
  uint64_t buffered_out = 0;
  uint64_t completed = 0;
  // ---- failures, as diagnostics at the statement of the step that failed ----
  // The run's first failure (later ones follow from it), cleared when a run starts.
  Diagnostics errors;
  // What device and transport calls report into (unlocated: Diagnostics::fail); dev_ok places
  // each failure from dev_placed on at its step's statement with what was being done.
  Diagnostics dev_diags;
  size_t dev_placed = 0;
  StepId cur_step = kNoStep;  // the step being worked on: where a device failure is placed
  double compute_s = 0;
  bool do_compute = true, write_values = true;
  AttentionLayout att;  // attention tiles' shapes and the merge buffers (exec/attention/attention_exec.hpp)
  // Device mode (ExecOptions::device): the device copy of every buffer is the truth; `bufs` are
  // the host mirrors MPI reads and writes; `dstage` mirrors `staging` on the device (the source
  // of a reducing receive's reduction).
  DeviceOps* dev = nullptr;
  std::vector<unsigned char*> dbufs;
  unsigned char* dstage = nullptr;
  // Stream-ordered transport (ExecOptions::stream): per group id of g its StreamComm id (-1: not
  // a member); per level the transfers (in key order) and the local steps (in program order);
  // which local steps a transfer waits on (they get a mark).
  std::vector<int> stream_group;
  std::vector<std::vector<StepId>> level_xfer, level_local;
  std::vector<uint8_t> needs_mark;
  bool lanes = false;                                  // device calls are asynchronous (on lanes) in this run
  std::deque<std::vector<unsigned char>> lane_values;  // generic compute values on their way up
  // Lanes on the dataflow path (ExecOptions::lanes): local work goes on lane 0 and the copies
  // around MPI (a range down before MPI reads it, up after MPI wrote it, a received reduction) on
  // lane 1, all asynchronous. A step is done, for the dataflow, once its device work is enqueued;
  // dm[s] says what it leaves behind: per lane the newest mark after its work and everything it
  // needed (a lane runs in order, so its newest mark covers the older ones). Local work waits on
  // lane 1's marks on the device; MPI, which the host drives, may touch memory only once the
  // marks its step needs are reached: the step waits at a gate until the host has seen them, and
  // only then is its copy down enqueued (so lane 1 never waits on the device for lane 0).
  bool flow_lanes = false;
  int cur_lane = -1;
  int lane0_waited = -1;  // the newest lane-1 mark lane 0 has waited for
  std::vector<std::array<int, 2>> dm;
  // Marks not yet seen reached, per lane in order: the stall timer counts the device finishing
  // queued work as progress (a long run of tiles ahead of a gate is not a hang).
  std::array<std::deque<int>, 2> unseen;
  struct Gate {
    StepId s;
    int m0, m1;  // the marks to be reached (-1: none) on lanes 0 and 1
    bool prep;   // its copy down is still to be enqueued (once m0 and m1 are reached)
  };
  std::deque<Gate> gated;       // in the order entered: on-block transfers keep their start order
  std::vector<uint8_t> passed;  // per step: through its gate (its MPI part runs when issued)
  // dev_direct (ExecOptions::device_direct): MPI reads and writes device memory itself (CUDA-aware
  // MPI), so nothing is staged: MPI's pointers are the device buffers and the device staging.
  bool dev_direct = false;
  // ---- the IPC transport (ExecOptions::ipc, executor_ipc.cpp) ----
  // A message is a descriptor: the sender's world rank, its buffer, the offset and the bytes, and
  // the tag its acknowledgement comes back with (on ipc_comm, a duplicate of the world).
  struct IpcDesc {
    uint32_t src = 0, buf = 0;
    uint64_t off = 0, bytes = 0;
    int32_t ack = 0, pad = 0;
  };
  struct IpcAck {
    int mark;     // the pull's mark on lane 1 (-1: done already)
    uint32_t to;  // the sender (world rank)
    int tag;
  };
  bool ipc = false;
  std::vector<uint8_t> ipc_step;                      // per step: a send or receive whose peer is on this node (moved by IPC)
  std::vector<std::vector<unsigned char*>> ipc_base;  // per world rank, per buffer: its memory opened here (empty: this rank)
  std::vector<std::vector<uint64_t>> ipc_size;        // per world rank, per buffer: its bytes
  std::vector<IpcDesc> ipc_in, ipc_out;               // per step: the descriptor received / sent
  std::vector<unsigned char*> ipc_dst;                // per receive step: where the bytes go (destination or staging)
  std::vector<uint32_t> ipc_seq;                      // per world rank: acknowledgements asked of it
  std::deque<IpcAck> ipc_acks;                        // pulls enqueued, acknowledged once their mark is reached
  uint64_t ipc_acks_out = 0;                          // acknowledgements sent, not complete
  int ipc_tags = 32767;                               // acknowledgement tags cycle modulo this
  MPI_Comm ipc_comm = MPI_COMM_NULL;
  std::optional<Diagnostic> dev_failure;  // the first device failure, kept across runs (fill_inputs and check report it)

  Impl(const StepGraph& graph, const SourceManager& sm, MPI_Comm w, const ExecOptions& opts) : g(graph), sources(sm), world(w), o(opts) {
    dev_diags.set_fold_repeats(false);  // each failure is placed on its own
  }
  ~Impl();  // executor.cpp

  // ---- on every step: pointers, sizes, the staged copies, errors (inline) ----
  unsigned char* ptr(const Range& r) const { return bufs[r.buf]->p + uint64_t{r.lo} * g.buffers[r.buf].chunk_bytes; }
  uint64_t bytes(const Range& r) const { return g.range_bytes(r); }
  uint64_t elems(const Range& r) const { return uint64_t{r.cnt} * g.buffers[r.buf].chunk_elems; }
  DType dtype(const Range& r) const { return g.buffers[r.buf].dtype; }
  static bool fits_count(uint64_t n) { return n <= static_cast<uint64_t>(INT32_MAX); }  // MPI's counts are ints
  int count_of(uint64_t n, StepId s) {
    if (!fits_count(n)) {
      fail(s, "a message of " + std::to_string(n) + " elements exceeds MPI's int count");
      return -1;
    }
    return static_cast<int>(n);
  }
  bool failed() const { return errors.has_errors(); }
  Loc loc_of(StepId s) const { return s == kNoStep ? Loc{} : g.loc(s); }
  // Records the run's failure at step s's statement (kNoStep: none), unless one is recorded.
  void fail(StepId s, std::string msg) {
    if (!failed()) errors.error(loc_of(s), std::move(msg));
  }
  // ---- device mode: the staged transport (every call synchronous) ----
  unsigned char* dptr(const Range& r) const { return dbufs[r.buf] + uint64_t{r.lo} * g.buffers[r.buf].chunk_bytes; }
  // Whether send or receive s moves its bytes without the host: by IPC (its peer on this node),
  // or through MPI on device memory (CUDA-aware).
  bool via_ipc(StepId s) const { return !ipc_step.empty() && ipc_step[s]; }
  bool direct_p2p(StepId s) const { return dev_direct || via_ipc(s); }
  // What MPI (or IPC) reads and writes for transfer s's range r, and s's staging slot as it sees it.
  unsigned char* mpi_ptr(StepId s, const Range& r) const { return direct_p2p(s) ? dptr(r) : ptr(r); }
  unsigned char* mpi_stage(StepId s) const { return (direct_p2p(s) ? dstage : staging.p) + stage_off[s]; }
  // Records a device failure (what the device said, in dev_diags) at step `where`'s statement,
  // prefixed with what was being done. Built only then: these calls sit on every step.
  bool dev_ok(bool ok, const char* what, const Range* r, StepId where) {
    if (ok) return true;
    place_failure(where, std::string(what) + (r ? " (" + g.range_name(*r) + ")" : std::string()) + " on " + dev->name() + ": ", true);
    return false;
  }
  // Places what dev_diags gained since the last placement at step `where`'s statement, prefixed
  // with `context`, as the run's failure (and the device's, when `device`); returns the messages.
  std::string place_failure(StepId where, const std::string& context, bool device) {
    if (dev_placed == dev_diags.size()) dev_diags.fail("failed, with no reason given");
    dev_diags.locate_from(dev_placed, loc_of(where), context);
    for (size_t i = dev_placed; i < dev_diags.size(); ++i) {
      const Diagnostic& d = dev_diags.all()[i];
      if (!failed()) errors.error(d.loc, d.message);
      if (device && !dev_failure) dev_failure = d;
    }
    std::string text = dev_diags.messages(dev_placed);
    dev_placed = dev_diags.size();
    return text;
  }
  bool dev_ok(bool ok, const char* what, const Range* r) { return dev_ok(ok, what, r, cur_step); }
  // Before MPI reads range r from the host mirror.
  bool down(const Range& r, bool for_host = false) {
    return !dev || (dev_direct && !for_host) || r.cnt == 0 ||
           dev_ok(dev->to_host(ptr(r), dptr(r), bytes(r), dev_diags), "a copy to the host", &r);
  }
  // After MPI wrote range r in the host mirror (host_wrote: host code did, so even when MPI
  // works on device memory the mirror must go up).
  bool up(const Range& r, bool host_wrote = false) {
    return !dev || (dev_direct && !host_wrote) || r.cnt == 0 ||
           dev_ok(dev->to_device(dptr(r), ptr(r), bytes(r), dev_diags), "a copy to the device", &r);
  }
  // Device mode: whether MPI's part of s needs its range copied down from the device first.
  bool has_prep(StepId s) const {
    if (!dev) return false;
    switch (g.kind(s)) {
      case StepKind::Send:
        return !direct_p2p(s);  // MPI sends from the host mirror
      // Staged: an on-block message may be shorter than its range; the mirror first holds the
      // device's bytes, so copying the whole range back up leaves the rest as it was.
      case StepKind::Recv: return g.local(s) && !(g.flags(s) & kFlagReduce) && !direct_p2p(s);
      // Open MPI's CUDA support covers point-to-point and blocking collectives, not the
      // nonblocking ones this loop starts (their reductions run host operators), so collectives
      // always work on the host mirror.
      case StepKind::Collective: return g.coll(s).kind != CollKind::Barrier;
      default: return false;
    }
  }
  bool prepare(StepId s) { return down(g.range(s), g.kind(s) == StepKind::Collective); }
  bool check_rc(int rc, const char* what, StepId s) {
    if (rc == MPI_SUCCESS) return true;
    fail(s, std::string(what) + " failed" + (s != kNoStep ? " at " + describe(s) : std::string()) + ": " + mpi_error_string(rc));
    return false;
  }
  void satisfy(StepId s) {
    for (uint32_t i = succ->off[s]; i < succ->off[s + 1]; ++i)
      if (--pending[succ->succ[i]] == 0) ready.push_back(succ->succ[i]);
  }
  void track(MPI_Request r, StepId s, Req k) {
    reqs.push_back(r);
    req_step.push_back(s);
    req_kind.push_back(k);
  }
  // ---- lanes on the dataflow path (the rest in executor_lanes.cpp) ----
  bool to_lane(int k) {
    if (cur_lane == k) return true;
    cur_lane = k;
    return dev_ok(dev->select_lane(k, o.timeout_s, dev_diags), "selecting a device stream", nullptr, kNoStep);
  }

  // ---- elements by type (the fill, the check, a generic compute's values) ----
  template <class T>
  static void store(unsigned char* p, uint64_t i, double v) {
    reinterpret_cast<T*>(p)[i] = static_cast<T>(v);
  }
  template <class T>
  static double load(const unsigned char* p, uint64_t i) {
    return static_cast<double>(reinterpret_cast<const T*>(p)[i]);
  }
  static void store_any(DType t, unsigned char* p, uint64_t i, double v) {
    switch (t) {
      case DType::F32: store<float>(p, i, v); break;
      case DType::F64: store<double>(p, i, v); break;
      case DType::I32: store<int32_t>(p, i, v); break;
      case DType::I64: store<int64_t>(p, i, v); break;
      case DType::I8: store<int8_t>(p, i, v); break;
      // Unsigned bytes wrap, as the arithmetic on them does.
      case DType::U8: store<uint8_t>(p, i, static_cast<double>(static_cast<uint8_t>(static_cast<int64_t>(v)))); break;
      case DType::F16: reinterpret_cast<uint16_t*>(p)[i] = float_to_f16(static_cast<float>(v)); break;
      case DType::BF16: reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    }
  }
  static double load_any(DType t, const unsigned char* p, uint64_t i) {
    switch (t) {
      case DType::F32: return load<float>(p, i);
      case DType::F64: return load<double>(p, i);
      case DType::I32: return load<int32_t>(p, i);
      case DType::I64: return load<int64_t>(p, i);
      case DType::I8: return load<int8_t>(p, i);
      case DType::U8: return load<uint8_t>(p, i);
      case DType::F16: return f16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
      case DType::BF16: return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    }
    return 0;
  }

  // ---- executor_setup.cpp ----
  bool setup(Diagnostics& diags);
  bool setup_device(Diagnostics& diags);
  bool setup_local(Diagnostics& diags);

  std::string plan() const;

  // ---- executor_comms.cpp ----
  bool build_communicators(Diagnostics& diags);
  bool p2p_target(StepId s, MPI_Comm& comm, int& peer) const;

  // ---- executor_dataflow.cpp ----
  RunResult run(bool compute, bool values);
  void issue(StepId s);
  void complete(StepId s);
  void recheck_waits();
  bool handles_done(StepId w) const;
  void on_request_done(StepId s, Req kind);

  // ---- executor_transfers.cpp ----
  bool take_messages(bool& expecting);
  bool receive_matched(StepId s, MPI_Message& msg);
  bool deps_soon(StepId s, int depth) const;
  void finish_choreo_recv(StepId s);
  void finish_staged_on_device(StepId s, const Range& r, const unsigned char* src);
  void start_collective(StepId s, const Range& r);
  void finish_collective(StepId s);

  // ---- executor_ipc.cpp ----
  bool setup_ipc(Diagnostics& diags);
  void close_ipc();
  // The MPI calls of point-to-point transfers on device memory, as descriptors (peer and tag as
  // MPI takes them on comm; peer_world: the receiver's world rank).
  int ipc_isend(StepId s, const Range& r, uint32_t peer_world, int peer, int mpi_tag, MPI_Comm comm, MPI_Request* q);
  int ipc_irecv(StepId s, unsigned char* dst, int peer, int mpi_tag, MPI_Comm comm, MPI_Request* q);
  int ipc_imrecv(StepId s, unsigned char* dst, MPI_Message* msg, MPI_Request* q);
  bool ipc_pull(StepId s);
  bool ipc_send_acks();

  // ---- executor_lanes.cpp ----
  bool local_after(int m);
  int new_mark();
  bool device_moved();
  std::array<int, 2> needs(StepId s) const;
  void enter_gate(StepId s);
  bool reached(const Gate& gt) const;
  bool open_gates();

  // ---- executor_local_work.cpp ----
  void local_work(StepId s);
  void reduce_range(const Range& r, ReduceOp rop, unsigned char* dst, const unsigned char* src, uint64_t max_elems);
  // ---- executor_attention.cpp ----
  void attention_tile(const ComputeInfo& ci);
  // Attention items in the kernels' layout around the tiles of roles laid out otherwise
  // (q, kv, O, dQ, dKV), and the O|lse rows kept beside an O declared without its lse (per
  // buffer): host memory, and device memory in device mode.
  struct AttnMemory {
    std::vector<unsigned char> host;
    unsigned char* dev = nullptr;
  };
  std::array<AttnMemory, 5> att_scratch;
  std::vector<AttnMemory> att_shadow;
  std::deque<std::vector<unsigned char>> att_items;  // output items relaid for the check
  bool setup_attention_memory(Diagnostics& diags);
  void relayout(int role, bool to_kernel, unsigned char* dst, const unsigned char* src);

  // ---- executor_streamed.cpp ----
  bool plan_streams(Diagnostics& diags);
  RunResult run_streamed();
  bool stream_issue(StepId s, uint64_t msg_bytes);
  std::string stream_report(uint32_t lv, const std::string& why) const;

  // ---- executor_fill_check.cpp ----
  Value initial_value(uint32_t b, uint32_t c) const;
  bool fill_inputs();
  CheckResult compare_expected() const;
  std::vector<AttentionOutput> attention_outputs();
  void down_all();
  void up_all();

  // ---- executor_report.cpp ----
  std::string describe(StepId s) const;
  std::string source_line(StepId s) const;
  std::string waits_on(StepId s) const;
  std::string stall_report(double waited) const;
};

}  // namespace sg::exec
