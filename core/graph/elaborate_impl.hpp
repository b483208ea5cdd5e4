// The elaborator's shared state (Elaborator, behind core/graph/elaborate.hpp): internal to the
// elaborate*.cpp files, included by nothing else.
//
// One class walks a schedule and builds (or counts) its steps; its state is shared by every part
// of the walk, so it stays one class, declared here, and its member functions are split by what
// they do, one file per concern (each file's top comment says what it holds):
//   elaborate.cpp               the entry points (estimate_size, elaborate), the driver (run),
//                               error reporting and the schedule's top-level parameters (--set)
//   elaborate_eval.cpp          expressions: integers, groups, rank values and chunk references
//   elaborate_access.cpp        chunk states, hazards and dependencies, step emission, the memory watch
//   elaborate_control.cpp       statement dispatch and control flow: blocks, let, if, require,
//                               for loops (one rank's iterations), `on` blocks and calls
//   elaborate_declarations.cpp  buffer declarations (and their lossy-size warning), init and expect
//   elaborate_operations.cpp    the statements that emit steps: send, local-view p2p and wait,
//                               copy and reduce, compute, collectives
// The helpers on every path (fail, rslot, mine) stay here, inline.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/graph/elaborate.hpp"

namespace sg::elab::detail {

constexpr uint32_t kNil = 0xffffffffu;
constexpr int kMaxCallDepth = 64;

struct Val {
  bool group = false;
  int64_t i = 0;
  GroupInfo g;
};

// A buffer as one frame sees it: a whole buffer, or (inside a call) a 1-D slice of one.
struct View {
  uint32_t buf = 0, off = 0, len = 0;
  bool bound = false;
  bool whole = false;
  uint32_t decl_stmt = kNil;
};

struct Frame {
  const Program* prog = nullptr;
  const Schedule* sched = nullptr;
  std::vector<Val> slots;
  std::vector<View> bufs;
  GroupInfo group;
  uint32_t group_id = 0;
  std::string prefix;  // "callee." for buffers a called schedule declares
  int depth = 0;
};

struct EvalError {
  Loc loc;
  uint32_t length;
  std::string msg;
};
struct Abort {};

enum class Mode { Count, Build };

// A chunk's readers since its last write: kNil (none), one reader's step id in place (the
// common case: most chunks end a program read once, and a job's every rank keeps its chunks'
// states to the end), or a list in the reader pool (its head | kPooled).
constexpr uint32_t kPooled = 0x80000000u;
struct ChunkState {
  StepId writer = kNoStep;
  uint32_t readers = kNil;
};

// Small fixed-capacity list of ranges (no allocation on the hot path).
struct Ranges {
  Range r[12];
  uint32_t n = 0;
  void add(const Range& x) {
    if (x.cnt && n < 12) r[n++] = x;
  }
};

struct RankState {
  StepId last_blocking = kNoStep;  // the latest blocking `on`-block step
  StepId last_local = kNoStep;     // the latest `on`-block step: local steps start in program order
  struct Handle {
    std::string name;
    StepId step;
    Range range;
    bool is_recv;
  };
  std::vector<Handle> outstanding;
  std::vector<std::pair<std::string, uint32_t>> waited;  // name -> stmt of the wait
};

class Elaborator {
 public:
  Elaborator(Session& s, const ElabOptions& o, Mode m);  // elaborate.cpp

  SizeEstimate est;
  std::unique_ptr<StepGraph> g_;

  bool run(const Target& t, uint64_t reserve_steps);  // elaborate.cpp

  bool errors() const { return diags_.error_count() > errors_at_start_; }

 private:
  // ------------------------------------------------------------------ errors (elaborate.cpp)
  [[noreturn]] void fail(Loc loc, uint32_t len, std::string msg) { throw EvalError{loc, len, std::move(msg)}; }

  std::string context() const;
  Diagnostic& add_error(const Stmt& st, const EvalError& e);
  void report(const Stmt& st, const EvalError& e);

  // ------------------------------------------------------------------ expressions (elaborate_eval.cpp)
  static int64_t floordiv(int64_t a, int64_t b);
  int64_t ev(const Expr& e, Frame& f);
  GroupInfo group_var(const Expr& e, Frame& f);
  GroupInfo gev(const Expr& e, Frame& f);
  Val eval(const Expr& e, Frame& f);
  int64_t binary(const Expr& e, Frame& f);
  int64_t func(const Expr& e, Frame& f);
  uint32_t rank_of(const Expr& e, Frame& f, const char* what);

  // ------------------------------------------------------------------ chunk references (elaborate_eval.cpp)
  Range ref(const Ref& r, Frame& f);

  // ------------------------------------------------------------------ hazards and emission (elaborate_access.cpp)
  uint32_t rslot(uint32_t r) const { return me_ >= 0 ? 0 : set_ ? static_cast<uint32_t>(slot_of_[r]) : r; }
  bool mine(uint32_t r) const { return me_ >= 0 ? r == static_cast<uint32_t>(me_) : !set_ || slot_of_[r] >= 0; }

  ChunkState* chunk_states(uint32_t buf, uint32_t rank);
  void release(uint32_t rank);
  std::vector<uint32_t> dead_after(const Block& b, size_t i, const Frame& f);
  void collect_deps(uint32_t rank, const Ranges& rd, const Ranges& wr);
  uint32_t intern_compute(const ComputeInfo& c, const std::vector<Range>& rd, const std::vector<Range>& wr);
  void drop_readers(ChunkState& cs);
  void register_access(StepId id, uint32_t rank, const Ranges& rd, const Ranges& wr);
  uint32_t pool_node(StepId id, uint32_t next);
  StepId emit(StepKind k, uint8_t flags, uint32_t rank, const Stmt& st, const Range& primary, uint32_t refv, const Ranges& rd,
              const Ranges& wr, const StepId* extra = nullptr, size_t nextra = 0);
  void watch_memory();

 public:
  // What the build may count on (elaborate(): from the estimate): its steps, and what the
  // graph's consumer needs beside it.
  void budget(uint64_t steps, uint64_t later) {
    est_steps_ = steps;
    later_bytes_ = later;
  }

 private:
  [[noreturn]] void throw_too_big(const Stmt& st);  // elaborate_access.cpp
  void tick(const Stmt& st);                        // elaborate_control.cpp

  // ------------------------------------------------------------------ statements (elaborate_control.cpp)
  void top_block(const Block& b, Frame& f);
  void block(const Block& b, Frame& f);
  void stmt(const Stmt& st, Frame& f);

  static std::string print_cond(const RequireStmt& s);

  struct LoopScope;

  void exec_for(const ForStmt& s, Frame& f);
  static bool uses_slot(const Expr& e, int32_t slot);
  bool solve_endpoint(const Expr& e, int32_t slot, Frame& f, int64_t lo, int64_t hi, std::vector<int64_t>& out);
  bool one_rank_iterations(const ForStmt& s, Frame& f, int64_t lo, int64_t hi, std::vector<int64_t>& out);
  void on(const OnStmt& s, Frame& f);
  void call(const CallStmt& s, Frame& f);

  // ------------------------------------------------------------------ declarations (elaborate_declarations.cpp)
  // The first division that rounded down while evaluating a chunk size.
  struct LossyDiv {
    const Expr* div = nullptr;
    int64_t a = 0, b = 0, q = 0;
  };
  int64_t ev_size(const Expr& e, Frame& f, LossyDiv& lossy);
  void warn_lossy(const BufferStmt& s, const Expr& size, const LossyDiv& d, uint64_t value, bool bytes, uint64_t chunks);
  void check_layout(const BufferStmt& s, size_t extents);
  void buffer(const BufferStmt& s, Frame& f);
  void init(const InitStmt& s, Frame& f);
  void check_inits();
  void expect(const ExpectStmt& s, Frame& f);

  // ------------------------------------------------------------------ operations (elaborate_operations.cpp)
  void check_same_bytes(const Range& a, const Range& b, const Ref& at, const char* what);
  void send(const SendStmt& s, Frame& f);
  void need_on(const Stmt& s, const char* what);
  void p2p(const P2PStmt& s, Frame& f);
  void wait(const WaitStmt& s, Frame& f);
  template <class Fn>
  void for_targets(const Expr* at, Frame& f, Fn&& fn);
  void copy(const CopyStmt& s, Frame& f);
  void compute(const ComputeStmt& s, Frame& f);
  void coll(const CollStmt& s, Frame& f);

  // ------------------------------------------------------------------ parameters (elaborate.cpp)
  void bind_top_params(const Schedule& s, Frame& f);
  int64_t set_value(const std::pair<std::string, std::string>& kv);
  void fix_names(Expr& e, uint32_t file);

  Session& ses_;
  const ElabOptions& opts_;
  Mode mode_;
  Diagnostics quiet_;
  Diagnostics& diags_;
  uint64_t errors_at_start_ = 0;
  uint32_t n_ = 0;
  int64_t me_ = -1;
  bool set_ = false;              // ElabOptions::only_ranks
  std::vector<int32_t> slot_of_;  // set_: per rank, its slot, or -1
  uint32_t rank_slots_ = 0;
  bool in_on_ = false;
  LossyDiv* watch_ = nullptr;     // set while evaluating a chunk size (see ev_size)
  std::vector<uint32_t> warned_;  // buffer statements already warned about
  uint32_t on_rank_ = 0;
  std::vector<std::tuple<const std::string*, Frame*, int32_t>> loops_;
  std::vector<const Stmt*> loop_stmts_;                         // the `for` statements running, outermost first
  std::vector<std::vector<std::unique_ptr<ChunkState[]>>> hz_;  // per buffer, per rank (chunk_states)
  std::vector<std::vector<uint8_t>> released_;                  // per buffer, per rank: freed by release()
  std::vector<uint32_t> dead_after_on_;                         // the top-level `on` block running: release()'s buffers
  std::vector<std::pair<StepId, uint32_t>> pool_;
  uint32_t free_ = kNil;
  std::vector<StepId> deps_;
  std::vector<RankState> ranks_;
  std::unordered_map<uint64_t, uint32_t> coll_seq_;
  std::unordered_map<uint64_t, uint32_t> coll_entry_;            // (group, seq) -> the colls entry its members share
  std::unordered_map<std::string, uint32_t> compute_index_;      // intern_compute's entries by content
  std::vector<uint32_t> stmt_name_;                              // per compute statement: its name's index
  std::vector<Range> scratch_rd_, scratch_wr_;                   // compute()'s ranges
  uint64_t est_steps_ = 0, later_bytes_ = 0, hazard_bytes_ = 0;  // watch_memory's
  Loc schedule_loc_;
  uint32_t schedule_len_ = 0;
  std::string key_;
  struct PendingBadWait {
    uint32_t rank;
    Loc loc;
    std::string msg;
  };
  std::vector<PendingBadWait> bad_waits_;
};

}  // namespace sg::elab::detail
