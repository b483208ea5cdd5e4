// The reference interpreter's machine (private to core/interp/): the class Interp and what its
// three files share. It is one object (chunk values, step status, message queues), so its
// definition lives here and its members in interpret.cpp (the driver: the run loop and the
// end-of-run report), interpret_steps.cpp (what each step does to the chunks) and
// interpret_matching.cpp (MPI matching of messages to receives, wildcards included).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/interp/interpret.hpp"

namespace sg::interp_detail {

enum : uint8_t { kReleased = 1, kCompleted = 2, kDepsReady = 4, kArrived = 8, kIssued = 16 };

struct Msg {
  StepId send;
  uint32_t src;
  int32_t tag;
  uint32_t comm;
  std::vector<Value> payload;
};

class Interp {
 public:
  Interp(const StepGraph& g, const InterpOptions& o) : g_(g), o_(o), n_(g.size()) {}

  InterpResult run();  // interpret.cpp

 private:
  // ---------------------------------------------------------------- bookkeeping (inline: all three files release and complete steps)
  void release(StepId s) {
    if (st_[s] & kReleased) return;
    st_[s] |= kReleased;
    for (uint32_t i = succ_->off[s]; i < succ_->off[s + 1]; ++i) {
      StepId t = succ_->succ[i];
      if (--pending_[t] == 0) heap_.push(t);
    }
  }
  void complete(StepId s) {
    if (st_[s] & kCompleted) return;
    st_[s] |= kCompleted;
    ++completed_;
    release(s);
    auto it = waiters_.find(s);
    if (it != waiters_.end()) {
      std::vector<StepId> ws = std::move(it->second);
      waiters_.erase(it);
      for (StepId w : ws) step(w);
    }
  }

  // ---------------------------------------------------------------- trails (InterpOptions::follow)
  struct Holder {
    StepId brought = kNoStep;
    bool read = false;
  };
  // (rank, buf, chunk) in one word: 24, 12 and 28 bits (a check never holds more).
  static uint64_t loc_key(uint32_t rank, uint32_t buf, uint32_t chunk) { return (uint64_t{rank} << 40) | (uint64_t{buf} << 28) | chunk; }
  static bool holds(const Value& v, const Run& a) {
    for (const Run& r : v.runs)
      if (r.same_family(a) && r.lo <= a.lo && a.lo < r.hi) return true;
    return false;
  }
  void trail_read(uint32_t rank, uint32_t buf, uint32_t chunk);
  void trail_write(uint32_t rank, uint32_t buf, uint32_t chunk, const Value& before, const Value& after, StepId by, const Value* added);

  // ---------------------------------------------------------------- chunks and steps (interpret_steps.cpp)
  const Value& read(uint32_t rank, uint32_t buf, uint32_t chunk, StepId by);
  std::vector<Value> read_range(uint32_t rank, const Range& r, StepId by);
  void write(uint32_t rank, uint32_t buf, uint32_t chunk, Value v, StepId by);
  void reduce_into(uint32_t rank, uint32_t buf, uint32_t chunk, const Value& v, StepId by);
  void apply(uint32_t rank, const Range& dst, const std::vector<Value>& payload, bool reduce, StepId by);
  void step(StepId s);
  void compute(StepId s);
  void bad_operand(StepId s, uint32_t rank, uint32_t buf, uint32_t chunk, const char* what, const Value& v, const char* want);
  void run_collective(const Instance& in);

  // ---------------------------------------------------------------- matching (interpret_matching.cpp)
  bool matches(StepId recv, const Msg& m) const;
  bool wildcard(StepId r) const;
  bool deferred(StepId r) const;
  void deliver(uint32_t dst, Msg m);
  void progress(uint32_t rank);
  bool held_back(const std::deque<StepId>& posted, size_t before, const Msg& m) const;
  bool choose_wildcard_sender();
  struct Fingerprint;
  std::pair<uint64_t, uint64_t> fingerprint() const;
  static uint64_t mix64(uint64_t x);
  void finish_recv(StepId r, const Msg& m);
  // A connection: source, destination, tag and communicator.
  static std::tuple<uint32_t, uint32_t, int32_t, uint32_t> connection(uint32_t src, const P2PInfo& p) {
    return {src, p.peer, p.tag, p.comm};
  }

  const StepGraph& g_;
  const InterpOptions& o_;
  size_t n_;
  MachineState state_;
  std::vector<StepId> partner_;
  std::vector<uint32_t> pending_;
  std::vector<uint8_t> st_;
  const StepGraph::Successors* succ_ = nullptr;
  std::priority_queue<StepId, std::vector<StepId>, std::greater<StepId>> heap_;
  std::unordered_map<StepId, std::vector<Value>> inbox_;
  std::vector<std::deque<StepId>> posted_;
  std::vector<std::deque<Msg>> unexpected_;
  // Bounded sends: per connection, the sends whose messages are not received yet, in order.
  std::map<std::tuple<uint32_t, uint32_t, int32_t, uint32_t>, std::deque<StepId>> fifo_;
  std::vector<uint32_t> arrived_;
  std::unordered_map<StepId, std::vector<StepId>> waiters_;
  std::unordered_set<StepId> waited_;
  std::unordered_set<uint64_t> undefined_seen_;
  int undef_reported_ = 0;
  uint64_t completed_ = 0;
  bool pruned_ = false;
  std::vector<Issue> issues_;
  std::unordered_map<uint64_t, StepId> tile_steps_;            // attention atom -> the tile step that made it
  std::vector<Trail> trails_;                                  // InterpOptions::follow
  std::vector<std::unordered_map<uint64_t, Holder>> holders_;  // per trail: the chunks holding its atom
};

}  // namespace sg::interp_detail
