// The step graph: one concrete instance of a schedule (N ranks, parameters fixed).
//
// Layout: struct-of-arrays indexed by StepId, in emission (textual) order, so a rank's program
// is the subsequence of its steps. Per step: kind, flags, rank, statement, one primary chunk
// range and one kind-dependent reference `ref`. Dependencies are CSR. About 26 bytes per step
// plus 4 per dependency: ring all-reduce at N = 4096 (67 M steps) fits in about 2 GB.
//
// What `ref(s)` holds, by kind and flags (use the typed accessors beside it where there is one):
//
//   | step                                   | ref(s)                                  | read it with        |
//   |----------------------------------------|-----------------------------------------|---------------------|
//   | send / recv, choreographic, whole graph| the matched step (the other end)        | match(s), peer(s)   |
//   | send / recv, choreographic, only_rank  | the peer rank (the other end is absent) | peer(s)             |
//   | send / recv with kFlagLocal (`on` MPI) | an index into p2p (peer, tag, comm, …)  | p2p_info(s)         |
//   | copy / reduce                          | an index into ranges: the source range  | copy_source(s)      |
//   | compute                                | an index into computes                  | compute(s)          |
//   | collective                             | an index into colls                     | coll(s)             |
//   | wait                                   | an offset into wait_handles: [ref] is   | handles_begin/end   |
//   |                                        | the count, the handle steps follow      |                     |
//
// The per-step arrays are private: elaboration, the passes and the expansion write them through
// the building section below (add_step, add_dep, finish_step, set_ref, edit_deps), which keeps
// the cached successor view honest.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/kinds.hpp"
#include "core/base/loc.hpp"

namespace sg {

struct RankShift;
struct RankSymmetry;

using StepId = uint32_t;
constexpr StepId kNoStep = 0xffffffffu;
constexpr uint32_t kAnyRank = 0xffffffffu;
constexpr int32_t kAnyTag = -1;

// Step flags (8 bits; the reduction op lives in the top two).
enum : uint8_t {
  kFlagLocal = 1,        // from an `on` block: MPI program order applies
  kFlagNonblocking = 2,  // isend / irecv: completes at its wait
  kFlagReduce = 4,       // a receive that reduces into its destination
  kFlagAnySource = 8,
  kFlagAnyTag = 16,
  kFlagWide = 32,  // the primary range did not fit the packed form (see range())
};
inline ReduceOp flag_op(uint8_t f) { return static_cast<ReduceOp>(f >> 6); }
inline uint8_t op_flag(ReduceOp op) { return static_cast<uint8_t>(static_cast<uint8_t>(op) << 6); }

// A contiguous range of one buffer's flattened chunks.
struct Range {
  uint32_t buf = 0;
  uint32_t lo = 0;
  uint32_t cnt = 0;
  bool operator==(const Range&) const = default;
};

struct BufferInfo {
  std::string name;
  std::vector<uint32_t> dims;
  uint32_t chunks = 0;  // product of dims
  uint64_t chunk_bytes = 0;
  uint64_t chunk_elems = 0;  // chunk_bytes / dtype size (rounded down)
  DType dtype = DType::F32;
  bool accumulator = false;  // written by attn/attn_bwd: never-written chunks are empty, not undefined
  Loc loc;
  uint32_t stmt = 0;  // the declaring statement
  // What the declaration said beyond the byte count: its `shape [s0, s1, …]` extents (empty for
  // `bytes E`) and whether it named a dtype (else dtype is the default f32), with where they
  // were written. Exec lays attention tiles out from them (exec/attention/attention_exec.hpp).
  std::vector<uint64_t> shape{};
  // `layout LETTERS` after the shape: one letter an extent, b(atch) s(equence rows) h(eads)
  // d(im) and 2 (K/V), d last; empty when none was written (elaborate checks the letters,
  // exec what they mean for the buffer's role).
  std::string layout{};
  bool dtype_declared = false;
  Loc shape_loc{}, dtype_loc{}, layout_loc{};
};

// A group of ranks: start + k*stride for k < count.
struct GroupInfo {
  uint32_t start = 0, count = 0, stride = 1;
  uint32_t member(uint32_t k) const { return start + k * stride; }
  // Index of rank r in the group, or -1.
  int64_t index_of(uint32_t r) const {
    if (r < start || (r - start) % stride) return -1;
    uint64_t k = (r - start) / stride;
    return k < count ? static_cast<int64_t>(k) : -1;
  }
  bool operator==(const GroupInfo&) const = default;
};

// Local-view point-to-point (ref of a kFlagLocal send/recv).
struct P2PInfo {
  uint32_t peer = 0;                    // destination of a send, source of a receive, or kAnyRank
  int32_t tag = 0;                      // or kAnyTag
  uint32_t comm = 0;                    // group id: the communicator
  StepId match = kNoStep;               // the matched step when matching is deterministic (match pass)
  uint32_t cand_off = 0, cand_cnt = 0;  // candidate sends of a wildcard receive (match pass)
};

struct CollInfo {
  CollKind kind = CollKind::Barrier;
  ReduceOp op = ReduceOp::Sum;
  uint32_t root = 0;  // global rank (bcast, reduce)
  uint32_t group = 0;
  uint32_t seq = 0;       // this member's k-th collective on the group
  uint32_t instance = 0;  // filled by the collectives pass
  Range into;             // alltoall … into …; cnt 0 when in place
};

struct ComputeInfo {
  ComputeKind kind = ComputeKind::Generic;
  Mask mask = Mask::None;
  uint32_t name = 0;  // index into StepGraph::names
  double flops = 0;
  uint32_t reads_off = 0, reads_cnt = 0;    // into StepGraph::ranges
  uint32_t writes_off = 0, writes_cnt = 0;  // into StepGraph::ranges
  // attn / attn_bwd with K and V as two operands (`attn(Q[i], K[j], V[j])`): reads are Q, K, the
  // accumulators, then V last; attn_bwd writes dQ, dK, then dV. Without: Q, KV, the
  // accumulators; dQ, dKV. (Q and K(V) keep their places, so code that reads them needs no case.)
  bool split_kv = false;
};

// A collective instance: the member steps of one collective, in group member order.
struct Instance {
  uint32_t group = 0;
  uint32_t seq = 0;
  uint32_t steps_off = 0, steps_cnt = 0;  // into StepGraph::instance_steps
  bool complete = true;                   // every member issued it
  bool consistent = true;                 // kind, root, op and size agree
};

struct InitRule {
  InitKind kind = InitKind::Contrib;
  Range range;               // chunks covered
  uint32_t rank = kAnyRank;  // OnRank: the rank
  uint32_t group = 0;        // Contrib / Owned: the members
  uint32_t item_base = 0;    // Owned: item of the range's first chunk for member 0 (= range.lo)
  uint32_t stmt = 0;
};

// A wait naming a handle that is unknown or already completed (kept when elaborating for verify).
struct BadWait {
  StepId wait = kNoStep;
  uint32_t rank = 0;
  Loc loc;  // the handle's name in the wait statement
  std::string message;
};

// A step that never becomes ready: it waits for an event the program never produces. MSCCL's
// thread blocks wait on each other's progress flags, and RCCL's kernel posts a block's flag only
// after steps with hasdep="1" (docs/msccl.md, "Progress flags"): a step that waits for a flag no
// step of the other block ever raises far enough spins for ever. Every engine (the interpreter,
// so check and the explicit verifier; both simulators; the executor) counts it as one dependency
// more that is never satisfied, so the run is stuck at it, as the GPU would be.
struct NeverReady {
  StepId step = kNoStep;
  Loc cause;        // the step it waits on (the depended-on MSCCL step)
  std::string why;  // what it waits for and why nothing gives it, for stuck reports
};

struct Expectation {
  ExpectKind kind = ExpectKind::Nothing;
  std::vector<Range> bufs;
  uint32_t root = 0;
  uint32_t group = 0;
  Mask mask = Mask::None;
  uint32_t heads = 1;  // attention: head groups; item x is block x / heads, head x % heads
  uint32_t stmt = 0;
  // attention(Q, K, V, O) / attention_backward(Q, K, V, dQ, dK, dV): bufs are Q, K, O (dQ, dK) as
  // for one KV buffer, and V (dV) are here.
  bool split_kv = false;
  Range v{}, dv{};
};

// What a GPU runtime's protocol adds to the messages of one collective call, beyond the
// platform's links (NCCL's cost model, taken apart: core/graph/nccl_tuning.hpp; docs/sim.md,
// "NCCL's costs in simulated time"). The expansion attaches one to the sends of an algorithm
// NCCL's tuning model picked; both simulators apply it.
struct CallCost {
  double base_s = 0;       // once per call: each rank's first messages of the call start this late
  double hop_intra_s = 0;  // a message inside a node takes at least this long to start arriving
  double hop_inter_s = 0;  // the same across nodes
  double channel_Bps = 0;  // a message streams at most this fast (a channel's share of the bus bandwidth); 0: no cap
  // Messages of the call in flight from one rank to another at most (NCCL's channels: each
  // moves its chunks one after another); a send beyond it waits for an earlier one to arrive.
  // 0: no bound.
  uint32_t window = 0;
  // Bytes on the GPUs' links per payload byte (channel_Bps counts wire bytes too): 1, or less
  // where a switch does part of the work (NVLS: the NVSwitch adds and copies, so a GPU's NVLink
  // carries (N+1)/N of the vector each way where the schedule written between GPUs moves 2(N-1)/N).
  double wire = 1;
  bool operator==(const CallCost&) const = default;
};

class StepGraph;
// Whether MPI could let `recv` take the message of `send` (both local-view point-to-point steps):
// same destination and communicator, a matching source and tag (or wildcards).
bool p2p_compatible(const StepGraph& g, StepId recv, StepId send);

// The chunks one member of a collective reads (write = false) or writes (write = true).
void collective_access(const CollInfo& c, const GroupInfo& g, uint32_t rank, const Range& r, bool write, std::vector<Range>& out);

class StepGraph {
 public:
  // ---- instance ----
  std::string schedule;
  std::string file;
  uint32_t nranks = 0;
  int64_t only_rank = -1;  // >= 0: this graph holds one rank's program only (refs hold peer ranks)
  // Non-empty: this graph holds these ranks' programs only (ElabOptions::only_ranks, a symmetry's
  // representatives); messages and collectives with other ranks are unmatched or partial.
  std::vector<uint32_t> built_ranks;
  bool partial() const { return only_rank >= 0 || !built_ranks.empty(); }
  std::vector<std::pair<std::string, int64_t>> params;
  bool p2p_matched = false;  // the match pass has run
  // Made by expand_collectives from a graph as written: its declarations were checked there (the
  // `unused` pass does not warn twice, nor about buffers only the replaced collectives touched).
  bool expansion = false;
  // Proves a shift of the ranks from the schedule's text, given the shifts of a group already
  // proved so ("" when it holds, else why not: core/graph/shift_proof.hpp): set by the pipeline
  // for a schedule's graph as elaborated and passed, with the session's program behind it (use
  // it while that session lives); empty where there is no such proof (an expansion, an MSCCL
  // program, a graph built by hand).
  std::function<std::string(const RankSymmetry& group, const RankShift& shift)> prove_shift;

  // ---- side tables ----
  std::vector<BufferInfo> buffers;
  std::vector<GroupInfo> groups;
  std::vector<P2PInfo> p2p;
  std::vector<CollInfo> colls;
  std::vector<ComputeInfo> computes;
  std::vector<Range> ranges;  // copy sources, compute reads/writes
  std::vector<Range> wide_ranges;
  std::vector<StepId> wait_handles;  // CSR through ref: [off] = count, then the handle steps
  std::vector<StepId> candidates;    // wildcard receive candidates (P2PInfo::cand_off)
  std::vector<std::string> names;    // kernel names
  std::vector<Instance> instances;
  std::vector<StepId> instance_steps;
  std::vector<InitRule> inits;
  std::vector<Expectation> expects;
  std::vector<BadWait> bad_waits;
  std::vector<NeverReady> never_ready;  // sorted by step
  std::vector<Loc> stmt_locs;           // the session's statement table (source location of each statement)
  // What a front end calls a statement where its source line is not enough (an MSCCL step:
  // "gpu 1 tb 4 step 2 (rcs)"); empty, or one per statement. Printed with the step.
  std::vector<std::string> stmt_labels;
  // The dependencies are the program's own, not hazards the elaborator added (MSCCL's thread
  // blocks run concurrently, ordered only by their dependencies): two accesses to a chunk with
  // no dependency path between them, one of them a write, are a race (verify/static_checks).
  bool unordered_hazards = false;
  // Messages a connection holds before its sender blocks, for the bounded send semantics (MSCCL:
  // NCCL_STEPS = 8 slots; 2 Simple pieces, 8 LL/LL128 ones); 0 when the program does not say.
  uint32_t connection_slots = 0;
  // Bytes on the wire per payload byte, and why (MSCCL's LL: 2, a flag beside every 8 data bytes;
  // LL128: 16/15, a flag word in every 128-byte line): the simulator moves that many more.
  double wire_factor = 1.0;
  std::string wire_why;
  // Seconds every message waits before its data moves, beyond the platform's latency (MSCCL's
  // Simple and LL128: their handshake against LL's, from NCCL's tuning tables).
  double message_latency = 0;
  // The sizes a runtime picks this program for (MSCCL's minBytes / maxBytes, max 0: no bound);
  // -1 when the program does not say. sim prints the window beside its times.
  int64_t window_min = -1, window_max = -1;
  // Per-call protocol costs (CallCost) and, per step, which one its message pays (call_cost()).
  std::vector<CallCost> call_costs;

  // ---- access ----
  size_t size() const { return kind_.size(); }
  // The entry of a step that never becomes ready, or null (most graphs have none).
  const NeverReady* never_ready_entry(StepId s) const;
  bool never_ready_step(StepId s) const { return !never_ready.empty() && never_ready_entry(s) != nullptr; }
  StepKind kind(StepId s) const { return static_cast<StepKind>(kind_[s]); }
  uint8_t flags(StepId s) const { return flags_[s]; }
  bool local(StepId s) const { return flags_[s] & kFlagLocal; }
  // The protocol costs the message of send `s` pays, or null; `entry`: it is one of its rank's
  // first messages of the call (it pays the call's base latency).
  const CallCost* call_cost(StepId s, bool& entry) const {
    if (s >= step_call_.size() || step_call_[s] == 0) return nullptr;
    entry = step_call_[s] & kCallEntry;
    return &call_costs[(step_call_[s] & ~kCallEntry) - 1];
  }
  // Building: send `s` pays call_costs[cost] (entry: as one of its rank's first messages).
  void set_call_cost(StepId s, uint32_t cost, bool entry) {
    if (step_call_.size() <= s) step_call_.resize(size(), 0);
    step_call_[s] = (cost + 1) | (entry ? kCallEntry : 0);
  }
  // The whole graph is one call of cost `c` (a library NCCL schedule run by name): every send
  // pays it, those that wait for nothing as the call's first messages.
  void set_call_cost_everywhere(const CallCost& c) {
    call_costs.push_back(c);
    auto idx = static_cast<uint32_t>(call_costs.size() - 1);
    for (StepId s = 0; s < size(); ++s)
      if (kind(s) == StepKind::Send) set_call_cost(s, idx, dep_count(s) == 0);
  }
  bool nonblocking(StepId s) const { return flags_[s] & kFlagNonblocking; }
  uint32_t rank(StepId s) const { return rank_[s]; }
  uint32_t stmt(StepId s) const { return wide_stmts_ ? stmt32_[s] : stmt16_[s]; }
  Loc loc(StepId s) const { return stmt(s) < stmt_locs.size() ? stmt_locs[stmt(s)] : Loc{}; }
  // The kind-dependent reference: see the table at the top of this file.
  uint32_t ref(StepId s) const { return ref_[s]; }
  Range range(StepId s) const {
    uint32_t p = range_[s];
    if (flags_[s] & kFlagWide) return wide_ranges[p];
    return Range{p >> 28, p & 0x3ffffu, (p >> 18) & 0x3ffu};
  }
  // The steps s depends on (all earlier, of the same rank), sorted.
  std::span<const StepId> deps(StepId s) const { return {deps_.data() + dep_off_[s], deps_.data() + dep_off_[s + 1]}; }
  uint32_t dep_count(StepId s) const { return dep_off_[s + 1] - dep_off_[s]; }
  // What a step waits for before it can start, as every engine counts it: its dependencies, and
  // for a step that never becomes ready (never_ready) one more that nothing satisfies.
  uint32_t start_count(StepId s) const { return dep_count(s) + (never_ready_step(s) ? 1 : 0); }
  size_t dep_total() const { return deps_.size(); }

  // The steps that depend on s: the reverse of deps(), in step order. Built on first use and
  // kept until the dependencies change (interpreter, simulators and executor share it). The
  // first call is not thread-safe: make it before handing the graph to threads.
  std::span<const StepId> successors(StepId s) const {
    const Successors& v = successor_view();
    return {v.succ.data() + v.off[s], v.succ.data() + v.off[s + 1]};
  }
  struct Successors {
    std::vector<uint32_t> off;  // size() + 1
    std::vector<StepId> succ;
  };
  const Successors& successor_view() const;

  // The peer of a send or receive (kAnyRank for a wildcard receive).
  uint32_t peer(StepId s) const;
  // The matched step of a send or receive, or kNoStep (unmatched, wildcard, or one-rank graph).
  StepId match(StepId s) const;
  const CollInfo& coll(StepId s) const { return colls[ref_[s]]; }
  const ComputeInfo& compute(StepId s) const { return computes[ref_[s]]; }
  const P2PInfo& p2p_info(StepId s) const { return p2p[ref_[s]]; }
  Range copy_source(StepId s) const { return ranges[ref_[s]]; }
  // Handles completed by a wait step.
  const StepId* handles_begin(StepId s) const { return wait_handles.data() + ref_[s] + 1; }
  const StepId* handles_end(StepId s) const { return handles_begin(s) + wait_handles[ref_[s]]; }

  // Every chunk range a step reads / writes (for hazards, races and the interpreter).
  // A collective reads and writes according to its kind and the rank's place in the group.
  void reads(StepId s, std::vector<Range>& out) const;
  void writes(StepId s, std::vector<Range>& out) const;

  uint64_t range_bytes(const Range& r) const { return uint64_t{r.cnt} * buffers[r.buf].chunk_bytes; }
  std::string chunk_name(uint32_t buf, uint32_t chunk) const;  // "data[3]" / "m[1, 2]"
  std::string range_name(const Range& r) const;                // "data[3]" / "data[0 .. 4]"

  // Steps of each rank in program order (CSR); built on demand.
  struct RankIndex {
    std::vector<uint64_t> off;  // nranks + 1
    std::vector<StepId> steps;
  };
  RankIndex rank_index() const;

  // ---- building (the only writers of the per-step arrays) ----
  StepId add_step(StepKind k, uint8_t flags, uint32_t rank, uint32_t stmt, const Range& r, uint32_t ref);
  void set_range(StepId s, const Range& r);
  // The expansion renumbers steps: a choreographic end's ref is set once its partner has an id.
  void set_ref(StepId s, uint32_t ref) { ref_[s] = ref; }
  // Dependencies are appended for the most recently added step only.
  void add_dep(StepId on) { deps_.push_back(on); }
  void finish_step() {
    dep_off_.push_back(static_cast<uint32_t>(deps_.size()));
    succ_.reset();
  }
  // Rewrites every step's dependency list in step order, in place: edit(s, list) gets a copy of
  // s's list to shrink (only removals: the storage is compacted as it goes). While it runs,
  // deps(t) of an earlier step t already returns t's rewritten list.
  template <class Edit>
  void edit_deps(Edit&& edit) {
    std::vector<StepId> list;
    uint32_t out = 0;
    for (StepId s = 0; s < size(); ++s) {
      list.assign(deps_.begin() + dep_off_[s], deps_.begin() + dep_off_[s + 1]);
      dep_off_[s] = out;  // s's list is read from `list` now; earlier lists end at `out`
      edit(s, list);
      for (StepId d : list) deps_[out++] = d;
    }
    dep_off_[size()] = out;
    deps_.resize(out);
    succ_.reset();
  }
  uint32_t intern_group(const GroupInfo& g);
  uint32_t intern_name(const std::string& n);
  void reserve(size_t steps, size_t deps);
  // Gives back the spare capacity of the dependency offsets (after building).
  void shrink_dep_offsets() { dep_off_.shrink_to_fit(); }
  // The invariant validate() checks first: one offset per step, plus the end.
  bool dep_offsets_cover_steps() const { return dep_off_.size() == size() + 1; }

  // Memory held by the graph, in bytes (capacity, not size).
  uint64_t memory_bytes() const;
  // The bytes per step the estimate uses (per-step arrays plus one dependency).
  static constexpr uint64_t kBytesPerStep = 1 + 1 + 4 + 2 + 4 + 4 + 4 + 4;

 private:
  static constexpr uint32_t kCallEntry = 0x80000000u;
  std::vector<uint32_t> step_call_;  // per step (empty where no call has costs): 0, or 1 + a call_costs index | kCallEntry
  std::vector<uint8_t> kind_;
  std::vector<uint8_t> flags_;
  std::vector<uint32_t> rank_;
  // A step's statement in 16 bits while every id fits (a program has fewer than 65,535
  // statements but the largest MSCCL files), else in 32 (widened once, when one does not).
  bool wide_stmts_ = false;
  std::vector<uint16_t> stmt16_;
  std::vector<uint32_t> stmt32_;
  // A step's range packed in 32 bits (buffer < 16, count < 1,024, first chunk < 2^18: a chunk
  // or a few of most schedules), else (kFlagWide) an index into wide_ranges, where each distinct
  // range is stored once (wide_index_ finds it): 4 bytes a step either way.
  std::vector<uint32_t> range_;
  struct RangeHash {
    size_t operator()(const Range& r) const {
      uint64_t h = (uint64_t{r.buf} << 52) ^ (uint64_t{r.cnt} << 32) ^ r.lo;
      return std::hash<uint64_t>{}(h * 0x9e3779b97f4a7c15ull);
    }
  };
  std::unordered_map<Range, uint32_t, RangeHash> wide_index_;
  // intern_group's index of `groups` (a job has a group per tensor-, data- and pipeline-parallel
  // slice: tens of thousands at scale), over its first group_indexed_ entries; `groups` only
  // grows, or is set whole on a new graph, so the entries past that are indexed when next asked.
  struct GroupHash {
    size_t operator()(const GroupInfo& g) const {
      uint64_t h = (uint64_t{g.start} << 40) ^ (uint64_t{g.count} << 20) ^ g.stride;
      return std::hash<uint64_t>{}(h * 0x9e3779b97f4a7c15ull);
    }
  };
  std::unordered_map<GroupInfo, uint32_t, GroupHash> group_index_;
  size_t group_indexed_ = 0;
  std::vector<uint32_t> ref_;
  std::vector<uint32_t> dep_off_ = {0};  // size steps + 1
  std::vector<uint32_t> deps_;
  // successor_view()'s cache; a copy of the graph starts without one.
  struct SuccCache : std::unique_ptr<Successors> {
    SuccCache() = default;
    SuccCache(const SuccCache&) : std::unique_ptr<Successors>() {}
    SuccCache(SuccCache&&) = default;
    SuccCache& operator=(const SuccCache&) {
      reset();
      return *this;
    }
    SuccCache& operator=(SuccCache&&) = default;
    SuccCache& operator=(std::unique_ptr<Successors>&& p) {
      std::unique_ptr<Successors>::operator=(std::move(p));
      return *this;
    }
  };
  mutable SuccCache succ_;
};

}  // namespace sg
