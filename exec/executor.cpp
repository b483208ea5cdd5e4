#include "exec/executor.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <tuple>


#include "core/dsl/diagnostics.hpp"
#include "core/interp/postcondition.hpp"
#include "core/interp/state.hpp"
#include "exec/attention_exec.hpp"
#include "exec/half.hpp"
#include "exec/kernels.hpp"
#include "exec/values.hpp"

namespace sg::exec {

namespace {

using Clock = std::chrono::steady_clock;

enum : uint8_t { kIssued = 1, kCompleted = 2, kArrived = 4, kTaken = 8, kDeferred = 16 };
enum class Req : uint8_t { ChoreoData, Send, LocalRecv, Coll };

struct GroupKey {
  uint32_t start, count, stride;
  bool operator<(const GroupKey& o) const { return std::tie(start, count, stride) < std::tie(o.start, o.count, o.stride); }
  bool operator==(const GroupKey& o) const = default;
};

// Aligned storage: reductions vectorise better on 64-byte boundaries.
struct Block {
  unsigned char* p = nullptr;
  uint64_t size = 0;
  DeviceOps* pinned_by = nullptr;  // device mode: host memory from the device (pinned), given back to it
  void allocate(uint64_t n) {
    size = n;
    p = static_cast<unsigned char*>(std::aligned_alloc(64, std::max<uint64_t>(64, (n + 63) / 64 * 64)));
  }
  // Replaces the (still unused) allocation with the device's host memory: DMA-able, so the staged
  // copies run at full speed.
  bool pin(DeviceOps* d, std::string& err) {
    unsigned char* q = d->allocate_host(std::max<uint64_t>(64, size), err);
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

}  // namespace

struct Executor::Impl {
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
  std::vector<uint32_t> srcs;                  // the sources choreographic messages come from
  std::vector<std::vector<StepId>> from_src;   // per entry of srcs: its receive steps by sequence
  bool probe = false;                          // matched probes (false: every receive pre-posted into staging)
  std::vector<uint32_t> taken;                 // per run, per entry of srcs: messages taken
  std::vector<uint32_t> unissued;              // per run, per entry of srcs: receive steps not started yet
  std::vector<uint32_t> src_index;             // per choreographic receive step: its entry in srcs
  std::vector<uint8_t> direct;                 // per run, per step: its data went straight to the destination
  std::vector<uint32_t> succ_off, succ;
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
  uint64_t completed = 0;
  std::string error;
  double compute_s = 0;
  bool do_compute = true, write_values = true;
  AttentionLayout att;  // attention tiles' shapes and the merge buffers (exec/attention_exec.hpp)
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
  bool lanes = false;                              // device calls are asynchronous (on lanes) in this run
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

  Impl(const StepGraph& graph, const SourceManager& sm, MPI_Comm w, const ExecOptions& opts)
      : g(graph), sources(sm), world(w), o(opts) {}

  ~Impl() {
    for (MPI_Comm& c : owned_comms)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    if (dev) {
      for (unsigned char* p : dbufs)
        if (p) dev->release(p);
      if (dstage) dev->release(dstage);
    }
  }

  // ---- device mode: the staged transport (every call synchronous) ----
  // dev_direct (ExecOptions::device_direct): MPI reads and writes device memory itself (CUDA-aware
  // MPI), so nothing is staged: MPI's pointers are the device buffers and the device staging.
  bool dev_direct = false;
  unsigned char* dptr(const Range& r) const { return dbufs[r.buf] + uint64_t{r.lo} * g.buffers[r.buf].chunk_bytes; }
  // What MPI reads and writes for range r, and a step's staging slot as MPI sees it.
  unsigned char* mpi_ptr(const Range& r) const { return dev_direct ? dptr(r) : ptr(r); }
  unsigned char* mpi_stage(StepId s) const { return (dev_direct ? dstage : staging.p) + stage_off[s]; }
  std::string dev_error;  // the first device failure, kept across runs (fill_inputs and check report it)
  // Records a device failure. The message is built only then: these calls sit on every step.
  bool dev_ok(bool ok, const char* what, const Range* r, const std::string& why) {
    if (ok) return true;
    std::string msg = std::string(what) + (r ? " (" + g.range_name(*r) + ")" : std::string()) + " on " + dev->name() + ": " + why;
    if (error.empty()) error = msg;
    if (dev_error.empty()) dev_error = msg;
    return false;
  }
  // Before MPI reads range r from the host mirror.
  bool down(const Range& r, bool for_host = false) {
    std::string why;
    return !dev || (dev_direct && !for_host) || r.cnt == 0 || dev_ok(dev->to_host(ptr(r), dptr(r), bytes(r), why), "a copy to the host", &r, why);
  }
  // After MPI wrote range r in the host mirror (host_wrote: host code did, so even when MPI
  // works on device memory the mirror must go up).
  bool up(const Range& r, bool host_wrote = false) {
    std::string why;
    return !dev || (dev_direct && !host_wrote) || r.cnt == 0 || dev_ok(dev->to_device(dptr(r), ptr(r), bytes(r), why), "a copy to the device", &r, why);
  }
  // The whole of every buffer, both ways (inputs filled on the host; the check reads the host),
  // whatever the transport.
  void down_all() {
    for (uint32_t b = 0; b < g.buffers.size() && dev; ++b) down(Range{b, 0, g.buffers[b].chunks}, true);
  }
  void up_all() {
    for (uint32_t b = 0; b < g.buffers.size() && dev; ++b) up(Range{b, 0, g.buffers[b].chunks}, true);
  }

  unsigned char* ptr(const Range& r) const { return bufs[r.buf]->p + uint64_t{r.lo} * g.buffers[r.buf].chunk_bytes; }
  uint64_t bytes(const Range& r) const { return g.range_bytes(r); }
  uint64_t elems(const Range& r) const { return uint64_t{r.cnt} * g.buffers[r.buf].chunk_elems; }
  DType dtype(const Range& r) const { return g.buffers[r.buf].dtype; }
  static int count_of(uint64_t n, std::string& err) {
    if (n > static_cast<uint64_t>(INT32_MAX)) {
      err = "a message of " + std::to_string(n) + " elements exceeds MPI's int count";
      return -1;
    }
    return static_cast<int>(n);
  }

  bool check_rc(int rc, const char* what, StepId s) {
    if (rc == MPI_SUCCESS) return true;
    if (error.empty())
      error = std::string(what) + " failed" + (s != kNoStep ? " at " + describe(s) : std::string()) + ": " + mpi_error_string(rc);
    return false;
  }

  bool build_communicators(std::string& err) {
    // Every rank's groups, so that each member of each group creates its communicator, in one
    // order (sorted) on every rank: MPI_Comm_create_group is collective over the group.
    std::vector<uint32_t> mine;
    for (const GroupInfo& gr : g.groups) mine.insert(mine.end(), {gr.start, gr.count, gr.stride});
    int n = 0, rc = MPI_Comm_size(world, &n);
    if (rc != MPI_SUCCESS) return err = mpi_error_string(rc), false;
    int my_count = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
    rc = MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, world);
    if (rc != MPI_SUCCESS) return err = "MPI_Allgather: " + mpi_error_string(rc), false;
    int total = 0;
    for (int k = 0; k < n; ++k) displs[static_cast<size_t>(k)] = total, total += counts[static_cast<size_t>(k)];
    std::vector<uint32_t> all(static_cast<size_t>(total));
    rc = MPI_Allgatherv(mine.data(), my_count, MPI_UINT32_T, all.data(), counts.data(), displs.data(), MPI_UINT32_T, world);
    if (rc != MPI_SUCCESS) return err = "MPI_Allgatherv: " + mpi_error_string(rc), false;
    std::vector<GroupKey> keys;
    for (size_t k = 0; k + 2 < all.size(); k += 3) keys.push_back({all[k], all[k + 1], all[k + 2]});
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    MPI_Group wg;
    MPI_Comm_group(world, &wg);
    std::map<GroupKey, MPI_Comm> made;
    for (const GroupKey& k : keys) {
      GroupInfo gi{k.start, k.count, k.stride};
      if (gi.index_of(me) < 0) continue;
      std::vector<int> members;
      for (uint32_t j = 0; j < k.count; ++j) members.push_back(static_cast<int>(gi.member(j)));
      MPI_Group sub;
      MPI_Group_incl(wg, static_cast<int>(members.size()), members.data(), &sub);
      MPI_Comm c = MPI_COMM_NULL;
      rc = MPI_Comm_create_group(world, sub, 0x5347, &c);
      MPI_Group_free(&sub);
      if (rc != MPI_SUCCESS) {
        MPI_Group_free(&wg);
        return err = "MPI_Comm_create_group: " + mpi_error_string(rc), false;
      }
      MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
      owned_comms.push_back(c);
      made[k] = c;
    }
    MPI_Group_free(&wg);
    if (o.stream) {  // the same groups, in the same order, for the stream-ordered transport
      stream_group.assign(g.groups.size(), -1);
      for (const GroupKey& k : keys) {
        GroupInfo gi{k.start, k.count, k.stride};
        int id = -1;
        if (!o.stream->add_group(k.start, k.count, k.stride, gi.index_of(me) >= 0, id, err)) return err = o.stream->name() + ": " + err, false;
        for (size_t i = 0; i < g.groups.size(); ++i)
          if (g.groups[i] == gi && gi.index_of(me) >= 0) stream_group[i] = id;
      }
    }
    group_comm.assign(g.groups.size(), MPI_COMM_NULL);
    for (size_t i = 0; i < g.groups.size(); ++i) {
      auto it = made.find(GroupKey{g.groups[i].start, g.groups[i].count, g.groups[i].stride});
      if (it != made.end()) group_comm[i] = it->second;
    }
    MPI_Comm_dup(world, &choreo);
    MPI_Comm_dup(world, &p2p_world);
    MPI_Comm_set_errhandler(choreo, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(p2p_world, MPI_ERRORS_RETURN);
    owned_comms.push_back(choreo);
    owned_comms.push_back(p2p_world);
    return true;
  }

  // The communicator of an on-block send or receive, and the peer's rank in it.
  bool p2p_target(StepId s, MPI_Comm& comm, int& peer) const {
    const P2PInfo& p = g.p2p_info(s);
    const GroupInfo& gr = g.groups[p.comm];
    bool world_group = gr.start == 0 && gr.stride == 1 && gr.count == g.nranks;
    comm = world_group ? p2p_world : group_comm[p.comm];
    if (comm == MPI_COMM_NULL) return false;
    if (p.peer == kAnyRank) {
      peer = MPI_ANY_SOURCE;
      return true;
    }
    int64_t k = gr.index_of(p.peer);
    if (k < 0) return false;
    peer = static_cast<int>(k);
    return true;
  }

  // Setup is collective (communicators, the attention plan): a rank that refuses in its local
  // part still takes part in the agreement that follows, so no rank waits in a collective the
  // others never enter. Every rank returns false when one does (err empty where it found nothing).
  bool setup(std::string& err) {
    bool local = setup_local(err) && setup_device(err);
    int bad = local ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world);
    if (any) return false;
    if (!build_communicators(err)) return false;
    coll_prev.assign(g.size(), kNoStep);
    coll_next.assign(g.size(), kNoStep);
    std::map<MPI_Comm, StepId> last;
    for (StepId s = 0; s < g.size(); ++s) {
      if (g.kind(s) != StepKind::Collective) continue;
      MPI_Comm c = group_comm[g.coll(s).group];
      auto it = last.find(c);
      if (it != last.end()) coll_prev[s] = it->second, coll_next[it->second] = s;
      last[c] = s;
    }
    if (!plan_attention(g, sources, world, att, err)) return false;
    bool ok = !o.stream || plan_streams(err);
    int bad_plan = ok ? 0 : 1, any_plan = 0;
    MPI_Allreduce(&bad_plan, &any_plan, 1, MPI_INT, MPI_MAX, world);
    return !any_plan;
  }

  // The stream-ordered transport's plan: this rank's steps by level (core/graph/stream_order.hpp).
  bool plan_streams(std::string& err) {
    const StreamOrder* so = o.order;
    if (!dev || !so) return err = "the stream-ordered transport needs a device and the schedule's stream order", false;
    if (so->level.size() != g.size())
      return err = "internal: the stream order covers " + std::to_string(so->level.size()) + " steps of rank " + std::to_string(me) +
                   ", its program has " + std::to_string(g.size()),
             false;
    for (StepId s = 0; s < g.size(); ++s)
      if (so->stmt[s] != g.stmt(s) || so->kind[s] != static_cast<uint8_t>(g.kind(s)))
        return err = "internal: the stream order does not follow rank " + std::to_string(me) + "'s program at " + describe(s), false;
    level_xfer.assign(so->groups + 1, {});
    level_local.assign(so->groups + 1, {});
    needs_mark.assign(g.size(), 0);
    for (StepId s = 0; s < g.size(); ++s) {
      if (!stream_transfer(g.kind(s))) {
        level_local[so->level[s]].push_back(s);
        continue;
      }
      level_xfer[so->level[s]].push_back(s);
      for (const uint32_t* d = g.deps_begin(s); d != g.deps_end(s); ++d)
        if (!stream_transfer(g.kind(*d))) needs_mark[*d] = 1;
      if (g.kind(s) == StepKind::Collective) {
        const CollInfo& c = g.coll(s);
        if (stream_group[c.group] < 0) return err = "no communicator for " + describe(s), false;
        bool reduces = c.kind == CollKind::Allreduce || c.kind == CollKind::Reduce || c.kind == CollKind::ReduceScatter;
        if (reduces && att.active && att.merge[g.range(s).buf]) {
          Diagnostics d;
          d.error(g.loc(s), "this collective reduces partial attention outputs, which merge by log-sum-exp: NCCL's collectives only "
                            "add, multiply or take maxima (use --transport staged)");
          return err = d.render(sources), false;
        }
      }
    }
    for (auto& v : level_xfer) std::stable_sort(v.begin(), v.end(), [&](StepId a, StepId b) { return so->key[a] < so->key[b]; });
    return true;
  }

  // Device mode: one device allocation per buffer and a device staging area.
  bool setup_device(std::string& err) {
    dev = o.device;
    dev_direct = dev && o.device_direct;
    if (!dev) return true;
    std::string why;
    for (const BufferInfo& b : g.buffers) {
      unsigned char* p = dev->allocate(uint64_t{b.chunks} * b.chunk_bytes, why);
      if (!p) return err = "device memory for buffer " + b.name + " on " + dev->name() + ": " + why, false;
      dbufs.push_back(p);
    }
    dstage = dev->allocate(staging.size, why);
    if (!dstage) return err = "device memory for the staging area on " + dev->name() + ": " + why, false;
    for (auto& b : bufs)
      if (!b->pin(dev, why)) return err = "pinned host memory on " + dev->name() + ": " + why, false;
    if (!staging.pin(dev, why)) return err = "pinned host memory on " + dev->name() + ": " + why, false;
    return true;
  }

  bool setup_local(std::string& err) {
    me = static_cast<uint32_t>(g.only_rank);
    for (const BufferInfo& b : g.buffers) {
      if (!dtype_supported(b.dtype)) return err = std::string("buffer ") + b.name + ": dtype " + dtype_name(b.dtype) + " is not executed", false;
      auto blk = std::make_unique<Block>();
      blk->allocate(uint64_t{b.chunks} * b.chunk_bytes);
      bufs.push_back(std::move(blk));
    }
    // The reduction operator the postcondition's numbers are computed with.
    bool op_found = false;
    for (StepId s = 0; s < g.size() && !op_found; ++s) {
      StepKind k = g.kind(s);
      if (k == StepKind::Reduce || (k == StepKind::Recv && (g.flags(s) & kFlagReduce))) op = flag_op(g.flags(s)), op_found = true;
      else if (k == StepKind::Collective) {
        CollKind ck = g.coll(s).kind;
        if (ck == CollKind::Allreduce || ck == CollKind::Reduce || ck == CollKind::ReduceScatter) op = g.coll(s).op, op_found = true;
      }
    }
    // Tags of choreographic transfers, staging offsets, successors.
    std::vector<uint32_t> sent(g.nranks, 0), recvd(g.nranks, 0);
    tag.assign(g.size(), 0);
    stage_off.assign(g.size(), UINT64_MAX);
    uint64_t stage = 0;
    int flag = 0;
    void* ub_ptr = nullptr;
    MPI_Comm_get_attr(world, MPI_TAG_UB, &ub_ptr, &flag);
    uint32_t tag_ub = flag && ub_ptr ? static_cast<uint32_t>(*static_cast<int*>(ub_ptr)) : 32767u;
    auto stage_for = [&](StepId s, uint64_t n) {
      stage_off[s] = stage;
      stage += (n + 63) / 64 * 64;
    };
    for (StepId s = 0; s < g.size(); ++s) {
      StepKind k = g.kind(s);
      if ((k == StepKind::Send || k == StepKind::Recv) && !g.local(s)) {
        uint32_t peer = g.peer(s);
        uint32_t seq = k == StepKind::Send ? sent[peer]++ : recvd[peer]++;
        tag[s] = static_cast<int>(seq % (tag_ub + 1));
        if (k == StepKind::Recv) stage_for(s, bytes(g.range(s)));
      } else if (k == StepKind::Recv && (g.flags(s) & kFlagReduce)) {
        stage_for(s, bytes(g.range(s)));
      } else if (k == StepKind::Collective) {
        const CollInfo& c = g.coll(s);
        const BufferInfo& bi = g.buffers[g.range(s).buf];
        if (bi.chunk_bytes % dtype_size(bi.dtype) != 0)
          return err = "buffer " + bi.name + ": a chunk of " + std::to_string(bi.chunk_bytes) + " bytes is not a whole number of " +
                       dtype_name(bi.dtype) + " elements, and " + describe(s) +
                       " hands MPI a count of elements: choose a size that divides evenly", false;
        if (c.kind == CollKind::ReduceScatter || (c.kind == CollKind::Alltoall && c.into.cnt == 0)) stage_for(s, bytes(g.range(s)));
      }
    }
    staging.allocate(stage);
    {
      std::vector<int64_t> index(g.nranks, -1);
      for (StepId s = 0; s < g.size(); ++s) {
        if (g.kind(s) != StepKind::Recv || g.local(s)) continue;
        uint32_t src = g.peer(s);
        if (index[src] < 0) {
          index[src] = static_cast<int64_t>(srcs.size());
          srcs.push_back(src);
          from_src.emplace_back();
        }
        from_src[static_cast<size_t>(index[src])].push_back(s);
        if (src_index.empty()) src_index.assign(g.size(), 0);
        src_index[s] = static_cast<uint32_t>(index[src]);
      }
      // A probe per source per poll: worth it for the few sources of rings, trees and
      // recursive doubling; an all-to-all from thousands of sources keeps pre-posted receives.
      // Tags must not wrap, since a tag names the step.
      probe = srcs.size() <= 64;
      for (const auto& v : from_src)
        if (v.size() > uint64_t{tag_ub} + 1) probe = false;
    }
    succ_off.assign(g.size() + 1, 0);
    for (StepId s = 0; s < g.size(); ++s)
      for (const uint32_t* d = g.deps_begin(s); d != g.deps_end(s); ++d) ++succ_off[*d + 1];
    for (size_t i = 0; i < g.size(); ++i) succ_off[i + 1] += succ_off[i];
    succ.resize(succ_off[g.size()]);
    {
      std::vector<uint32_t> pos(succ_off.begin(), succ_off.end() - 1);
      for (StepId s = 0; s < g.size(); ++s)
        for (const uint32_t* d = g.deps_begin(s); d != g.deps_end(s); ++d) succ[pos[*d]++] = s;
    }
    return true;
  }

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

  // This rank's initial value of chunk c of buffer b, from the init rules (apply_inits' rules,
  // for one rank): d(me, c), x(c), or undefined.
  Value initial_value(uint32_t b, uint32_t c) const {
    Value v;
    for (const InitRule& r : g.inits) {
      const Range& rg = r.range;
      if (rg.buf != b || c < rg.lo || c >= rg.lo + rg.cnt) continue;
      switch (r.kind) {
        case InitKind::Contrib:
          if (g.groups[r.group].index_of(me) >= 0) v = Value::contrib(b, me, c);
          break;
        case InitKind::Owned: {
          const GroupInfo& gr = g.groups[r.group];
          uint32_t per = gr.count ? rg.cnt / gr.count : 0;
          int64_t k = gr.index_of(me);
          if (k >= 0 && per && c >= rg.lo + static_cast<uint32_t>(k) * per && c < rg.lo + (static_cast<uint32_t>(k) + 1) * per) v = Value::item(b, c);
          break;
        }
        case InitKind::OnRank:
          if (r.rank == me) v = Value::item(b, c);
          break;
      }
    }
    return v;
  }

  bool fill_inputs() {
    for (uint32_t b = 0; b < g.buffers.size(); ++b) {
      const BufferInfo& bi = g.buffers[b];
      std::memset(bufs[b]->p, 0, bufs[b]->size);
      bool merge = att.active && att.merge[b];
      if (merge) clear_merge_rows(att, bufs[b]->p, uint64_t{bi.chunks} * bi.chunk_bytes);  // empty outputs: lse = -inf
      for (uint32_t c = 0; c < bi.chunks; ++c) {
        Value v = initial_value(b, c);
        if (!v.defined) continue;
        unsigned char* p = bufs[b]->p + uint64_t{c} * bi.chunk_bytes;
        if (att.active && (b == att.q.buf || b == att.kv.buf)) {
          // Attention inputs: real q / kv (or the backward's bundle) for the item the chunk holds.
          const Range& in = b == att.q.buf ? att.q : att.kv;
          int64_t item = v.single_item(b);
          if (item >= in.lo && item < int64_t{in.lo} + in.cnt) {
            fill_attention_item(att, b == att.q.buf, static_cast<uint32_t>(item - in.lo), p);
            continue;
          }
        }
        double x = 0;
        for (uint64_t e = 0; e < bi.chunk_elems; ++e)
          if (evaluate(v, ReduceOp::Sum, e, x)) store_any(bi.dtype, p, e, x);
      }
    }
    up_all();  // device mode: the inputs are filled on the host mirrors, then copied over
    return dev_error.empty();
  }

  CheckResult check() const {
    CheckResult r;
    if (!initial) {
      initial = std::make_unique<MachineState>(g);
      initial->apply_inits(g);
    }
    for_each_expected(g, *initial, [&](const Expectation&, uint32_t rank, uint32_t buf, uint32_t chunk, const Value& want) {
      if (rank != me) return;
      const BufferInfo& bi = g.buffers[buf];
      const unsigned char* p = bufs[buf]->p + uint64_t{chunk} * bi.chunk_bytes;
      double x = 0;
      for (uint64_t e = 0; e < bi.chunk_elems; ++e) {
        if (!evaluate(want, op, e, x)) {
          r.unchecked += bi.chunk_elems - e;
          return;
        }
        double got = load_any(bi.dtype, p, e);
        if (bi.dtype == DType::I8 || bi.dtype == DType::U8 || bi.dtype == DType::F16 || bi.dtype == DType::BF16) {
          // the expected value in the type itself (wrapping bytes, a half's rounding)
          unsigned char tmp[8];
          store_any(bi.dtype, tmp, 0, x);
          x = load_any(bi.dtype, tmp, 0);
        }
        ++r.checked;
        bool same = got == x || (std::fabs(x) >= 16777216.0 && std::fabs(got - x) <= 1e-6 * std::fabs(x));
        if (!same) {
          if (r.wrong == 0)
            r.first = "rank " + std::to_string(me) + " " + g.chunk_name(buf, chunk) + " element " + std::to_string(e) + ": expected " +
                      std::to_string(x) + ", got " + std::to_string(got);
          ++r.wrong;
        }
      }
    });
    return r;
  }

  std::string describe(StepId s) const {
    std::string d = step_kind_name(g.kind(s));
    StepKind k = g.kind(s);
    if (k == StepKind::Send || k == StepKind::Recv || k == StepKind::Copy || k == StepKind::Reduce || k == StepKind::Collective)
      d += " " + g.range_name(g.range(s));
    if (k == StepKind::Send || k == StepKind::Recv) {
      uint32_t p = g.peer(s);
      d += k == StepKind::Send ? " to " : " from ";
      d += p == kAnyRank ? std::string("any rank") : "rank " + std::to_string(p);
      if (g.local(s)) {
        int32_t t = g.p2p_info(s).tag;
        d += t == kAnyTag ? std::string(" tag any") : " tag " + std::to_string(t);
      }
    }
    if (k == StepKind::Collective) {
      const CollInfo& c = g.coll(s);
      const GroupInfo& gr = g.groups[c.group];
      d = std::string(coll_name(c.kind)) + " " + g.range_name(g.range(s)) + " over ranks(" + std::to_string(gr.start) + ", " +
          std::to_string(gr.count) + (gr.stride != 1 ? ", " + std::to_string(gr.stride) : std::string()) + ")";
    }
    Loc l = g.loc(s);
    if (l.valid()) d += " at " + sources.describe(l);
    return d;
  }

  std::string source_line(StepId s) const {
    Loc l = g.loc(s);
    if (!l.valid() || l.file == 0) return "";
    return std::string(sources.file(l.file).line(l.line));
  }

  void satisfy(StepId s) {
    for (uint32_t i = succ_off[s]; i < succ_off[s + 1]; ++i)
      if (--pending[succ[i]] == 0) ready.push_back(succ[i]);
  }

  void complete(StepId s) {
    if (flow_lanes) {
      StepKind k = g.kind(s);
      // A receive's or collective's device work after MPI (on lane 1, on_request_done) is marked.
      if (k == StepKind::Recv || (k == StepKind::Collective && g.coll(s).kind != CollKind::Barrier)) {
        to_lane(1);
        dm[s][1] = std::max(dm[s][1], new_mark());
      } else if (k == StepKind::Wait) {
        dm[s] = needs(s);
      }
    }
    st[s] |= kCompleted;
    ++completed;
    if (!g.nonblocking(s)) satisfy(s);
    else recheck_waits();
  }

  void recheck_waits() {
    for (size_t i = 0; i < waits.size();) {
      StepId w = waits[i];
      if (handles_done(w)) {
        waits[i] = waits.back();
        waits.pop_back();
        complete(w);
        i = 0;  // complete() may have changed the list
      } else {
        ++i;
      }
    }
  }

  bool handles_done(StepId w) const {
    for (const StepId* h = g.handles_begin(w); h != g.handles_end(w); ++h)
      if (!(st[*h] & kCompleted)) return false;
    return true;
  }

  void track(MPI_Request r, StepId s, Req k) {
    reqs.push_back(r);
    req_step.push_back(s);
    req_kind.push_back(k);
  }

  // dst op= src over range r (src laid out like r): on the host, or in device mode on the device
  // (dst, src device pointers). Chunks whose size is not a multiple of the element size end in
  // padding bytes: their elements are reduced chunk by chunk.
  void reduce_range(const Range& r, ReduceOp rop, unsigned char* dst, const unsigned char* src, uint64_t max_elems) {
    const BufferInfo& bi = g.buffers[r.buf];
    DType t = bi.dtype;
    std::string why;
    if (att.active && att.merge[r.buf]) {  // partial attention outputs: the online-softmax merge
      uint64_t n = std::min(bytes(r), max_elems == UINT64_MAX ? UINT64_MAX : max_elems * dtype_size(t));
      if (dev) dev_ok(dev->attention_merge(dst, src, n / ((att.dim + uint64_t{1}) * 4), att.dim, why), "a merge", &r, why);
      else merge_rows(att, dst, src, n);
      return;
    }
    auto leaf = [&](unsigned char* d, const unsigned char* x, uint64_t n) {
      if (!dev) {
        reduce_into(t, rop, d, x, n);
        return true;
      }
      return dev_ok(dev->reduce(t, rop, d, x, n, why), "a reduction", &r, why);
    };
    if (bi.chunk_bytes % dtype_size(t) == 0) {
      leaf(dst, src, std::min(elems(r), max_elems));
      return;
    }
    for (uint32_t k = 0; k < r.cnt; ++k)
      if (!leaf(dst + k * bi.chunk_bytes, src + k * bi.chunk_bytes, bi.chunk_elems)) return;
  }

  void finish_choreo_recv(StepId s) {
    if (flow_lanes && !to_lane(1)) return;
    Range r = g.range(s);
    const unsigned char* src = staging.p + stage_off[s];
    if (dev) finish_staged_on_device(s, r, src);
    else if (g.flags(s) & kFlagReduce) reduce_range(r, flag_op(g.flags(s)), ptr(r), src, UINT64_MAX);
    else std::memcpy(ptr(r), src, bytes(r));
    complete(s);
  }

  // Device mode: a received message in host staging goes to its destination on the device, or to
  // the device staging slot and is reduced from there by the device.
  void finish_staged_on_device(StepId s, const Range& r, const unsigned char* src) {
    std::string why;
    if (dev_direct) {  // the message is in the device staging slot already
      unsigned char* d = dstage + stage_off[s];
      if (g.flags(s) & kFlagReduce) reduce_range(r, flag_op(g.flags(s)), dptr(r), d, UINT64_MAX);
      else dev_ok(dev->copy(dptr(r), d, bytes(r), why), "a device copy of a received message", &r, why);
      return;
    }
    if (g.flags(s) & kFlagReduce) {
      unsigned char* d = dstage + stage_off[s];
      if (dev_ok(dev->to_device(d, src, bytes(r), why), "a copy of a received message to the device", &r, why))
        reduce_range(r, flag_op(g.flags(s)), dptr(r), d, UINT64_MAX);
    } else {
      dev_ok(dev->to_device(dptr(r), src, bytes(r), why), "a copy of a received message to the device", &r, why);
    }
  }

  // ---- lanes on the dataflow path ----
  bool to_lane(int k) {
    if (cur_lane == k) return true;
    cur_lane = k;
    std::string why;
    return dev_ok(dev->select_lane(k, o.timeout_s, why), "selecting a device stream", nullptr, why);
  }
  // Lane 0 from now on, after lane 1's mark m (m < 0: none).
  bool local_after(int m) {
    if (!to_lane(0)) return false;
    if (m <= lane0_waited) return true;
    lane0_waited = m;
    std::string why;
    return dev_ok(dev->wait_mark(m, why), "a device wait", nullptr, why);
  }
  int new_mark() {
    int id = -1;
    std::string why;
    if (dev_ok(dev->mark(id, why), "a device mark", nullptr, why) && id >= 0 && (cur_lane == 0 || cur_lane == 1))
      unseen[static_cast<size_t>(cur_lane)].push_back(id);
    return id;
  }
  // Whether the device reached a mark since the last call (a lane reaches its marks in order).
  bool device_moved() {
    bool moved = false;
    for (std::deque<int>& q : unseen)
      while (!q.empty() && dev->mark_reached(q.front())) q.pop_front(), moved = true;
    return moved;
  }
  // The newest marks per lane that s's dependencies (and a wait's handles) left behind.
  std::array<int, 2> needs(StepId s) const {
    std::array<int, 2> n{-1, -1};
    auto add = [&](StepId d) { n[0] = std::max(n[0], dm[d][0]), n[1] = std::max(n[1], dm[d][1]); };
    for (const uint32_t* d = g.deps_begin(s); d != g.deps_end(s); ++d) add(*d);
    if (g.kind(s) == StepKind::Wait)
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) add(*h);
    return n;
  }
  // Device mode: whether MPI's part of s needs its range copied down from the device first.
  bool has_prep(StepId s) const {
    if (!dev) return false;
    switch (g.kind(s)) {
      case StepKind::Send: return !dev_direct;  // MPI sends from the host mirror
      // Staged: an on-block message may be shorter than its range; the mirror first holds the
      // device's bytes, so copying the whole range back up leaves the rest as it was.
      case StepKind::Recv: return g.local(s) && !(g.flags(s) & kFlagReduce) && !dev_direct;
      // Open MPI's CUDA support covers point-to-point and blocking collectives, not the
      // nonblocking ones this loop starts (their reductions run host operators), so collectives
      // always work on the host mirror.
      case StepKind::Collective: return g.coll(s).kind != CollKind::Barrier;
      default: return false;
    }
  }
  bool prepare(StepId s) { return down(g.range(s), g.kind(s) == StepKind::Collective); }
  // With lanes: a transfer waits at a gate for the marks its dependencies left.
  void enter_gate(StepId s) {
    std::array<int, 2> n = needs(s);
    dm[s] = n;
    gated.push_back(Gate{s, n[0], n[1], has_prep(s)});
  }
  bool reached(const Gate& gt) const {
    return (gt.m0 < 0 || dev->mark_reached(gt.m0)) && (gt.m1 < 0 || dev->mark_reached(gt.m1));
  }
  // Lets the device run; enqueues the copies down whose steps' marks are reached; issues the
  // steps whose marks (their copy down's included) are reached, in gate order (MPI matches
  // on-block transfers in the order they start, as on the synchronous path). True when it did
  // anything.
  bool open_gates() {
    std::string why;
    if (!dev->progress(why)) return dev_ok(false, "device work", nullptr, why);
    bool any = false;
    // A copy down goes on lane 1 only once the host has seen the local work it reads finished,
    // so lane 1 never waits on the device for lane 0: a received block's copy up is never queued
    // behind a tile that runs meanwhile (the copies down may go in any order: they write
    // disjoint mirrors, or the same bytes).
    for (Gate& gt : gated) {
      if (!gt.prep || !reached(gt)) continue;
      gt.prep = false;
      if (!to_lane(1) || !prepare(gt.s)) return false;
      gt.m0 = -1;
      gt.m1 = new_mark();
      dm[gt.s][1] = std::max(dm[gt.s][1], gt.m1);
      any = true;
    }
    while (!gated.empty() && error.empty()) {
      const Gate gt = gated.front();
      if (gt.prep || !reached(gt)) break;
      gated.pop_front();
      passed[gt.s] = 1;
      issue(gt.s);
      any = true;
    }
    return any;
  }

  void issue(StepId s) {
    if (g.kind(s) == StepKind::Collective && coll_prev[s] != kNoStep && !(st[coll_prev[s]] & kIssued)) {
      st[s] |= kDeferred;  // started right after its predecessor on the communicator
      return;
    }
    StepKind k = g.kind(s);
    bool transfer = k == StepKind::Send || k == StepKind::Recv || k == StepKind::Collective;
    if (flow_lanes && transfer && !passed[s]) {
      enter_gate(s);
      return;
    }
    st[s] |= kIssued;
    Range r = k == StepKind::Wait ? Range{} : g.range(s);
    if (!flow_lanes && has_prep(s) && !prepare(s)) return;  // (with lanes done before the gate)
    switch (k) {
      case StepKind::Send: {
        MPI_Request q;
        int rc;
        if (!g.local(s)) {
          rc = MPI_Isend(mpi_ptr(r), count_of(bytes(r), error), MPI_BYTE, static_cast<int>(g.peer(s)), tag[s], choreo, &q);
        } else {
          MPI_Comm c;
          int peer = 0;
          if (!p2p_target(s, c, peer)) {
            error = "no communicator for " + describe(s);
            return;
          }
          rc = MPI_Isend(mpi_ptr(r), count_of(bytes(r), error), MPI_BYTE, peer, g.p2p_info(s).tag, c, &q);
        }
        if (!check_rc(rc, "MPI_Isend", s)) return;
        track(q, s, Req::Send);
        if (g.nonblocking(s)) satisfy(s);
        return;
      }
      case StepKind::Recv: {
        if (!g.local(s)) {
          --unissued[src_index[s]];
          if (st[s] & kArrived) finish_choreo_recv(s);
          return;  // finished when its data arrives
        }
        MPI_Comm c;
        int peer = 0;
        if (!p2p_target(s, c, peer)) {
          error = "no communicator for " + describe(s);
          return;
        }
        unsigned char* dst = (g.flags(s) & kFlagReduce) ? mpi_stage(s) : mpi_ptr(r);
        int32_t t = g.p2p_info(s).tag;
        MPI_Request q;
        if (!check_rc(MPI_Irecv(dst, count_of(bytes(r), error), MPI_BYTE, peer, t == kAnyTag ? MPI_ANY_TAG : t, c, &q), "MPI_Irecv", s)) return;
        track(q, s, Req::LocalRecv);
        if (g.nonblocking(s)) satisfy(s);
        return;
      }
      case StepKind::Copy:
      case StepKind::Reduce:
      case StepKind::Compute:
        if (flow_lanes) {  // on lane 0, after the transfers it needs; a mark after it
          std::array<int, 2> n = needs(s);
          if (!local_after(n[1])) return;
          local_work(s);
          dm[s] = {new_mark(), n[1]};
        } else {
          local_work(s);
        }
        complete(s);
        return;
      case StepKind::Collective: {
        start_collective(s, r);
        StepId n = coll_next[s];
        if (n != kNoStep && (st[n] & kDeferred)) {
          st[n] &= static_cast<uint8_t>(~kDeferred);
          ready.push_front(n);
        }
        return;
      }
      case StepKind::Wait: {
        if (handles_done(s)) complete(s);
        else waits.push_back(s);
        return;
      }
    }
  }

  // A copy, reduce or compute step's work (in device mode on the device, on the current lane).
  void local_work(StepId s) {
    Range r = g.range(s);
    std::string why;
    switch (g.kind(s)) {
      case StepKind::Copy: {
        Range src = g.copy_source(s);
        if (dev) dev_ok(dev->copy(dptr(r), dptr(src), std::min(bytes(r), bytes(src)), why), "a device copy", &r, why);
        else std::memmove(ptr(r), ptr(src), std::min(bytes(r), bytes(src)));
        return;
      }
      case StepKind::Reduce: {
        Range src = g.copy_source(s);
        reduce_range(r, flag_op(g.flags(s)), dev ? dptr(r) : ptr(r), dev ? dptr(src) : ptr(src), elems(src));
        return;
      }
      case StepKind::Compute: {
        auto t0 = Clock::now();
        const ComputeInfo& ci = g.compute(s);
        if (ci.kind != ComputeKind::Generic && att.active) {
          if (do_compute) attention_tile(ci);
          compute_s += std::chrono::duration<double>(Clock::now() - t0).count();
          return;
        }
        if (do_compute) {
          volatile double sink = burn_flops(ci.flops);
          (void)sink;
        }
        // What the interpreter says a generic compute leaves: d(rank, chunk) in every chunk it
        // writes (the step's own new data), here as numbers.
        for (uint32_t i = 0; i < ci.writes_cnt && write_values; ++i) {
          const Range& w = g.ranges[ci.writes_off + i];
          const BufferInfo& bi = g.buffers[w.buf];
          // With lanes the copy up is enqueued, not done: the values go from a buffer of their
          // own that lives until the run ends, never from the mirror a later step rewrites.
          unsigned char* base = bufs[w.buf]->p + uint64_t{w.lo} * bi.chunk_bytes;
          if (lanes) base = lane_values.emplace_back(bytes(w)).data();
          for (uint32_t c = w.lo; c < w.lo + w.cnt; ++c) {
            unsigned char* p = base + uint64_t{c - w.lo} * bi.chunk_bytes;
            for (uint64_t e = 0; e < bi.chunk_elems; ++e) store_any(bi.dtype, p, e, contrib_value(w.buf, me, c, e));
          }
          if (lanes) dev_ok(dev->to_device(dptr(w), base, bytes(w), why), "a copy to the device", &w, why);
          else up(w, true);
        }
        compute_s += std::chrono::duration<double>(Clock::now() - t0).count();
        return;
      }
      default: return;
    }
  }

  // A `compute attn` / `attn_bwd` step: one tile per q chunk of its operand range.
  void attention_tile(const ComputeInfo& ci) {
    const Range& rq = g.ranges[ci.reads_off];
    const Range& rkv = g.ranges[ci.reads_off + 1];
    const Range& w0 = g.ranges[ci.writes_off];
    bool bwd = ci.kind == ComputeKind::AttnBwd;
    if (dev) {  // device mode: the device's kernels on the device buffers
      DeviceOps::AttentionTile t;
      t.kv = dptr(rkv);
      t.out1 = bwd ? dptr(g.ranges[ci.writes_off + 1]) : nullptr;
      t.batch = att.tile.batch, t.heads = att.tile.heads, t.rows_q = att.tile.rows_q, t.rows_k = att.tile.rows_k, t.dim = att.dim;
      t.bf16 = att.bf16, t.backward = bwd, t.causal = ci.mask == Mask::Causal, t.scale = att.scale;
      std::string why;
      for (uint32_t k = 0; k < rq.cnt; ++k) {
        t.q = dptr(rq) + uint64_t{k} * g.buffers[rq.buf].chunk_bytes;
        t.out0 = dptr(w0) + uint64_t{k} * g.buffers[w0.buf].chunk_bytes;
        if (!dev_ok(dev->attention_tile(t, why), "an attention tile", &rq, why)) return;
      }
      return;
    }
    unsigned char* dkv = bwd ? ptr(g.ranges[ci.writes_off + 1]) : nullptr;
    for (uint32_t k = 0; k < rq.cnt; ++k)
      run_attention_tile(att, bwd, ci.mask == Mask::Causal, ptr(rq) + uint64_t{k} * g.buffers[rq.buf].chunk_bytes, ptr(rkv),
                         ptr(w0) + uint64_t{k} * g.buffers[w0.buf].chunk_bytes, dkv);
  }

  // This rank's output items for the attention check: the O (or dQ) chunk beside each q item it
  // started with, and with a backward the dKV chunk beside each kv item (the postcondition's
  // owners, core/interp/postcondition.cpp).
  std::vector<AttentionOutput> attention_outputs() const {
    std::vector<AttentionOutput> out;
    auto add = [&](const Range& in, const Range& res, uint32_t role) {
      for (uint32_t c = in.lo; c < in.lo + in.cnt; ++c) {
        int64_t item = initial_value(in.buf, c).single_item(in.buf);
        if (item < in.lo || item >= int64_t{in.lo} + in.cnt) continue;
        out.push_back({role, static_cast<uint32_t>(item - in.lo), ptr(Range{res.buf, res.lo + (c - in.lo), 1})});
      }
    };
    add(att.q, att.out0, 0);
    if (att.backward) add(att.kv, att.out1, 1);
    return out;
  }

  void start_collective(StepId s, const Range& r) {
    const CollInfo& c = g.coll(s);
    const GroupInfo& gr = g.groups[c.group];
    MPI_Comm comm = group_comm[c.group];
    if (comm == MPI_COMM_NULL) {
      error = "no communicator for " + describe(s);
      return;
    }
    MPI_Datatype t = mpi_type(dtype(r));
    MPI_Op mop = mpi_op(c.op, dtype(r));
    int n = count_of(elems(r), error);
    if (att.active && att.merge[r.buf]) {  // partial attention outputs: rows of dim + 1 floats, merged
      t = attention_row_type(att.dim);
      mop = attention_merge_op();
      n = count_of(bytes(r) / ((att.dim + uint64_t{1}) * 4), error);
    }
    int per = gr.count ? n / static_cast<int>(gr.count) : 0;
    int root = static_cast<int>(std::max<int64_t>(0, gr.index_of(c.root)));
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    // Device mode: MPI's collectives work on the host mirror with either transport (prepare()).
    unsigned char* p = c.kind == CollKind::Barrier ? nullptr : ptr(r);
    switch (c.kind) {
      case CollKind::Barrier: rc = MPI_Ibarrier(comm, &q); break;
      case CollKind::Allreduce: rc = MPI_Iallreduce(MPI_IN_PLACE, p, n, t, mop, comm, &q); break;
      case CollKind::Bcast: rc = MPI_Ibcast(p, n, t, root, comm, &q); break;
      case CollKind::Reduce:
        rc = me == c.root ? MPI_Ireduce(MPI_IN_PLACE, p, n, t, mop, root, comm, &q) : MPI_Ireduce(p, nullptr, n, t, mop, root, comm, &q);
        break;
      case CollKind::Allgather: rc = MPI_Iallgather(MPI_IN_PLACE, 0, t, p, per, t, comm, &q); break;
      case CollKind::ReduceScatter:
        // MPI puts this member's block at the start of its receive buffer; the language wants it
        // in place at block me: staged, then copied (finish_collective).
        rc = MPI_Ireduce_scatter_block(p, staging.p + stage_off[s], per, t, mop, comm, &q);
        break;
      case CollKind::Alltoall:
        if (c.into.cnt) {
          rc = MPI_Ialltoall(p, per, t, ptr(c.into), per, t, comm, &q);
        } else {
          std::memcpy(staging.p + stage_off[s], p, bytes(r));
          rc = MPI_Ialltoall(staging.p + stage_off[s], per, t, p, per, t, comm, &q);
        }
        break;
    }
    if (!check_rc(rc, "the MPI collective", s)) return;
    track(q, s, Req::Coll);
  }

  void finish_collective(StepId s) {
    const CollInfo& c = g.coll(s);
    if (c.kind == CollKind::ReduceScatter) {
      const GroupInfo& gr = g.groups[c.group];
      Range r = g.range(s);
      uint64_t blk = bytes(r) / gr.count;
      std::memcpy(ptr(r) + blk * static_cast<uint64_t>(gr.index_of(me)), staging.p + stage_off[s], blk);
    }
    // Device mode: what MPI wrote goes back to the device (an all-to-all's output range, else the
    // collective's own, which its host mirror held for MPI since the start).
    if (c.kind != CollKind::Barrier) up(c.kind == CollKind::Alltoall && c.into.cnt ? c.into : g.range(s), true);
    complete(s);
  }

  // Completions only make steps ready (the loop starts them): no request is added here.
  void on_request_done(StepId s, Req kind) {
    if (flow_lanes && !to_lane(1)) return;  // what MPI wrote goes up on lane 1
    switch (kind) {
      case Req::ChoreoData:
        st[s] |= kArrived;
        if (direct[s]) up(g.range(s)), complete(s);  // device mode: from the host mirror it landed in
        else if (st[s] & kIssued) finish_choreo_recv(s);
        break;
      case Req::Send: complete(s); break;
      case Req::LocalRecv: {
        Range r = g.range(s);
        if (dev && (g.flags(s) & kFlagReduce)) finish_staged_on_device(s, r, staging.p + stage_off[s]);
        else if (dev) up(r);  // (nothing to do when MPI wrote the device buffer itself)
        else if (g.flags(s) & kFlagReduce) reduce_range(r, flag_op(g.flags(s)), ptr(r), staging.p + stage_off[s], UINT64_MAX);
        complete(s);
        break;
      }
      case Req::Coll: finish_collective(s); break;
    }
  }

  // Whether every unsatisfied dependency of s will be done without waiting on another rank:
  // local work (copy, reduce, compute) whose own dependencies are so, or a choreographic
  // receive whose message is already taken. Sends, on-block steps and collectives wait on
  // peers, so a message is never held back behind them (that could deadlock).
  bool deps_soon(StepId s, int depth) const {
    if (depth == 0) return false;
    for (const uint32_t* d = g.deps_begin(s); d != g.deps_end(s); ++d) {
      uint8_t x = st[*d];
      if ((x & kCompleted) || ((x & kIssued) && g.nonblocking(*d))) continue;
      StepKind k = g.kind(*d);
      bool local_work = k == StepKind::Copy || k == StepKind::Reduce || k == StepKind::Compute;
      bool incoming = k == StepKind::Recv && !g.local(*d) && (x & kTaken);
      if (!(local_work || incoming) || !deps_soon(*d, depth - 1)) return false;
    }
    return true;
  }

  // Takes every choreographic message that has come, source by source (a source's messages come
  // in the order they were sent, so once this run's count from a source is reached the rest are
  // the next run's and stay queued in MPI). True when it took one; `expecting`: some are due.
  bool take_messages(bool& expecting) {
    bool took = false;
    for (size_t i = 0; i < srcs.size(); ++i) {
      while (taken[i] < from_src[i].size()) {
        expecting = true;
        int flag = 0;
        MPI_Message msg;
        MPI_Status status;
        // Look first: a message whose receive will start after local work only (a reduction of
        // data already here, say) is left in MPI's queue until then, and lands in place.
        // (Only while some receive from this source has not started: else no message waits.)
        if (unissued[i] > 0) {
          if (!check_rc(MPI_Iprobe(static_cast<int>(srcs[i]), MPI_ANY_TAG, choreo, &flag, &status), "MPI_Iprobe", kNoStep)) return false;
          if (!flag) break;
        }
        if (unissued[i] > 0 && static_cast<size_t>(status.MPI_TAG) < from_src[i].size()) {
          StepId s = from_src[i][static_cast<size_t>(status.MPI_TAG)];
          if (!(st[s] & kIssued) && !(g.flags(s) & kFlagReduce) && deps_soon(s, 4)) break;
        }
        if (!check_rc(MPI_Improbe(static_cast<int>(srcs[i]), MPI_ANY_TAG, choreo, &flag, &msg, &status), "MPI_Improbe", kNoStep)) return false;
        if (!flag) break;
        auto seq = static_cast<size_t>(status.MPI_TAG);
        if (seq >= from_src[i].size()) {
          error = "a choreographic message from rank " + std::to_string(srcs[i]) + " with tag " + std::to_string(seq) + " has no receive";
          return false;
        }
        StepId s = from_src[i][seq];
        ++taken[i];
        st[s] |= kTaken;
        Range r = g.range(s);
        bool straight = (st[s] & kIssued) && !(g.flags(s) & kFlagReduce);
        direct[s] = straight;
        MPI_Request q;
        if (!check_rc(MPI_Imrecv(straight ? mpi_ptr(r) : mpi_stage(s), count_of(bytes(r), error), MPI_BYTE, &msg, &q), "MPI_Imrecv", s))
          return false;
        track(q, s, Req::ChoreoData);
        took = true;
      }
    }
    return took;
  }

  // A stall report's line for a step it waits on, with the step's source line.
  std::string waits_on(StepId s) const {
    std::string out = "\n  waits on " + describe(s), line = source_line(s);
    return line.empty() ? out : out + "\n      " + line;
  }

  std::string stall_report(double waited) const {
    std::string out = "rank " + std::to_string(me) + ": no progress for " + std::to_string(static_cast<int>(waited)) + " s; " +
                      std::to_string(completed) + " of " + std::to_string(g.size()) + " steps done";
    // What it waits on: the steps started and not finished, in program order (at most 4), or
    // else the first step not started.
    int shown = 0;
    for (StepId s = 0; s < g.size() && shown < 4; ++s) {
      if ((st[s] & kIssued) && !(st[s] & kCompleted)) {
        out += waits_on(s);
        ++shown;
      }
    }
    for (size_t i = 0; i < gated.size() && shown < 4; ++i, ++shown)
      out += "\n  waits for the device's work before it starts " + describe(gated[i].s);
    for (StepId s = 0; s < g.size() && shown < 4; ++s)
      if (st[s] & kDeferred) {
        out += "\n  holds back " + describe(s) + " until " + describe(coll_prev[s]) +
               " starts (collectives on one communicator start in program order)";
        ++shown;
      }
    if (shown == 0)
      for (StepId s = 0; s < g.size(); ++s)
        if (!(st[s] & kIssued)) {
          out += "\n  next step " + describe(s) + " is not ready";
          break;
        }
    return out;
  }

  // ---- the stream-ordered transport (ExecOptions::stream) ----
  // Issues every step once, level by level: group L's transfers on lane 1 (after the local work
  // they depend on), then the local work of level L on lane 0 (after the newest group it needs).
  // Nothing waits on the host but the stand-in transport's groups and the final drain.
  RunResult run_streamed() {
    RunResult res;
    auto t0 = Clock::now();
    const StreamOrder& so = *o.order;
    std::vector<int> group_mark(so.groups + 1, -1), step_mark(g.size(), -1);
    uint32_t waited_group = 0;  // lane 0 has waited for the groups up to this one
    cur_lane = -1;
    std::string why;
    auto fail = [&](StepId s, const std::string& what) {
      if (error.empty()) error = what + (s == kNoStep ? std::string() : " (" + describe(s) + ")");
    };
    lanes = true;
    lane_values.clear();
    for (uint32_t lv = 0; lv <= so.groups && error.empty(); ++lv) {
      const std::vector<StepId>& xs = level_xfer[lv];
      if (!xs.empty()) {
        if (!to_lane(1)) break;
        int need = -1;  // lane 0's marks grow in issue order: the newest one covers the rest
        for (StepId s : xs)
          for (const uint32_t* d = g.deps_begin(s); d != g.deps_end(s); ++d)
            if (!stream_transfer(g.kind(*d))) need = std::max(need, step_mark[*d]);
        if (need >= 0 && !dev_ok(dev->wait_mark(need, why), "a device wait", nullptr, why)) break;
        // An in-place all-to-all reads a copy of its input (staging on the device).
        for (StepId s : xs)
          if (g.kind(s) == StepKind::Collective && g.coll(s).kind == CollKind::Alltoall && g.coll(s).into.cnt == 0) {
            Range r = g.range(s);
            dev_ok(dev->copy(dstage + stage_off[s], dptr(r), bytes(r), why), "a device copy", &r, why);
          }
        if (!error.empty()) break;
        if (!o.stream->group_start(why)) {
          fail(xs.front(), o.stream->name() + ": " + why);
          break;
        }
        // A group once started is always ended, also after a failed issue, so that NCCL's group
        // state is left clean (the run stops with the error either way).
        for (StepId s : xs)
          if (error.empty() && !stream_issue(s, so.bytes[s], why)) fail(s, o.stream->name() + ": " + why);
        std::string why_end;
        if (!error.empty()) {
          o.stream->group_end(o.timeout_s, why_end);
          break;
        }
        if (!o.stream->group_end(o.timeout_s, why)) {
          res.stalled = why.find("did not complete") != std::string::npos;
          fail(kNoStep, o.stream->name() + ": " + why);
          res.report = stream_report(lv, why);
          break;
        }
        // Reducing receives landed in device staging: reduced into place on lane 1.
        for (StepId s : xs)
          if (g.kind(s) == StepKind::Recv && (g.flags(s) & kFlagReduce)) {
            Range r = g.range(s);
            reduce_range(r, flag_op(g.flags(s)), dptr(r), dstage + stage_off[s], so.bytes[s] / dtype_size(dtype(r)));
          }
        if (!dev_ok(dev->mark(group_mark[lv], why), "a device mark", nullptr, why)) break;
      }
      for (StepId s : level_local[lv]) {
        if (!error.empty()) break;
        // Its level is the newest group it needs (the transfers it waits for, those its local
        // dependencies needed, and what an isend or irecv it follows waited for: stream_order.hpp);
        // always one of this rank's groups.
        const uint32_t need = so.level[s];
        if (g.kind(s) == StepKind::Wait && need <= waited_group && !needs_mark[s]) continue;  // nothing to wait for
        if (!to_lane(0)) break;
        if (need > waited_group) {
          if (!dev_ok(dev->wait_mark(group_mark[need], why), "a device wait", nullptr, why)) break;
          waited_group = need;
        }
        local_work(s);
        if (needs_mark[s] && !dev_ok(dev->mark(step_mark[s], why), "a device mark", nullptr, why)) break;
      }
    }
    // The drain: both lanes done (at most the timeout), then back to synchronous calls.
    if (error.empty() && !dev->select_lane(-1, o.timeout_s, why)) {
      res.stalled = true;
      error = why;
      uint32_t first = 1;
      while (first <= so.groups && (group_mark[first] < 0 || dev->mark_reached(group_mark[first]))) ++first;
      res.report = stream_report(std::min(first, so.groups), why);
    } else if (!error.empty()) {
      dev->select_lane(-1, 1, why);
    }
    lanes = false;
    cur_lane = -1;
    res.completed = error.empty();
    res.error = error;
    // The host only enqueued the compute: its time is on the device lanes, which the host does
    // not see, so none is reported (and exec prints no overlap figure for this transport).
    res.compute_s = 0;
    res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }

  // One transfer or collective of the open group.
  bool stream_issue(StepId s, uint64_t msg_bytes, std::string& why) {
    Range r = g.range(s);
    switch (g.kind(s)) {
      case StepKind::Send: return o.stream->send(dptr(r), msg_bytes, g.peer(s), why);
      case StepKind::Recv:
        return o.stream->recv((g.flags(s) & kFlagReduce) ? dstage + stage_off[s] : dptr(r), msg_bytes, g.peer(s), why);
      case StepKind::Collective: {
        const CollInfo& c = g.coll(s);
        const GroupInfo& gr = g.groups[c.group];
        StreamComm::Coll x;
        x.kind = c.kind, x.op = c.op, x.type = dtype(r), x.comm = stream_group[c.group];
        x.root = static_cast<int>(std::max<int64_t>(0, gr.index_of(c.root)));
        x.index = static_cast<int>(gr.index_of(me)), x.members = static_cast<int>(gr.count);
        x.p = dptr(r);
        x.count = elems(r);
        bool blocks = c.kind == CollKind::Allgather || c.kind == CollKind::ReduceScatter || c.kind == CollKind::Alltoall;
        if (blocks) x.count /= gr.count;
        if (c.kind == CollKind::Alltoall) {
          x.in = c.into.cnt ? dptr(r) : dstage + stage_off[s];
          x.p = c.into.cnt ? dptr(c.into) : dptr(r);
        }
        return o.stream->collective(x, why);
      }
      default: return why = "not a transfer", false;
    }
  }

  // What a stalled streamed run waits on: the group that did not complete, with its steps.
  std::string stream_report(uint32_t lv, const std::string& why) const {
    std::string out = "rank " + std::to_string(me) + ": " + why + "; it waits in transfer group " + std::to_string(lv) + " of " +
                      std::to_string(o.order->groups);
    int shown = 0;
    if (lv < level_xfer.size())
      for (StepId s : level_xfer[lv]) {
        if (shown++ == 4) break;
        out += waits_on(s);
      }
    return out;
  }

  RunResult run(bool compute, bool values) {
    do_compute = compute;
    write_values = values;
    if (o.stream) {
      error.clear();
      compute_s = 0;
      return run_streamed();
    }
    RunResult res;
    auto t0 = Clock::now();
    size_t n = g.size();
    pending.assign(n, 0);
    st.assign(n, 0);
    ready.clear();
    reqs.clear();
    req_step.clear();
    req_kind.clear();
    waits.clear();
    completed = 0;
    compute_s = 0;
    error.clear();
    direct.assign(n, 0);
    taken.assign(srcs.size(), 0);
    unissued.resize(srcs.size());
    for (size_t i = 0; i < srcs.size(); ++i) unissued[i] = static_cast<uint32_t>(from_src[i].size());
    flow_lanes = lanes = dev && o.lanes;
    if (flow_lanes) {
      cur_lane = -1;
      lane0_waited = -1;
      for (std::deque<int>& q : unseen) q.clear();
      dm.assign(n, {-1, -1});
      passed.assign(n, 0);
      gated.clear();
      lane_values.clear();
      to_lane(0);
    }
    for (StepId s = 0; s < n; ++s) {
      pending[s] = g.dep_count(s);
      // Not after a failed start (a refused lane): nothing may be left posted into the staging.
      if (!probe && error.empty() && g.kind(s) == StepKind::Recv && !g.local(s)) {
        Range r = g.range(s);
        MPI_Request q;
        if (!check_rc(MPI_Irecv(mpi_stage(s), count_of(bytes(r), error), MPI_BYTE, static_cast<int>(g.peer(s)), tag[s], choreo, &q),
                      "MPI_Irecv", s))
          break;
        track(q, s, Req::ChoreoData);
      }
    }
    for (StepId s = 0; s < n; ++s)
      if (pending[s] == 0) ready.push_back(s);
    auto last = Clock::now();
    std::vector<int> idx;
    std::vector<MPI_Status> stats;
    uint64_t idle = 0;
    while (error.empty()) {
      // Issuing is progress: a long synchronous compute must not count as waiting.
      if (!ready.empty()) {
        while (!ready.empty() && error.empty()) {
          StepId s = ready.front();
          ready.pop_front();
          issue(s);
        }
        last = Clock::now();
      }
      if (!error.empty() || completed == n) break;
      if (flow_lanes && !gated.empty()) {
        if (open_gates()) {
          last = Clock::now();
          continue;
        }
        if (!error.empty()) break;
      }
      bool expecting = false;
      if (probe && take_messages(expecting)) {
        last = Clock::now();
        continue;
      }
      if (!error.empty()) break;
      if (reqs.empty() && !expecting && gated.empty()) {
        error = "nothing can run and nothing is in flight: the schedule is stuck";
        res.report = stall_report(0);
        break;
      }
      int outcount = 0;
      if (reqs.empty()) outcount = MPI_UNDEFINED;  // waiting only for messages to probe
      idx.resize(reqs.size());
      stats.resize(reqs.size());
      int rc = reqs.empty() ? MPI_SUCCESS : MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &outcount, idx.data(), stats.data());
      if (rc != MPI_SUCCESS) {
        for (int k = 0; k < static_cast<int>(reqs.size()) && error.empty(); ++k)
          if (stats[static_cast<size_t>(k)].MPI_ERROR != MPI_SUCCESS && stats[static_cast<size_t>(k)].MPI_ERROR != MPI_ERR_PENDING)
            check_rc(stats[static_cast<size_t>(k)].MPI_ERROR, "an MPI operation", req_step[static_cast<size_t>(k)]);
        if (error.empty()) check_rc(rc, "MPI_Testsome", kNoStep);
        break;
      }
      if (outcount == MPI_UNDEFINED || outcount == 0) {
        // Nothing finished: poll again. No sched_yield of our own: with more processes than
        // cores Open MPI's progress engine yields already, and a second yield per poll made
        // small messages 1.4x slower (measured, 4 processes on 2 cores).
        if ((++idle & 1023) == 0) {
          if (flow_lanes && device_moved()) last = Clock::now();
          double waited = std::chrono::duration<double>(Clock::now() - last).count();
          if (o.timeout_s > 0 && waited > o.timeout_s) {
            res.stalled = true;
            res.report = stall_report(waited);
            break;
          }
        }
        continue;
      }
      last = Clock::now();
      // Handle completions, then drop the finished requests (indices from high to low).
      std::vector<int> done(idx.begin(), idx.begin() + outcount);
      std::sort(done.begin(), done.end());
      std::vector<std::pair<StepId, Req>> finished;
      for (int k : done) finished.emplace_back(req_step[static_cast<size_t>(k)], req_kind[static_cast<size_t>(k)]);
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        auto k = static_cast<size_t>(*it);
        reqs[k] = reqs.back();
        reqs.pop_back();
        req_step[k] = req_step.back();
        req_step.pop_back();
        req_kind[k] = req_kind.back();
        req_kind.pop_back();
      }
      for (auto& [s, kind] : finished) on_request_done(s, kind);
    }
    if (flow_lanes) {
      // The drain: both lanes done (at most the timeout; after a failure, briefly), then back to
      // synchronous calls.
      std::string why;
      bool fine = error.empty() && !res.stalled;
      if (!dev->select_lane(-1, fine ? o.timeout_s : 1, why) && fine) {
        error = "the device's work did not finish: " + why;
        res.report = "rank " + std::to_string(me) + ": " + error;
      }
      flow_lanes = lanes = false;
      cur_lane = -1;
      // The host only enqueued the compute: its time is on the device, which the host does not
      // see, so none is reported (and exec prints no overlap figure; --device-sync does).
      compute_s = 0;
    }
    res.completed = error.empty() && !res.stalled && completed == n;
    res.error = error;
    res.compute_s = compute_s;
    res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }
};

Executor::Executor(const StepGraph& g, const SourceManager& sources, MPI_Comm world, const ExecOptions& o)
    : impl_(new Impl(g, sources, world, o)) {}
Executor::~Executor() { delete impl_; }
bool Executor::setup(std::string& err) {
  bool ok = impl_->setup(err);
  op_ = impl_->op;
  return ok;
}
bool Executor::fill_inputs(std::string& err) {
  bool ok = impl_->fill_inputs();
  if (!ok) err = impl_->dev_error;
  return ok;
}
RunResult Executor::run(bool compute, bool values) { return impl_->run(compute, values); }
CheckResult Executor::check() const {
  impl_->down_all();  // device mode: the check reads the host mirrors
  CheckResult r = impl_->check();
  r.error = impl_->dev_error;
  return r;
}
bool Executor::has_attention() const { return impl_->att.active; }
const AttentionLayout& Executor::attention_layout() const { return impl_->att; }
AttentionCheck Executor::check_attention() const {
  impl_->down_all();  // device mode: the outputs are read from the host mirrors
  return sg::exec::check_attention(impl_->att, impl_->attention_outputs(), impl_->world);
}
const unsigned char* Executor::data(const Range& r) const { return impl_->ptr(r); }

}  // namespace sg::exec
