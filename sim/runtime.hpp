// What happens when, in a simulation: the step graph's semantics over time, shared by both
// timing engines (SimGrid and analytic). An engine times activities — transfers between ranks
// and local work on one rank — and reports when each ends; the runtime decides which steps that
// makes ready, starts them, matches messages and completes steps.
//
// Semantics (the interpreter's, with time; docs/sim.md):
// - A step is ready when its dependencies are satisfied: a dependency on a blocking step when
//   that step completes, on a nonblocking one (isend, irecv) when it starts.
// - A choreographic send starts its transfer at once and completes (its data is buffered; a call
//   with a window, CallCost::window, keeps at most that many of its messages in flight per rank
//   pair, the others start as earlier ones leave); its
//   receive was posted from the start and completes when the data has arrived and its own
//   dependencies are satisfied, after the receive's processing (reduction, LogGP overhead).
// - An MPI send (on-block) sends eagerly (transfer at once, the send completes at once) or, for
//   messages of the eager limit's size and larger, by rendezvous (the transfer starts when the
//   receive is posted; the send completes when the data has arrived), as MPI libraries do. A
//   receive is posted when it becomes ready. Receives with a fixed match (the match pass) take
//   that message; at a destination with wildcard receives matching is dynamic, MPI's: a message
//   goes to the earliest posted receive it matches, a receive takes the earliest arrived message
//   it matches, and messages of one source are matched in the order they were sent (later
//   arrivals wait). Dynamic messages always go eagerly.
// - copy / reduce / compute steps are local work; a wait completes when its handles have; a
//   collective step left unexpanded completes when every member has issued it: at no cost, or, where
//   it is costed as a whole (RuntimeOptions::collective_times), on each member that member's time
//   after the last member's entry.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg::sim {

enum class Protocol : uint8_t { Eager, Rendezvous, Auto };

// Collectives costed as wholes (sim/memo_collectives.hpp): per instance of the graph, each
// member's time from the instance's last entry to its own exit, in the order of the instance's
// steps (member order), from a table that instances of one shape share. An instance without one
// completes at its last entry, at no cost.
struct CollectiveTimes {
  static constexpr uint32_t kNone = 0xffffffffu;
  std::vector<uint32_t> table;  // per instance: its table, or kNone
  std::vector<uint32_t> off;    // per table: where its times start in `seconds`
  std::vector<double> seconds;
  bool has(uint32_t instance) const { return instance < table.size() && table[instance] != kNone; }
  double at(uint32_t instance, uint32_t k) const { return seconds[off[table[instance]] + k]; }
  uint32_t add(const std::vector<double>& times) {  // a new table; its index
    off.push_back(static_cast<uint32_t>(seconds.size()));
    seconds.insert(seconds.end(), times.begin(), times.end());
    return static_cast<uint32_t>(off.size() - 1);
  }

  // What each member moved in the run alone, for the analytic engine's shared ports (sim/analytic.cpp,
  // "Collectives on shared ports"): per table, per member, its messages to (out) or from one peer,
  // their bytes and the seconds they streamed, summed. The peer is a member's place in the
  // instance's group, or with `peers_are_ranks` (a quotient's tables, one per instance) a rank of
  // the full graph. A table without (uses_off empty or shorter) holds its members for their times.
  struct Use {
    uint32_t peer = 0;
    bool out = false;
    bool windowed = false;  // its messages took slots of the pair's window (NCCL's FIFO: shared by every call on the pair)
    bool local = false;     // the peer is on the member's node
    double bytes = 0, flow_s = 0;
  };
  std::vector<uint32_t> uses_off;  // per table: where its members' entries start in `member_uses` (members + 1 of them)
  std::vector<uint32_t> member_uses;
  std::vector<Use> uses;
  std::vector<double> span;  // per table with uses: its run alone's last exit
  bool peers_are_ranks = false;
  // Whether member k of table a's instance and member k2 of table b's load alike ports: per
  // direction, window and node boundary (which port a message takes: a GPU's NVLink or its NIC,
  // a host's link), the same bytes and seconds in all. (Per peer would refuse a tree, whose
  // members' parents and children are not each other's images, but whose members are alike.)
  bool uses_alike(uint32_t a, uint32_t k, uint32_t b, uint32_t k2) const {
    bool ua = a < uses_off.size(), ub = b < uses_off.size();
    if (!ua && !ub) return true;
    if (ua != ub) return false;
    auto sums = [&](uint32_t t, uint32_t m) {
      std::array<double, 16> x{};
      for (uint32_t u = member_uses[uses_off[t] + m]; u < member_uses[uses_off[t] + m + 1]; ++u) {
        const Use& v = uses[u];
        size_t c = (v.out ? 4u : 0u) + (v.windowed ? 2u : 0u) + (v.local ? 1u : 0u);
        x[2 * c] += v.bytes;
        x[2 * c + 1] += v.flow_s;
      }
      return x;
    };
    std::array<double, 16> x = sums(a, k), y = sums(b, k2);
    for (size_t i = 0; i < x.size(); ++i)
      if (std::abs(x[i] - y[i]) > 1e-12 * std::max(std::abs(x[i]), std::abs(y[i]))) return false;
    return true;
  }
  bool has_uses(uint32_t instance) const { return has(instance) && table[instance] < uses_off.size(); }
  // A table's uses, after add(): per member k, uses[member_uses[uses_off[t] + k] .. member_uses[uses_off[t] + k + 1]).
  void add_uses(uint32_t t, const std::vector<std::vector<Use>>& per_member, double alone_s) {
    if (uses_off.size() != t) return;  // (tables with uses come first and in order)
    uses_off.push_back(static_cast<uint32_t>(member_uses.size()));
    for (const auto& m : per_member) {
      member_uses.push_back(static_cast<uint32_t>(uses.size()));
      uses.insert(uses.end(), m.begin(), m.end());
    }
    member_uses.push_back(static_cast<uint32_t>(uses.size()));
    span.push_back(alone_s);
  }
};
const char* protocol_name(Protocol p);

struct RuntimeOptions {
  Protocol protocol = Protocol::Auto;
  uint64_t eager_limit = 65536;  // Auto: eager below this many bytes, rendezvous from it on
  // Bytes every message carries on the wire beyond its payload (an MPI header: SMPI simulates 16);
  // the protocol is still decided on the payload.
  uint64_t envelope = 0;
  // Bytes on the wire per payload byte (a protocol's flags: MSCCL's LL 2, LL128 1/0.92).
  double wire_factor = 1.0;
  // Seconds every message waits before its data moves, beyond the route's latency (a protocol's
  // handshake: MSCCL's Simple and LL128 against LL).
  double message_latency = 0;
  bool message_latency_given = false;  // --message-latency: not the program's protocol's
  double gamma = 0;                    // seconds per byte reduced (a receive with reduce, a reduce step)
  double copy_bw = 0;                  // bytes/s of a local copy (0: free)
  double recv_overhead = 0;            // receiver CPU seconds per message (LogGP o), part of receive processing
  bool record_starts = false;          // keep every step's start time, and each message's transfer (for a trace)
  // Dataflow sends without a call's own window (CallCost::window): at most this many in flight
  // per rank pair, a runtime's FIFO of that many slots (sim --window; 0: none, all at once).
  uint32_t window = 0;
  // Collective steps left unexpanded take these times (null: none, they cost nothing).
  const CollectiveTimes* collective_times = nullptr;
};

// Whether an MPI send of `bytes` goes by rendezvous. Auto: a message is eager iff bytes <
// eager_limit, SMPI's rule (smpi/send-is-detached-thresh, 65536 by default: a send of 65,536 bytes
// is not detached there); bench/sim_vs_smpi holds the boundary against SMPI.
// What a message of `payload` bytes puts on the wire.
inline uint64_t wire_bytes(const RuntimeOptions& o, uint64_t payload) {
  double w = o.wire_factor == 1.0 ? static_cast<double>(payload) : static_cast<double>(payload) * o.wire_factor + 0.5;
  return static_cast<uint64_t>(w) + o.envelope;
}

inline bool by_rendezvous(const RuntimeOptions& o, uint64_t bytes) {
  if (o.protocol == Protocol::Auto) return bytes >= o.eager_limit;
  return o.protocol == Protocol::Rendezvous;
}

enum class LocalKind : uint8_t { Compute, Receive, Copy, Reduce };

// The local work a step costs its rank, as the runtime hands it to the engine: `flops` of
// computation and `seconds` of fixed time (a copy, a reduction, a receive's processing). None for
// sends, waits and collectives. A trace draws the work where it ran: an engine may queue it.
struct LocalWork {
  double flops = 0, seconds = 0;
};
LocalWork local_work(const StepGraph& g, const RuntimeOptions& o, StepId s);

// What an engine provides: start an activity now; report its end with Runtime::arrived, sent
// and done. Every call the runtime makes while handling one report concerns the rank that report
// is about (a step's successors are on its rank; a message's arrival is its destination's
// business, the end of a rendezvous send its source's): an engine may run one actor per rank.
class Timer {
 public:
  virtual ~Timer() = default;
  // Send step `send` (on rank src) sends to rank dst. Eagerly, the data moves now; by rendezvous
  // it moves once its receive is posted too (posted(send), which may come before or after).
  // `held`: the send waited for a slot of its call's window (an earlier message of the call on
  // the same pair has gone first, so the call's base latency is behind it: it does not pay it).
  virtual void transfer(StepId send, uint32_t src, uint32_t dst, uint64_t bytes, bool rendezvous, bool held) = 0;
  // The receive matched to rendezvous send `send` has been posted (the receiver's event).
  virtual void posted(StepId send) = 0;
  // Local work of step `step` on `rank`: `flops` of computation and `seconds` of fixed time.
  virtual void local(StepId step, uint32_t rank, LocalKind kind, double flops, double seconds) = 0;
  // Step `step` on `rank` ends `seconds` from now (Runtime::done), using nothing of the rank's or
  // the network's: a collective costed as a whole.
  virtual void hold(StepId step, uint32_t rank, double seconds) = 0;
  // A collective costed as a whole whose members' messages alone are known (CollectiveTimes::
  // has_uses): its `n` member steps end their `seconds` from now, slowed where the engine shares
  // their ports with other traffic. False: the engine does not (the runtime then holds each).
  virtual bool collective(uint32_t /*instance*/, const StepId* /*steps*/, const double* /*seconds*/, uint32_t /*n*/) { return false; }
};

class Runtime {
 public:
  Runtime(const StepGraph& g, const RuntimeOptions& o, Timer& timer);

  // Starts every step ready at the beginning (of one rank, or of all when rank < 0). Times never
  // decrease from call to call.
  void start(double now, int64_t rank = -1);
  // The data of `send` reached its destination (the destination's event).
  void arrived(StepId send, double now);
  // The data of `send` has left, all of it: a rendezvous send completes (the source's event).
  void sent(StepId send, double now);
  // The local activity of `step` ended.
  void done(StepId step, double now);

  // A quotient graph's sends (core/graph/symmetry.hpp): each one's destination rank in the full
  // graph, per step. The timer is told that rank (its route), and a call's window is per source
  // and that destination; the graph's peer (its representative) receives.
  void set_destinations(const std::vector<uint32_t>* dst) { dst_ = dst; }

  bool finished() const { return completed_ == n_; }
  uint64_t completed() const { return completed_; }
  uint64_t messages() const { return messages_; }
  uint64_t bytes() const { return bytes_; }
  // When step s completed (NaN if it never did). Kept in single precision unless record_starts
  // (half the memory at scale); the run's end and each rank's are kept exactly.
  double finish(StepId s) const { return exact_ ? end_[s] : static_cast<double>(endf_[s]); }
  bool ran(StepId s) const { return st_[s] & kCompleted; }
  double end_time() const { return last_; }
  // Per rank, how long it computed (compute steps), had messages of its own in flight (sent or
  // to be received: from a send's start to its data's arrival), and either: compute and
  // communication overlapped for compute + communication - either.
  // exposed: the time data of its messages moved (sent or received: from the send's start, or
  // by rendezvous once the receive is posted too, to the arrival) while it computed nothing, by
  // the messages' statement (split equally among the statements moving at once). What is left
  // of its time beyond compute and exposed, it waited with nothing of its own moving: for other
  // ranks' work (a pipeline's bubble), a rendezvous partner, or a collective's members.
  struct Busy {
    double compute = 0, comm = 0, either = 0;
    std::vector<std::pair<uint32_t, double>> exposed;  // (statement, seconds)
  };
  const std::vector<Busy>& busy() const { return busy_; }
  const std::vector<double>& rank_end() const { return rank_end_; }
  // With record_starts: every step's start and end time (NaN if it never did).
  const std::vector<double>& start_times() const { return start_; }
  const std::vector<double>& end_times() const { return end_; }
  // With record_starts, per send (NaN elsewhere, or if it never happened): when its data began to
  // move (its start; by rendezvous, once its receive was posted too) and when it arrived. The
  // engine may hold it back after that (the analytic one queues it behind the NIC's earlier
  // messages), so the two bound the time the message was the network's business.
  const std::vector<double>& transfer_starts() const { return moved_; }
  const std::vector<double>& arrival_times() const { return arrived_; }
  // The send each receive took (and each send's receive), or kNoStep: for a stuck state.
  StepId partner(StepId s) const;
  // Collective instance i's entries: when its first member and its last member entered, and the
  // last one's step (kNoStep if it never had all of them).
  struct Entries {
    double first, last;
    StepId last_step;
  };
  Entries collective_entries(uint32_t i) const { return {coll_first_[i], coll_entry_[i].first, coll_entry_[i].second}; }
  // Per step kStepIssued | kStepCompleted (core/interp/interpret.hpp), for analyze_stuck.
  std::vector<uint8_t> status() const;

 private:
  enum : uint8_t { kIssued = 1, kCompleted = 2, kArrived = 4, kSendAtArrival = 8, kSent = 16 };

  void drain();  // issue and complete what is queued
  void issue(StepId s);
  void complete(StepId s);
  void finish_recv(StepId r);
  void satisfy_successors(StepId s);
  void start_transfer(StepId send, bool rendezvous, bool held = false);
  bool rendezvous(StepId send) const;
  // Dynamic MPI matching at one destination.
  void post_dynamic(StepId recv);
  void deliver_dynamic(StepId send);
  bool matches(StepId recv, StepId send) const;
  void match_dynamic(StepId recv, StepId send);

  const StepGraph& g_;
  RuntimeOptions o_;
  Timer& timer_;
  size_t n_;
  double now_ = 0;
  // Dependencies not yet satisfied: 16 bits (a step rarely waits on more); kBigPending marks a
  // count kept in big_pending_.
  static constexpr uint16_t kBigPending = 0xffff;
  std::vector<uint16_t> pending_;
  std::unordered_map<StepId, uint32_t> big_pending_;
  std::vector<uint8_t> st_;
  bool exact_;
  std::vector<float> endf_;
  std::vector<double> end_, start_, moved_, arrived_;
  double last_ = 0;
  std::vector<double> rank_end_;
  // Busy accounting: per rank and kind (compute, comm, either), activities open and since when.
  struct Open {
    uint32_t n[3] = {0, 0, 0};
    double since[3] = {0, 0, 0};
    double last = 0;                                // when exposed time was last counted
    std::vector<std::pair<uint32_t, uint32_t>> in;  // (statement, messages whose data moves)
  };
  std::vector<Open> open_;
  std::vector<Busy> busy_;
  std::unordered_map<StepId, uint8_t> computing_;  // compute steps in progress
  void busy_begin(uint32_t rank, int kind);
  void busy_end(uint32_t rank, int kind);
  void moving(StepId send, bool begin);
  void in_flight(uint32_t rank, uint32_t stmt, bool begin);
  void count_exposed(uint32_t rank);
  const StepGraph::Successors* succ_ = nullptr;  // the graph's successor view
  std::vector<StepId> work_, batch_;             // steps ready now, to issue
  std::vector<uint32_t> initial_off_;            // steps with no dependency, by rank (CSR, built by start)
  std::vector<StepId> initial_;
  std::unordered_map<StepId, std::vector<StepId>> waiters_;  // handle -> waits blocked on it
  std::vector<uint32_t> coll_issued_;                        // per collective instance
  std::vector<std::pair<double, StepId>> coll_entry_;        // per collective instance: its last entry
  std::vector<double> coll_first_;                           // per collective instance: its first entry
  // Dynamic matching: per destination rank, posted receives and unexpected messages in order;
  // per (source, destination), the sends in issue order and how many were delivered.
  struct Dest {
    std::deque<StepId> posted, unexpected;
  };
  std::unordered_map<uint32_t, Dest> dest_;
  struct Channel {
    std::deque<StepId> issued;  // sends in issue order, not yet delivered
    std::vector<StepId> arrived_early;
  };
  std::unordered_map<uint64_t, Channel> chan_;
  // Sends of a call with a window (CallCost::window, NCCL's FIFO) per source→destination pair:
  // how many are on the wire, and those waiting for a slot, in the order they were issued.
  struct Window {
    uint32_t in_flight = 0;
    std::deque<StepId> held;
  };
  std::unordered_map<uint64_t, Window> windows_;
  uint32_t window_of(StepId send) const;
  const std::vector<uint32_t>* dst_ = nullptr;
  uint32_t dst_of(StepId send) const { return dst_ ? (*dst_)[send] : g_.peer(send); }
  bool take_slot(StepId send);     // false: the send waits (held) for a slot
  void release_slot(StepId send);  // its data has left: the pair's next held send starts
  std::unordered_map<StepId, StepId> dyn_partner_;
  uint64_t completed_ = 0, messages_ = 0, bytes_ = 0;
};

}  // namespace sg::sim
