#include "core/graph/elaborate.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <unordered_map>

#include "core/base/checked.hpp"
#include "core/base/errors.hpp"
#include "core/base/sizes.hpp"
#include "core/dsl/parser.hpp"
#include "core/dsl/printer.hpp"
#include "core/dsl/resolve.hpp"
#include "core/graph/layout.hpp"

namespace sg {

namespace {

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
  Elaborator(Session& s, const ElabOptions& o, Mode m) : ses_(s), opts_(o), mode_(m), diags_(m == Mode::Build ? s.diags : quiet_) {
    n_ = o.nranks;
    me_ = o.only_rank;
    rank_slots_ = me_ >= 0 ? 1 : n_;
    if (me_ < 0 && !o.only_ranks.empty()) {
      set_ = true;
      slot_of_.assign(n_, -1);
      for (size_t i = 0; i < o.only_ranks.size(); ++i)
        if (o.only_ranks[i] < n_) slot_of_[o.only_ranks[i]] = static_cast<int32_t>(i);
      rank_slots_ = static_cast<uint32_t>(o.only_ranks.size());
    }
    if (mode_ == Mode::Build) {
      g_ = std::make_unique<StepGraph>();
      g_->nranks = n_;
      g_->only_rank = me_;
      if (set_) g_->built_ranks = o.only_ranks;
    } else {
      g_ = std::make_unique<StepGraph>();  // holds buffers and groups while counting
    }
    ranks_.resize(mode_ == Mode::Build ? rank_slots_ : 0);
  }

  SizeEstimate est;
  std::unique_ptr<StepGraph> g_;

  bool run(const Target& t, uint64_t reserve_steps) {
    const Schedule& s = *t.schedule;
    errors_at_start_ = diags_.error_count();  // the session's diagnostics may hold earlier runs'
    if (n_ == 0) {
      diags_.error(s.loc, "the number of ranks must be at least 1", static_cast<uint32_t>(s.name.size()));
      return false;
    }
    if (s.callable_only()) {
      auto& d = diags_.error(s.loc, "schedule '" + s.name + "' takes group or buffer parameters: it can only be called",
                             static_cast<uint32_t>(s.name.size()));
      d.notes.push_back({Loc{}, "write a schedule that declares the buffers and uses `call " + s.name + "(…)`"});
      return false;
    }
    g_->schedule = s.name;
    g_->file = ses_.sources.file(t.program->file).name();
    schedule_loc_ = s.loc;
    schedule_len_ = static_cast<uint32_t>(s.name.size());
    if (mode_ == Mode::Build && reserve_steps) g_->reserve(reserve_steps, reserve_steps + reserve_steps / 4);
    Frame f;
    f.prog = t.program;
    f.sched = &s;
    f.slots.resize(s.num_slots);
    f.bufs.resize(s.num_buffers);
    f.group = GroupInfo{0, n_, 1};
    f.group_id = g_->intern_group(f.group);
    try {
      bind_top_params(s, f);
      if (errors()) return false;
      top_block(s.body, f);
    } catch (const Abort&) {
      return false;
    }
    if (mode_ == Mode::Build) {
      g_->stmt_locs = ses_.stmt_locs;
      check_inits();
      g_->shrink_dep_offsets();
    }
    return !errors();
  }

  bool errors() const { return diags_.error_count() > errors_at_start_; }

 private:
  // ------------------------------------------------------------------ errors
  [[noreturn]] void fail(Loc loc, uint32_t len, std::string msg) { throw EvalError{loc, len, std::move(msg)}; }

  std::string context() const {
    std::string s;
    for (const auto& [name, frame, slot] : loops_) {
      s += s.empty() ? "with " : ", ";
      s += *name + " = " + std::to_string(frame->slots[static_cast<size_t>(slot)].i);
    }
    return s;
  }

  Diagnostic& add_error(const Stmt& st, const EvalError& e) {
    std::string msg = e.msg;
    std::string ctx = context();
    if (!ctx.empty()) {
      if (!msg.empty() && msg.back() == ')') msg.insert(msg.size() - 1, "; " + ctx);
      else msg += " (" + ctx + ")";
    }
    Loc loc = e.loc.valid() ? e.loc : st.loc;
    return diags_.error(loc, msg, e.loc.valid() ? e.length : st.length);
  }

  void report(const Stmt& st, const EvalError& e) {
    add_error(st, e);
    if (diags_.too_many()) throw Abort{};
  }

  // ------------------------------------------------------------------ expressions
  static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }

  int64_t ev(const Expr& e, Frame& f) {
    switch (e.kind) {
      case ExprKind::Int: return e.value;
      case ExprKind::Var: {
        if (e.slot == -2) return n_;
        if (e.slot < 0) fail(e.loc, e.length, "unknown name '" + e.name + "'");
        const Val& v = f.slots[static_cast<size_t>(e.slot)];
        if (v.group)
          fail(e.loc, e.length, "'" + e.name + "' is a group; an integer is needed here (size(" + e.name + ") or " + e.name + "[i])");
        return v.i;
      }
      case ExprKind::Unary: {
        int64_t a = ev(*e.args[0], f);
        if (e.uop == UnOp::Not) return !a;
        if (a == INT64_MIN) fail(e.loc, 1, "integer overflow in negation");
        return -a;
      }
      case ExprKind::Binary: return binary(e, f);
      case ExprKind::Cond: return ev(*e.args[0], f) ? ev(*e.args[1], f) : ev(*e.args[2], f);
      case ExprKind::Func: return func(e, f);
      case ExprKind::GroupAt: {
        GroupInfo g = group_var(e, f);
        int64_t i = ev(*e.args[0], f);
        if (i < 0 || i >= g.count)
          fail(e.args[0]->loc, e.args[0]->length,
               "member index out of range for group '" + e.name + "' (index " + std::to_string(i) + ", size " + std::to_string(g.count) +
                   ")");
        return g.member(static_cast<uint32_t>(i));
      }
      case ExprKind::Ranks:
      case ExprKind::World: fail(e.loc, e.length, "a group is not an integer");
      case ExprKind::BufLen: fail(e.loc, e.length, "'" + e.name + "' is a buffer; size(" + e.name + ") gives its chunk count");
    }
    return 0;
  }

  GroupInfo group_var(const Expr& e, Frame& f) {
    if (e.slot < 0) fail(e.loc, e.length, "unknown group '" + e.name + "'");
    const Val& v = f.slots[static_cast<size_t>(e.slot)];
    if (!v.group) fail(e.loc, static_cast<uint32_t>(e.name.size()), "'" + e.name + "' is an integer, not a group");
    return v.g;
  }

  GroupInfo gev(const Expr& e, Frame& f) {
    switch (e.kind) {
      case ExprKind::World: return GroupInfo{0, n_, 1};
      case ExprKind::Var: return group_var(e, f);
      case ExprKind::Ranks: {
        int64_t start = ev(*e.args[0], f), count = ev(*e.args[1], f);
        int64_t stride = e.args.size() > 2 ? ev(*e.args[2], f) : 1;
        if (count < 1)
          fail(e.loc, 5, "a group needs at least one member (ranks(" + std::to_string(start) + ", " + std::to_string(count) + ", …))");
        if (stride < 1) fail(e.loc, 5, "a group's stride must be at least 1 (stride " + std::to_string(stride) + ")");
        int64_t last = start + (count - 1) * stride;
        if (start < 0 || last >= n_ || (count - 1) > (INT64_MAX - start) / stride)
          fail(e.loc, 5,
               "group has members outside the ranks (ranks(" + std::to_string(start) + ", " + std::to_string(count) + ", " +
                   std::to_string(stride) + ") spans " + std::to_string(start) + " .. " + std::to_string(last) +
                   ", N = " + std::to_string(n_) + ")");
        return GroupInfo{static_cast<uint32_t>(start), static_cast<uint32_t>(count), static_cast<uint32_t>(stride)};
      }
      default: fail(e.loc, e.length, "expected a group (ranks(start, count[, stride]), world, or a group name)");
    }
  }

  Val eval(const Expr& e, Frame& f) {
    Val v;
    if (e.kind == ExprKind::Ranks || e.kind == ExprKind::World ||
        (e.kind == ExprKind::Var && e.slot >= 0 && f.slots[static_cast<size_t>(e.slot)].group)) {
      v.group = true;
      v.g = gev(e, f);
    } else {
      v.i = ev(e, f);
    }
    return v;
  }

  int64_t binary(const Expr& e, Frame& f) {
    if (e.bop == BinOp::And) return ev(*e.args[0], f) && ev(*e.args[1], f);
    if (e.bop == BinOp::Or) return ev(*e.args[0], f) || ev(*e.args[1], f);
    int64_t a = ev(*e.args[0], f), b = ev(*e.args[1], f), r = 0;
    auto overflow = [&]() { fail(e.loc, 1, "integer overflow (" + std::to_string(a) + " and " + std::to_string(b) + ")"); };
    switch (e.bop) {
      case BinOp::Add:
        if (__builtin_add_overflow(a, b, &r)) overflow();
        return r;
      case BinOp::Sub:
        if (__builtin_sub_overflow(a, b, &r)) overflow();
        return r;
      case BinOp::Mul:
        if (__builtin_mul_overflow(a, b, &r)) overflow();
        return r;
      case BinOp::Div:
      case BinOp::Mod: {
        if (b == 0) fail(e.args[1]->loc, e.args[1]->length, std::string(e.bop == BinOp::Div ? "division" : "modulo") + " by zero");
        if (a == INT64_MIN && b == -1) overflow();
        int64_t q = floordiv(a, b);
        if (watch_ && !watch_->div && e.bop == BinOp::Div && a != q * b) *watch_ = LossyDiv{&e, a, b, q};
        return e.bop == BinOp::Div ? q : a - q * b;
      }
      case BinOp::Pow: {
        if (b < 0) fail(e.args[1]->loc, e.args[1]->length, "negative exponent (" + std::to_string(b) + ")");
        int64_t res = 1, base = a;
        while (b) {
          if (b & 1)
            if (__builtin_mul_overflow(res, base, &res)) overflow();
          b >>= 1;
          if (b && __builtin_mul_overflow(base, base, &base)) overflow();
        }
        return res;
      }
      case BinOp::Eq: return a == b;
      case BinOp::Ne: return a != b;
      case BinOp::Lt: return a < b;
      case BinOp::Le: return a <= b;
      case BinOp::Gt: return a > b;
      case BinOp::Ge: return a >= b;
      default: return 0;
    }
  }

  int64_t func(const Expr& e, Frame& f) {
    switch (e.fn) {
      case Func::Min:
      case Func::Max: {
        int64_t r = ev(*e.args[0], f);
        for (size_t i = 1; i < e.args.size(); ++i) {
          int64_t x = ev(*e.args[i], f);
          r = e.fn == Func::Min ? std::min(r, x) : std::max(r, x);
        }
        return r;
      }
      case Func::Pow2: {
        int64_t k = ev(*e.args[0], f);
        if (k < 0 || k > 62) fail(e.loc, e.length, "pow2 needs 0 <= k <= 62 (k = " + std::to_string(k) + ")");
        return int64_t{1} << k;
      }
      case Func::Cdiv: {
        int64_t a = ev(*e.args[0], f), b = ev(*e.args[1], f);
        if (b == 0) fail(e.args[1]->loc, e.args[1]->length, "division by zero in cdiv");
        if (a == INT64_MIN && b == -1) fail(e.loc, 4, "integer overflow in cdiv");
        return -floordiv(-a, b);
      }
      case Func::Log2: {
        int64_t x = ev(*e.args[0], f);
        if (x <= 0 || (x & (x - 1))) fail(e.loc, e.length, "log2 of a value that is not a power of two (log2(" + std::to_string(x) + "))");
        return 63 - __builtin_clzll(static_cast<uint64_t>(x));
      }
      case Func::Flog2: {
        int64_t x = ev(*e.args[0], f);
        if (x <= 0) fail(e.loc, e.length, "flog2 needs a positive value (flog2(" + std::to_string(x) + "))");
        return 63 - __builtin_clzll(static_cast<uint64_t>(x));
      }
      case Func::IsPow2: {
        int64_t x = ev(*e.args[0], f);
        return x > 0 && !(x & (x - 1));
      }
      case Func::Size: {
        const Expr& a = *e.args[0];
        if (a.kind == ExprKind::BufLen) {
          const View& v = f.bufs[static_cast<size_t>(a.slot)];
          if (!v.bound) fail(a.loc, a.length, "buffer '" + a.name + "' is used before it is declared");
          return v.len;
        }
        return gev(a, f).count;
      }
    }
    return 0;
  }

  uint32_t rank_of(const Expr& e, Frame& f, const char* what) {
    int64_t r = ev(e, f);
    if (r < 0 || r >= n_)
      fail(e.loc, e.length,
           std::string(what) + " rank out of range (rank " + std::to_string(r) + ", valid 0 .. " + std::to_string(n_ - 1) + ")");
    return static_cast<uint32_t>(r);
  }

  // ------------------------------------------------------------------ chunk references
  Range ref(const Ref& r, Frame& f) {
    if (r.slot < 0) fail(r.loc, r.length, "unknown buffer '" + r.buf + "'");
    const View& v = f.bufs[static_cast<size_t>(r.slot)];
    if (!v.bound)
      fail(r.loc, static_cast<uint32_t>(r.buf.size()),
           "buffer '" + r.buf + "' is used before it is declared (its declaration has not run)");
    if (r.idx.empty()) return Range{v.buf, v.off, v.len};
    uint32_t one_dim[1] = {v.len};
    const std::vector<uint32_t>* dimsv = v.whole ? &g_->buffers[v.buf].dims : nullptr;
    const uint32_t* dims = dimsv ? dimsv->data() : one_dim;
    size_t nd = dimsv ? dimsv->size() : 1;
    if (r.idx.size() > nd)
      fail(r.loc, r.length,
           "too many indices for '" + r.buf + "' (" + std::to_string(r.idx.size()) + " given, it has " + std::to_string(nd) + " dimension" +
               (nd == 1 ? "" : "s") + ")");
    uint64_t lo = 0, cnt = 1;
    for (size_t d = 0; d < r.idx.size(); ++d) {
      const Index& ix = r.idx[d];
      int64_t a = ev(*ix.lo, f);
      if (ix.hi) {
        if (d + 1 != r.idx.size()) fail(ix.lo->loc, ix.lo->length, "a range is only allowed in the last index");
        int64_t b = ev(*ix.hi, f);
        if (a < 0 || b > dims[d] || a >= b)
          fail(ix.lo->loc, ix.lo->length,
               "chunk range out of bounds for '" + r.buf + "' (" + std::to_string(a) + " .. " + std::to_string(b) + ", valid within 0 .. " +
                   std::to_string(dims[d]) + (a >= b ? ", and it must not be empty" : "") + ")");
        lo = lo * dims[d] + static_cast<uint64_t>(a);
        cnt = static_cast<uint64_t>(b - a);
      } else {
        if (a < 0 || a >= dims[d])
          fail(ix.lo->loc, ix.lo->length,
               "chunk index out of range for '" + r.buf + "' (index " + std::to_string(a) + ", valid 0 .. " + std::to_string(dims[d] - 1) +
                   ")");
        lo = lo * dims[d] + static_cast<uint64_t>(a);
      }
    }
    // Remaining dimensions are taken whole.
    uint64_t inner = 1;
    for (size_t d = r.idx.size(); d < nd; ++d) inner *= dims[d];
    lo *= inner;
    cnt *= inner;
    return Range{v.buf, v.off + static_cast<uint32_t>(lo), static_cast<uint32_t>(cnt)};
  }

  // ------------------------------------------------------------------ hazards and emission
  uint32_t rslot(uint32_t r) const { return me_ >= 0 ? 0 : set_ ? static_cast<uint32_t>(slot_of_[r]) : r; }
  bool mine(uint32_t r) const { return me_ >= 0 ? r == static_cast<uint32_t>(me_) : !set_ || slot_of_[r] >= 0; }

  // A buffer's chunk states on one rank, made at its first touch.
  ChunkState* chunk_states(uint32_t buf, uint32_t rank) {
    if (hz_.size() <= buf) hz_.resize(buf + 1);
    auto& v = hz_[buf];
    if (v.empty()) v.resize(rank_slots_);
    auto& p = v[rslot(rank)];
    if (!p) {
      if (buf < released_.size() && !released_[buf].empty() && released_[buf][rslot(rank)])
        internal_error("the chunk states of buffer '" + g_->buffers[buf].name + "' on rank " + std::to_string(rank) +
                       " were released after its 'on' block, and touched again");
      uint32_t chunks = g_->buffers[buf].chunks;
      p.reset(new ChunkState[chunks]);
      hazard_bytes_ += uint64_t{chunks} * sizeof(ChunkState);
    }
    return p.get();
  }

  // After rank r's part of a top-level `on` block: the chunk states of the buffers no later
  // statement names (dead_after_on_) are not needed again, since an `on` block touches only
  // its own rank's chunks. A training step's ranks each held 4,365 chunks' states to the end of
  // the build (4.6 GB at N = 131,072); now a rank's are freed, but for the gradients the
  // data-parallel all-reduces read after the block.
  void release(uint32_t rank) {
    for (uint32_t buf : dead_after_on_) {
      if (buf >= hz_.size() || hz_[buf].empty() || !hz_[buf][rslot(rank)]) continue;
      ChunkState* cs = hz_[buf][rslot(rank)].get();
      uint32_t chunks = g_->buffers[buf].chunks;
      for (uint32_t c = 0; c < chunks; ++c) drop_readers(cs[c]);  // (the pool's nodes back to its free list)
      hz_[buf][rslot(rank)].reset();
      hazard_bytes_ -= uint64_t{chunks} * sizeof(ChunkState);
      if (released_.size() <= buf) released_.resize(buf + 1);
      if (released_[buf].empty()) released_[buf].assign(rank_slots_, 0);
      released_[buf][rslot(rank)] = 1;
    }
  }

  // The buffers (ids) of the frame's slots that no statement of b after b[i] names: none where
  // one of them calls a schedule (its arguments and its callees' are not looked into) or is of a
  // kind not known here.
  std::vector<uint32_t> dead_after(const Block& b, size_t i, const Frame& f) {
    std::vector<char> named(f.bufs.size(), 0);
    bool all = false;
    auto ref = [&](const Ref& r) {
      if (!r.present()) return;
      if (r.slot >= 0 && static_cast<size_t>(r.slot) < named.size()) named[static_cast<size_t>(r.slot)] = 1;
      else all = true;  // (a name without a slot here: keep everything)
    };
    std::function<void(const Stmt&)> walk = [&](const Stmt& st) {
      auto body = [&](const Block& blk) {
        for (const auto& sp : blk) walk(*sp);
      };
      switch (st.kind) {
        case StmtKind::Let:
        case StmtKind::Require:
        case StmtKind::Buffer:
        case StmtKind::Wait: break;
        case StmtKind::For: body(static_cast<const ForStmt&>(st).body); break;
        case StmtKind::If:
          body(static_cast<const IfStmt&>(st).then_body);
          body(static_cast<const IfStmt&>(st).else_body);
          break;
        case StmtKind::On: body(static_cast<const OnStmt&>(st).body); break;
        case StmtKind::Init: ref(static_cast<const InitStmt&>(st).target); break;
        case StmtKind::Expect:
          for (const Ref& r : static_cast<const ExpectStmt&>(st).bufs) ref(r);
          break;
        case StmtKind::Send:
          ref(static_cast<const SendStmt&>(st).src);
          ref(static_cast<const SendStmt&>(st).into);
          break;
        case StmtKind::P2P: ref(static_cast<const P2PStmt&>(st).buf); break;
        case StmtKind::Copy:
          ref(static_cast<const CopyStmt&>(st).src);
          ref(static_cast<const CopyStmt&>(st).dst);
          break;
        case StmtKind::Compute: {
          auto& c = static_cast<const ComputeStmt&>(st);
          for (const std::vector<Ref>* v : {&c.inputs, &c.outputs, &c.reads, &c.writes})
            for (const Ref& r : *v) ref(r);
          break;
        }
        case StmtKind::Coll:
          ref(static_cast<const CollStmt&>(st).buf);
          ref(static_cast<const CollStmt&>(st).into);
          break;
        default: all = true; break;  // a call, or a kind added later
      }
    };
    for (size_t k = i + 1; k < b.size() && !all; ++k) walk(*b[k]);
    std::vector<uint32_t> dead;
    if (all) return dead;
    for (size_t k = 0; k < f.bufs.size(); ++k)
      if (!named[k] && f.bufs[k].bound && f.bufs[k].whole) dead.push_back(f.bufs[k].buf);
    return dead;
  }

  void collect_deps(uint32_t rank, const Ranges& rd, const Ranges& wr) {
    for (uint32_t i = 0; i < rd.n; ++i) {
      ChunkState* cs = chunk_states(rd.r[i].buf, rank);
      for (uint32_t c = rd.r[i].lo, e = c + rd.r[i].cnt; c < e; ++c)
        if (cs[c].writer != kNoStep) deps_.push_back(cs[c].writer);
    }
    for (uint32_t i = 0; i < wr.n; ++i) {
      ChunkState* cs = chunk_states(wr.r[i].buf, rank);
      for (uint32_t c = wr.r[i].lo, e = c + wr.r[i].cnt; c < e; ++c) {
        // Readers since the last write all depend on that write, so they cover it.
        uint32_t h = cs[c].readers;
        if (h != kNil) {
          if (!(h & kPooled)) deps_.push_back(h);
          else
            for (uint32_t p = h & ~kPooled; p != kNil; p = pool_[p].second) deps_.push_back(pool_[p].first);
        } else if (cs[c].writer != kNoStep) {
          deps_.push_back(cs[c].writer);
        }
      }
    }
  }

  // The computes entry for this work on these chunks: one per distinct entry, shared by every
  // step that does the same (ranges name chunks of the step's own rank, so the same compute on
  // many ranks, or again on one, is one entry: a training step's 8 M compute steps at N = 8,192
  // share about a thousand).
  uint32_t intern_compute(const ComputeInfo& c, const std::vector<Range>& rd, const std::vector<Range>& wr) {
    key_.clear();
    auto put = [&](const void* p, size_t n) { key_.append(static_cast<const char*>(p), n); };
    uint8_t head[5] = {static_cast<uint8_t>(c.kind), static_cast<uint8_t>(c.mask), static_cast<uint8_t>(c.split_kv),
                       static_cast<uint8_t>(rd.size()), static_cast<uint8_t>(wr.size())};
    put(head, sizeof head);
    put(&c.name, sizeof c.name);
    put(&c.flops, sizeof c.flops);
    for (const Range& x : rd) put(&x, sizeof x);
    for (const Range& x : wr) put(&x, sizeof x);
    auto [it, fresh] = compute_index_.try_emplace(key_, static_cast<uint32_t>(g_->computes.size()));
    if (!fresh) return it->second;
    ComputeInfo ci = c;
    ci.reads_off = static_cast<uint32_t>(g_->ranges.size());
    ci.reads_cnt = static_cast<uint32_t>(rd.size());
    g_->ranges.insert(g_->ranges.end(), rd.begin(), rd.end());
    ci.writes_off = static_cast<uint32_t>(g_->ranges.size());
    ci.writes_cnt = static_cast<uint32_t>(wr.size());
    g_->ranges.insert(g_->ranges.end(), wr.begin(), wr.end());
    g_->computes.push_back(ci);
    return it->second;
  }

  // Forgets a chunk's readers, its pooled list's nodes back to the pool's free list.
  void drop_readers(ChunkState& cs) {
    if (cs.readers != kNil && (cs.readers & kPooled))
      for (uint32_t p = cs.readers & ~kPooled; p != kNil;) {
        uint32_t nx = pool_[p].second;
        pool_[p].second = free_;
        free_ = p;
        p = nx;
      }
    cs.readers = kNil;
  }

  void register_access(StepId id, uint32_t rank, const Ranges& rd, const Ranges& wr) {
    for (uint32_t i = 0; i < wr.n; ++i) {
      ChunkState* cs = chunk_states(wr.r[i].buf, rank);
      for (uint32_t c = wr.r[i].lo, e = c + wr.r[i].cnt; c < e; ++c) {
        drop_readers(cs[c]);
        cs[c].writer = id;
      }
    }
    for (uint32_t i = 0; i < rd.n; ++i) {
      ChunkState* cs = chunk_states(rd.r[i].buf, rank);
      for (uint32_t c = rd.r[i].lo, e = c + rd.r[i].cnt; c < e; ++c) {
        if (cs[c].writer == id) continue;  // read-modify-write: the write covers it
        uint32_t& h = cs[c].readers;
        if (h == kNil && id < kPooled) {  // the common case: one reader, kept in place
          h = id;
          continue;
        }
        uint32_t head = h == kNil ? kNil : (h & kPooled) ? h & ~kPooled : pool_node(h, kNil);
        h = pool_node(id, head) | kPooled;
      }
    }
  }

  // A reader list's node (the pool's free nodes are reused).
  uint32_t pool_node(StepId id, uint32_t next) {
    uint32_t p;
    if (free_ != kNil) {
      p = free_;
      free_ = pool_[p].second;
    } else {
      p = static_cast<uint32_t>(pool_.size());
      if (p >= kPooled - 1) internal_error("the elaborator's reader pool outgrew 2^31 nodes");
      pool_.emplace_back();
    }
    pool_[p] = {id, next};
    return p;
  }

  // Emits one step with its dependencies. `extra` are dependencies beyond hazards (handles).
  StepId emit(StepKind k, uint8_t flags, uint32_t rank, const Stmt& st, const Range& primary, uint32_t refv, const Ranges& rd,
              const Ranges& wr, const StepId* extra = nullptr, size_t nextra = 0) {
    if (mode_ == Mode::Count) {
      ++est.steps;
      return kNoStep;
    }
    if (g_->size() >= 0xfffffff0u) throw_too_big(st);
    if ((g_->size() & 0x3ffff) == 0 && opts_.max_memory) watch_memory();
    deps_.clear();
    collect_deps(rank, rd, wr);
    RankState* rs = nullptr;
    if (flags & kFlagLocal) {
      rs = &ranks_[rslot(rank)];
      if (rs->last_blocking != kNoStep) deps_.push_back(rs->last_blocking);
      if (rs->last_local != kNoStep) deps_.push_back(rs->last_local);
    }
    for (size_t i = 0; i < nextra; ++i) deps_.push_back(extra[i]);
    StepId id = g_->add_step(k, flags, rank, st.id, primary, refv);
    if (deps_.size() > 1) {
      std::sort(deps_.begin(), deps_.end());
      deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
    }
    for (StepId d : deps_) g_->add_dep(d);
    if (g_->dep_total() >= 0xfffffff0u) throw_too_big(st);
    g_->finish_step();
    register_access(id, rank, rd, wr);
    if (rs) {
      rs->last_local = id;
      if (!(flags & kFlagNonblocking)) rs->last_blocking = id;
    }
    return id;
  }

  // The estimate counts compute and collective entries as shared (one per distinct work, one per
  // instance), which they usually are; every 2^18 steps the build checks what it holds, and the
  // steps still to come at their fixed size, against the limit.
  void watch_memory() {
    uint64_t have = g_->memory_bytes() + pool_.capacity() * sizeof(pool_[0]) + hazard_bytes_;
    uint64_t to_come = est_steps_ > g_->size() ? (est_steps_ - g_->size()) * StepGraph::kBytesPerStep : 0;
    uint64_t need = have + to_come + later_bytes_;
    if (need <= opts_.max_memory) return;
    auto& d = diags_.error(
        schedule_loc_,
        "instance too big to build: after " + with_commas(g_->size()) + " of " + with_commas(est_steps_) + " steps the graph holds " +
            human_bytes(static_cast<double>(have)) + "; the whole would need about " + human_bytes(static_cast<double>(need)) +
            (later_bytes_ ? " (" + human_bytes(static_cast<double>(later_bytes_)) + " of it for " + opts_.consumer + ")" : "") +
            " (N = " + std::to_string(n_) + ")",
        schedule_len_);
    d.notes.push_back({Loc{}, "the memory limit is " + human_bytes(static_cast<double>(opts_.max_memory)) +
                                  " (--max-memory); use fewer ranks, or raise the limit"});
    throw Abort{};
  }

 public:
  // What the build may count on (elaborate(): from the estimate): its steps, and what the
  // graph's consumer needs beside it.
  void budget(uint64_t steps, uint64_t later) {
    est_steps_ = steps;
    later_bytes_ = later;
  }

 private:
  [[noreturn]] void throw_too_big(const Stmt& st) {
    diags_.error(st.loc, "the step graph outgrew 32-bit step ids (4 G steps or dependencies); use fewer ranks", st.length);
    throw Abort{};
  }

  // Counts one statement or loop iteration; counting stops when the work beyond the steps built
  // passes ElabOptions::max_work, at the outermost loop running (a build runs only after its
  // count passed). Steps are bounded by the memory limit instead.
  void tick(const Stmt& st) {
    if (++est.work > sat_add(opts_.max_work, est.steps) && mode_ == Mode::Count) {
      est.too_much_work = true;
      est.work_loc = loop_stmts_.empty() ? st.loc : loop_stmts_.front()->loc;
      throw Abort{};
    }
  }

  // ------------------------------------------------------------------ statements
  // The schedule's own statements: as block(), and before a top-level `on` block, what its ranks
  // may release after their part (release()).
  void top_block(const Block& b, Frame& f) {
    for (size_t i = 0; i < b.size(); ++i) {
      const Stmt& st = *b[i];
      if (mode_ == Mode::Build && me_ < 0 && st.kind == StmtKind::On) dead_after_on_ = dead_after(b, i, f);
      tick(st);
      try {
        stmt(st, f);
      } catch (const EvalError& e) {
        dead_after_on_.clear();
        report(st, e);
      }
      dead_after_on_.clear();
    }
  }

  void block(const Block& b, Frame& f) {
    for (const auto& st : b) {
      tick(*st);
      try {
        stmt(*st, f);
      } catch (const EvalError& e) {
        report(*st, e);
      }
    }
  }

  void stmt(const Stmt& st, Frame& f) {
    // Only a program with parse errors holds one (a callee in a library folder being edited, see
    // STEPGRAPH_LIBRARY): say so here too, since a later N no longer sees the parse error.
    if (st.erroneous) {
      diags_.error(st.loc, "this declaration has a syntax error; the schedule cannot be elaborated", st.length);
      throw Abort{};
    }
    switch (st.kind) {
      case StmtKind::Let: {
        auto& s = static_cast<const LetStmt&>(st);
        f.slots[static_cast<size_t>(s.slot)] = eval(*s.value, f);
        break;
      }
      case StmtKind::For: exec_for(static_cast<const ForStmt&>(st), f); break;
      case StmtKind::If: {
        auto& s = static_cast<const IfStmt&>(st);
        if (ev(*s.cond, f)) block(s.then_body, f);
        else block(s.else_body, f);
        break;
      }
      case StmtKind::Require: {
        // A failed `require` means the schedule does not apply: report it alone, marked
        // unsupported, and stop. Counting stops there too, so an N the schedule refuses is
        // reported as such rather than sized (and perhaps refused as too big).
        auto& s = static_cast<const RequireStmt&>(st);
        if (!ev(*s.cond, f)) {
          if (mode_ == Mode::Build)
            add_error(st, EvalError{st.loc, st.length,
                                    (s.message.empty() ? "requirement failed" : s.message) + " (require " + print_cond(s) +
                                        " with N = " + std::to_string(n_) + ")"})
                .unsupported = true;
          throw Abort{};
        }
        break;
      }
      case StmtKind::Buffer: buffer(static_cast<const BufferStmt&>(st), f); break;
      case StmtKind::Init:
        if (mode_ == Mode::Build) init(static_cast<const InitStmt&>(st), f);
        break;
      case StmtKind::Expect:
        if (mode_ == Mode::Build) expect(static_cast<const ExpectStmt&>(st), f);
        break;
      case StmtKind::Send: send(static_cast<const SendStmt&>(st), f); break;
      case StmtKind::P2P: p2p(static_cast<const P2PStmt&>(st), f); break;
      case StmtKind::Wait: wait(static_cast<const WaitStmt&>(st), f); break;
      case StmtKind::Copy: copy(static_cast<const CopyStmt&>(st), f); break;
      case StmtKind::Compute: compute(static_cast<const ComputeStmt&>(st), f); break;
      case StmtKind::Coll: coll(static_cast<const CollStmt&>(st), f); break;
      case StmtKind::On: on(static_cast<const OnStmt&>(st), f); break;
      case StmtKind::Call: call(static_cast<const CallStmt&>(st), f); break;
    }
  }

  static std::string print_cond(const RequireStmt& s);

  // Keeps the loop variables in scope for error messages, and pops them however the loop ends.
  struct LoopScope {
    LoopScope(Elaborator& e, const std::string& var, Frame& f, int32_t slot, const Stmt* loop) : e_(e), loop_(loop) {
      e_.loops_.push_back({&var, &f, slot});
      if (loop_) e_.loop_stmts_.push_back(loop_);
    }
    ~LoopScope() {
      e_.loops_.pop_back();
      if (loop_) e_.loop_stmts_.pop_back();
    }
    Elaborator& e_;
    const Stmt* loop_;
  };

  void exec_for(const ForStmt& s, Frame& f) {
    int64_t lo = ev(*s.lo, f), hi = ev(*s.hi, f), step = s.step ? ev(*s.step, f) : 1;
    if (step == 0) fail(s.step->loc, s.step->length, "a loop step must not be zero");
    uint64_t iters = 0;
    if (step > 0 && hi > lo) iters = static_cast<uint64_t>((hi - lo - 1) / step + 1);
    if (step < 0 && lo > hi) iters = static_cast<uint64_t>((lo - hi - 1) / -step + 1);
    if (iters == 0) return;
    auto& var = f.slots[static_cast<size_t>(s.slot)];
    LoopScope scope(*this, s.var, f, s.slot, &s);
    bool invariant = me_ >= 0 || set_ ? s.count_invariant_rank : s.count_invariant;
    if (mode_ == Mode::Count && invariant && iters > 1) {
      // Every iteration emits as many steps as the first: count one, multiply.
      SizeEstimate before = est;
      var = Val{false, lo, {}};
      block(s.body, f);
      auto scale = [&](uint64_t SizeEstimate::*m) { est.*m = sat_add(before.*m, sat_mul(est.*m - before.*m, iters)); };
      scale(&SizeEstimate::steps);
      scale(&SizeEstimate::transfers);
      scale(&SizeEstimate::p2p);
      scale(&SizeEstimate::collectives);
      scale(&SizeEstimate::computes);
      scale(&SizeEstimate::work);
      est.work = sat_add(est.work, iters);  // the iterations themselves, as the build will run them
      if (est.work > sat_add(opts_.max_work, est.steps)) {
        est.too_much_work = true;
        est.work_loc = loop_stmts_.front()->loc;
        throw Abort{};
      }
    } else {
      std::vector<int64_t> only;
      if (me_ >= 0 && step == 1 && one_rank_iterations(s, f, lo, hi, only)) {
        // One rank's program: only the iterations whose transfer starts or ends here (counted so
        // too: a ring's N² iterations at N = 65,536 were past the work limit, for 4 N steps).
        for (int64_t v : only) {
          var = Val{false, v, {}};
          block(s.body, f);
        }
        return;
      }
      int64_t v = lo;
      for (uint64_t k = 0; k < iters; ++k, v += step) {
        tick(s);  // an iteration is work even when its body is empty or skipped
        var = Val{false, v, {}};
        block(s.body, f);
      }
    }
  }

  // Whether e reads frame slot `slot`.
  static bool uses_slot(const Expr& e, int32_t slot) {
    std::vector<int32_t> used;
    expr_slots(&e, used);
    return std::find(used.begin(), used.end(), slot) != used.end();
  }

  // The values v in [lo, hi) of loop slot `slot` for which endpoint e equals this rank, when e has
  // one of the forms a ring writes: v, or (v ± c) % M, or (c − v) % M (c and M free of v);
  // false when e has another form.
  bool solve_endpoint(const Expr& e, int32_t slot, Frame& f, int64_t lo, int64_t hi, std::vector<int64_t>& out) {
    if (e.kind == ExprKind::Var && e.slot == slot) {
      if (me_ >= lo && me_ < hi) out.push_back(me_);
      return true;
    }
    if (e.kind != ExprKind::Binary || e.bop != BinOp::Mod || uses_slot(*e.args[1], slot)) return false;
    const Expr& x = *e.args[0];
    if (x.kind != ExprKind::Binary || (x.bop != BinOp::Add && x.bop != BinOp::Sub)) return false;
    const Expr& l = *x.args[0];
    const Expr& r = *x.args[1];
    bool l_is_v = l.kind == ExprKind::Var && l.slot == slot, r_is_v = r.kind == ExprKind::Var && r.slot == slot;
    int64_t m = ev(*e.args[1], f);
    if (m <= 0) return false;  // the general path reports a zero modulus
    int64_t residue;
    if (l_is_v && !uses_slot(r, slot)) {  // (v + c) % M or (v - c) % M
      int64_t c = ev(r, f);
      residue = x.bop == BinOp::Add ? me_ - c : me_ + c;
    } else if (r_is_v && !uses_slot(l, slot)) {  // (c + v) % M or (c - v) % M
      int64_t c = ev(l, f);
      if (x.bop == BinOp::Add) residue = me_ - c;
      else residue = c - me_;
    } else {
      return false;
    }
    if (me_ >= m) return true;  // a % M is never this rank
    residue = ((residue % m) + m) % m;
    int64_t first = lo + ((residue - lo) % m + m) % m;
    for (int64_t v = first; v < hi; v += m) out.push_back(v);
    return true;
  }

  // For a loop whose body is one choreographic transfer with endpoints solve_endpoint can
  // invert, the iterations that concern this rank, in order. The others would evaluate two rank
  // expressions and emit nothing: at N = 4,096 a ring's N² of them were most of the work.
  bool one_rank_iterations(const ForStmt& s, Frame& f, int64_t lo, int64_t hi, std::vector<int64_t>& out) {
    if (s.body.size() != 1 || s.body[0]->kind != StmtKind::Send || in_on_) return false;
    const auto& send = static_cast<const SendStmt&>(*s.body[0]);
    try {
      if (!solve_endpoint(*send.from, s.slot, f, lo, hi, out) || !solve_endpoint(*send.to, s.slot, f, lo, hi, out)) return false;
    } catch (const EvalError&) {
      return false;  // the general path reports it where it happens
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return true;
  }

  // The first division that rounded down while evaluating a chunk size.
  struct LossyDiv {
    const Expr* div = nullptr;
    int64_t a = 0, b = 0, q = 0;
  };
  // Evaluates a chunk size, noting the first division in it that rounds down (`size / N` with
  // N not dividing size): integer division loses the remainder, silently, in every rank's copy.
  int64_t ev_size(const Expr& e, Frame& f, LossyDiv& lossy) {
    LossyDiv* outer = watch_;
    watch_ = &lossy;
    try {
      int64_t v = ev(e, f);
      watch_ = outer;
      return v;
    } catch (...) {
      watch_ = outer;
      throw;
    }
  }

  // A warning, once per buffer statement per elaboration (not per loop iteration or call), when
  // a division in its chunk size rounded down: the buffer holds less than the sizes say, or,
  // rounded to 0, nothing at all. `size` is the expression (`bytes E`, or the `shape` extent,
  // counted in elements, when `bytes` is false) and `value` what it gave.
  void warn_lossy(const BufferStmt& s, const Expr& size, const LossyDiv& d, uint64_t value, bool bytes, uint64_t chunks) {
    if (mode_ != Mode::Build || !d.div) return;
    if (std::find(warned_.begin(), warned_.end(), s.id) != warned_.end()) return;
    warned_.push_back(s.id);
    auto amount = [&](uint64_t v) { return std::to_string(v) + (bytes ? " byte" : " element") + (v == 1 ? "" : "s"); };
    std::string a = std::to_string(d.a), b = std::to_string(d.b);
    int64_t rem = d.a - d.q * d.b;  // nonzero; negative when b is
    uint64_t lost = static_cast<uint64_t>(rem < 0 ? -rem : rem);
    std::string msg = (bytes ? "chunk size " : "chunk extent ") + print_expr(size);
    if (d.div == &size) {
      msg += " = " + a + " / " + b + " rounds down to " + amount(value);
      if (value == 0) msg += ": every chunk of '" + s.name + "' is empty";
      else if (bytes && d.b > 0 && chunks == static_cast<uint64_t>(d.b))  // size / N over N chunks
        msg += ": the " + std::to_string(chunks) + " chunks of '" + s.name + "' hold " + std::to_string(chunks * value) + " of the " + a +
               " bytes";
      else msg += " (a remainder of " + amount(lost) + " is dropped)";
    } else {
      msg += " is " + amount(value) + ", rounded down: " + print_expr(*d.div) + " = " + a + " / " + b + " drops a remainder of " +
             std::to_string(lost);
      if (value == 0) msg += "; every chunk of '" + s.name + "' is empty";
    }
    diags_.warning(d.div->loc, msg, d.div->length);
  }

  void check_layout(const BufferStmt& s, size_t extents) {
    std::string why = layout_problem(s.layout, extents);
    if (!why.empty()) fail(s.layout_loc, static_cast<uint32_t>(s.layout.size()), why);
  }

  void buffer(const BufferStmt& s, Frame& f) {
    std::vector<uint32_t> dims;
    uint64_t chunks = 1;
    for (const auto& d : s.dims) {
      int64_t v = ev(*d, f);
      if (v < 1) fail(d->loc, d->length, "a buffer dimension must be at least 1 (got " + std::to_string(v) + ")");
      if (v > 0xffffffffLL || (chunks *= static_cast<uint64_t>(v)) > 0xffffffffULL)
        fail(d->loc, d->length, "buffer '" + s.name + "' has too many chunks (more than 2^32)");
      dims.push_back(static_cast<uint32_t>(v));
    }
    DType dt = DType::F32;
    if (!s.dtype.empty() && !parse_dtype(s.dtype, dt))
      fail(s.dtype_loc, static_cast<uint32_t>(s.dtype.size()),
           "unknown dtype '" + s.dtype + "' (use f16, bf16, f32, f64, i8, i32, i64 or u8)");
    uint64_t bytes = 0, elems = 0;
    std::vector<uint64_t> shape;
    LossyDiv lossy;
    const Expr* lossy_size = nullptr;
    uint64_t lossy_value = 0;
    if (s.bytes) {
      int64_t b = ev_size(*s.bytes, f, lossy);
      lossy_size = s.bytes.get();
      if (b < 0) fail(s.bytes->loc, s.bytes->length, "a chunk size must not be negative (got " + std::to_string(b) + " bytes)");
      bytes = static_cast<uint64_t>(b);
      lossy_value = bytes;
      elems = bytes / dtype_size(dt);
    } else {
      elems = 1;
      for (const auto& d : s.shape) {
        LossyDiv here;
        int64_t v = ev_size(*d, f, here);
        if (v < 0) fail(d->loc, d->length, "a shape extent must not be negative (got " + std::to_string(v) + ")");
        if (here.div && !lossy.div) lossy = here, lossy_size = d.get(), lossy_value = static_cast<uint64_t>(v);
        if (__builtin_mul_overflow(elems, static_cast<uint64_t>(v), &elems)) fail(d->loc, d->length, "chunk shape overflows 64 bits");
        shape.push_back(static_cast<uint64_t>(v));
      }
      if (__builtin_mul_overflow(elems, uint64_t{dtype_size(dt)}, &bytes)) fail(s.loc, s.length, "chunk size overflows 64 bits");
      if (!s.layout.empty()) check_layout(s, shape.size());
    }
    if (static_cast<u128>(bytes) * chunks > kMaxBytes) {
      const Expr* at = s.bytes ? s.bytes.get() : (s.shape.empty() ? nullptr : s.shape[0].get());
      // Fatal for the instance: every later use of the buffer would only repeat it.
      diags_.error(at ? at->loc : s.loc,
                   "buffer '" + s.name + "' would hold " + with_commas(chunks) + " chunks of " + with_commas(bytes) +
                       " bytes on every rank, more than 2^62 bytes (4 EiB): sizes and totals past that overflow 64-bit arithmetic",
                   at ? at->length : s.length);
      throw Abort{};
    }
    std::string name = f.prefix + s.name;
    View& v = f.bufs[static_cast<size_t>(s.slot)];
    for (uint32_t i = 0; i < g_->buffers.size(); ++i) {
      const BufferInfo& b = g_->buffers[i];
      if (b.name != name) continue;
      bool same = b.dims == dims && b.chunk_bytes == bytes && b.dtype == dt && b.shape == shape && b.layout == s.layout;
      // The same declaration running again (in a loop, or in a second call) with the same shape
      // names the same memory; anything else is a conflict.
      if (b.stmt != s.id || !same) {
        EvalError e{
            s.loc, s.length,
            b.stmt != s.id ? "buffer '" + name + "' is declared twice" : "buffer '" + name + "' is declared again with a different shape"};
        report(s, e);
        return;
      }
      v = View{i, 0, b.chunks, true, true, s.id};
      if (lossy.div) warn_lossy(s, *lossy_size, lossy, lossy_value, s.bytes != nullptr, chunks);
      return;
    }
    if (g_->buffers.size() >= 0xffffffu) fail(s.loc, s.length, "too many buffers");
    BufferInfo b;
    b.name = name;
    b.dims = dims;
    b.chunks = static_cast<uint32_t>(chunks);
    b.chunk_bytes = bytes;
    b.chunk_elems = elems;
    b.dtype = dt;
    b.loc = s.loc;
    b.stmt = s.id;
    b.shape = std::move(shape);
    b.layout = s.layout;
    b.layout_loc = s.layout_loc;
    b.dtype_declared = !s.dtype.empty();
    if (!s.shape.empty()) b.shape_loc = s.shape[0]->loc;
    b.dtype_loc = s.dtype_loc;
    g_->buffers.push_back(std::move(b));
    est.hazard_bytes += uint64_t{rank_slots_} * chunks * sizeof(ChunkState);
    est.chunks += chunks;
    v = View{static_cast<uint32_t>(g_->buffers.size() - 1), 0, static_cast<uint32_t>(chunks), true, true, s.id};
    if (lossy.div) warn_lossy(s, *lossy_size, lossy, lossy_value, s.bytes != nullptr, chunks);
  }

  void init(const InitStmt& s, Frame& f) {
    InitRule rule;
    rule.kind = s.mode;
    rule.range = ref(s.target, f);
    rule.stmt = s.id;
    rule.group = f.group_id;
    if (s.mode == InitKind::OnRank) {
      rule.rank = rank_of(*s.rank, f, "init");
    } else if (s.mode == InitKind::Owned) {
      if (rule.range.cnt % f.group.count)
        fail(s.target.loc, s.target.length,
             "'init … owned' needs a chunk count that is a multiple of the group size (" + std::to_string(rule.range.cnt) + " chunks, " +
                 std::to_string(f.group.count) + " members)");
    }
    g_->inits.push_back(rule);
  }

  // Two init rules giving one chunk of one rank a value is an error (checked once, at the end).
  void check_inits() {
    auto& rules = g_->inits;
    for (size_t i = 0; i < rules.size(); ++i) {
      for (size_t j = i + 1; j < rules.size() && j < i + 4096; ++j) {
        const InitRule &a = rules[i], &b = rules[j];
        if (a.range.buf != b.range.buf) continue;
        if (a.kind == InitKind::OnRank && b.kind == InitKind::OnRank && a.rank != b.rank) continue;
        uint32_t lo = std::max(a.range.lo, b.range.lo), hi = std::min(a.range.lo + a.range.cnt, b.range.lo + b.range.cnt);
        if (lo >= hi) continue;
        auto covers = [&](const InitRule& r, uint32_t rank, uint32_t chunk) {
          if (r.kind == InitKind::OnRank) return r.rank == rank;
          const GroupInfo& gr = g_->groups[r.group];
          int64_t k = gr.index_of(rank);
          if (k < 0) return false;
          if (r.kind == InitKind::Contrib) return true;
          uint32_t per = r.range.cnt / gr.count;
          return chunk >= r.range.lo + k * per && chunk < r.range.lo + (k + 1) * per;
        };
        bool clash = false;
        uint32_t crank = 0, cchunk = 0;
        for (uint32_t r = 0; r < n_ && !clash; ++r)
          for (uint32_t c = lo; c < hi && !clash; ++c)
            if (covers(a, r, c) && covers(b, r, c)) clash = true, crank = r, cchunk = c;
        if (clash) {
          Loc la = g_->stmt_locs[a.stmt], lb = g_->stmt_locs[b.stmt];
          auto& d = diags_.error(
              lb, "chunk " + g_->chunk_name(b.range.buf, cchunk) + " of rank " + std::to_string(crank) + " is initialised twice");
          d.notes.push_back({la, "first initialised here"});
        }
      }
    }
  }

  void expect(const ExpectStmt& s, Frame& f) {
    Expectation x;
    x.kind = s.what;
    x.stmt = s.id;
    x.mask = s.mask;
    if (s.what == ExpectKind::Nothing) {
      g_->expects.push_back(x);
      return;
    }
    GroupInfo gr = s.over ? gev(*s.over, f) : f.group;
    x.group = g_->intern_group(gr);
    for (const auto& r : s.bufs) x.bufs.push_back(ref(r, f));
    // K and V apart: bufs become Q, K, O (dQ, dK) as with one KV buffer; V (dV) beside them.
    if (s.what == ExpectKind::Attention || s.what == ExpectKind::AttentionBackward) {
      bool bwd = s.what == ExpectKind::AttentionBackward;
      size_t one = bwd ? 4 : 3, two = bwd ? 6 : 4;
      if (x.bufs.size() != one && x.bufs.size() != two)
        fail(s.loc, s.length,
             bwd ? "expect attention_backward takes Q, KV, dQ, dKV or Q, K, V, dQ, dK, dV, then the mask"
                 : "expect attention takes Q, KV, O or Q, K, V, O, then the mask");
      if (x.bufs.size() == two) {
        x.split_kv = true;
        x.v = x.bufs[2];
        if (bwd) {
          x.dv = x.bufs[5];
          x.bufs = {x.bufs[0], x.bufs[1], x.bufs[3], x.bufs[4]};
        } else {
          x.bufs = {x.bufs[0], x.bufs[1], x.bufs[3]};
        }
        if (x.v.cnt != x.bufs[1].cnt || g_->buffers[x.v.buf].chunk_bytes != g_->buffers[x.bufs[1].buf].chunk_bytes)
          fail(s.bufs[2].loc, s.bufs[2].length, "expect attention needs V with the chunks of K (as many, as large)");
        if (bwd && (x.dv.cnt != x.v.cnt))
          fail(s.bufs[5].loc, s.bufs[5].length, "expect attention_backward needs dV with as many chunks as V");
      }
    }
    if (s.root) {
      x.root = rank_of(*s.root, f, "root");
      if (gr.index_of(x.root) < 0)
        fail(s.root->loc, s.root->length, "the root is not a member of the group (root " + std::to_string(x.root) + ")");
    }
    auto blocked = [&](size_t i) {
      if (x.bufs[i].cnt % gr.count)
        fail(s.bufs[i].loc, s.bufs[i].length,
             std::string("expect ") + expect_name(s.what) + " needs a chunk count that is a multiple of the group size (" +
                 std::to_string(x.bufs[i].cnt) + " chunks, " + std::to_string(gr.count) + " members)");
    };
    auto attention_heads = [&] {
      if (!s.heads) return;
      int64_t h = ev(*s.heads, f);
      if (h < 1) fail(s.heads->loc, s.heads->length, "heads must be at least 1 (got " + std::to_string(h) + ")");
      x.heads = static_cast<uint32_t>(h);
      for (size_t i : {size_t{0}, size_t{1}})
        if (x.bufs[i].cnt % x.heads)
          fail(s.bufs[i].loc, s.bufs[i].length,
               "with heads " + std::to_string(h) + " the chunk count must be a multiple of it (" + std::to_string(x.bufs[i].cnt) +
                   " chunks): item x is block x / heads, head x % heads");
    };
    switch (s.what) {
      case ExpectKind::ReduceScatter:
      case ExpectKind::Allgather:
      case ExpectKind::Gather:
      case ExpectKind::Scatter: blocked(0); break;
      case ExpectKind::Alltoall:
        blocked(0);
        blocked(1);
        if (x.bufs[0].cnt != x.bufs[1].cnt)
          fail(s.bufs[1].loc, s.bufs[1].length, "expect alltoall needs IN and OUT of the same chunk count");
        break;
      case ExpectKind::Attention:
        attention_heads();
        g_->buffers[x.bufs[2].buf].accumulator = true;  // O: a never-written chunk is the empty output
        if (x.bufs[2].cnt != x.bufs[0].cnt) fail(s.bufs[2].loc, s.bufs[2].length, "expect attention needs O with as many chunks as Q");
        break;
      case ExpectKind::AttentionBackward:
        attention_heads();
        g_->buffers[x.bufs[2].buf].accumulator = true;  // dQ and dKV: never-written chunks are zero gradients
        g_->buffers[x.bufs[3].buf].accumulator = true;
        if (x.split_kv) g_->buffers[x.dv.buf].accumulator = true;
        if (x.bufs[2].cnt != x.bufs[0].cnt || x.bufs[3].cnt != x.bufs[1].cnt)
          fail(s.loc, s.length, "expect attention_backward needs dQ shaped like Q and dKV shaped like KV");
        break;
      default: break;
    }
    g_->expects.push_back(std::move(x));
  }

  void check_same_bytes(const Range& a, const Range& b, const Ref& at, const char* what) {
    uint64_t ba = g_->range_bytes(a), bb = g_->range_bytes(b);
    if (ba != bb)
      fail(at.loc, at.length,
           std::string(what) + " of different sizes (" + std::to_string(ba) + " bytes from " + g_->range_name(a) + ", " +
               std::to_string(bb) + " bytes into " + g_->range_name(b) + ")");
  }

  void send(const SendStmt& s, Frame& f) {
    if (in_on_) fail(s.loc, s.length, "a choreographic 'send … from … to …' cannot appear inside an 'on' block (write 'send B[i] to P')");
    if (set_) fail(s.loc, s.length, "a choreographic transfer in a build of some ranks' programs (MPI-style programs only)");
    if (mode_ == Mode::Count && me_ < 0) {
      ++est.transfers;
      est.steps += 2;
      return;
    }
    uint32_t a = rank_of(*s.from, f, "source");
    uint32_t p = rank_of(*s.to, f, "destination");
    if (mode_ == Mode::Count) {
      est.transfers += mine(a) || mine(p);
      est.steps += mine(a) + mine(p);
      return;
    }
    // One rank's program: a transfer between two other ranks leaves nothing here. Its chunk
    // indices are not even evaluated (they are, and checked, on the two ranks it concerns):
    // that is most of the work of elaborating one rank of a large ring.
    if (me_ >= 0 && !mine(a) && !mine(p)) return;
    Range src = ref(s.src, f);
    Range dst = s.into.present() ? ref(s.into, f) : src;
    if (s.into.present()) check_same_bytes(src, dst, s.into, "a send between chunks");
    uint8_t rflags = s.reduce ? static_cast<uint8_t>(kFlagReduce | op_flag(s.op)) : 0;
    Ranges none, rd;
    if (me_ < 0) {
      StepId send_id = static_cast<StepId>(g_->size());
      rd.add(src);
      emit(StepKind::Send, 0, a, s, src, send_id + 1, rd, none);
      Ranges rrd, rwr;
      if (s.reduce) rrd.add(dst);
      rwr.add(dst);
      emit(StepKind::Recv, rflags, p, s, dst, send_id, rrd, rwr);
    } else {
      if (mine(a)) {
        rd.add(src);
        emit(StepKind::Send, 0, a, s, src, p, rd, none);
      }
      if (mine(p)) {
        Ranges rrd, rwr;
        if (s.reduce) rrd.add(dst);
        rwr.add(dst);
        emit(StepKind::Recv, rflags, p, s, dst, a, rrd, rwr);
      }
    }
  }

  void need_on(const Stmt& s, const char* what) {
    if (!in_on_)
      fail(s.loc, s.length,
           std::string("'") + what + "' is a local-view statement: put it inside an 'on' block" +
               (std::string(what) == "send" ? " (or write a choreographic 'send B[i] from A to P')" : ""));
  }

  void p2p(const P2PStmt& s, Frame& f) {
    const char* what = s.is_send ? (s.nonblocking ? "isend" : "send") : (s.nonblocking ? "irecv" : "recv");
    need_on(s, what);
    uint32_t rank = on_rank_;
    if (mode_ == Mode::Count) {
      if (mine(rank)) ++est.steps, ++est.p2p;
      return;
    }
    P2PInfo info;
    info.peer = s.peer ? rank_of(*s.peer, f, s.is_send ? "destination" : "source") : kAnyRank;
    info.tag = 0;
    if (s.any_tag) {
      info.tag = kAnyTag;
    } else if (s.tag) {
      int64_t t = ev(*s.tag, f);
      if (t < 0 || t > 0x7fffffff) fail(s.tag->loc, s.tag->length, "a tag must be in 0 .. 2^31-1 (got " + std::to_string(t) + ")");
      info.tag = static_cast<int32_t>(t);
    }
    info.comm = f.group_id;
    if (f.group.index_of(rank) < 0 || (info.peer != kAnyRank && f.group.index_of(info.peer) < 0))
      fail(s.loc, s.length, "both ranks of a local-view transfer must belong to the group in scope");
    Range r = ref(s.buf, f);
    if (!mine(rank)) return;
    uint8_t flags = kFlagLocal;
    if (s.nonblocking) flags |= kFlagNonblocking;
    if (!s.is_send) {
      if (s.reduce) flags |= static_cast<uint8_t>(kFlagReduce | op_flag(s.op));
      if (info.peer == kAnyRank) flags |= kFlagAnySource;
      if (info.tag == kAnyTag) flags |= kFlagAnyTag;
    }
    uint32_t idx = static_cast<uint32_t>(g_->p2p.size());
    g_->p2p.push_back(info);
    Ranges rd, wr;
    if (s.is_send) rd.add(r);
    else {
      if (s.reduce) rd.add(r);
      wr.add(r);
    }
    StepId id = emit(s.is_send ? StepKind::Send : StepKind::Recv, flags, rank, s, r, idx, rd, wr);
    if (s.nonblocking) {
      RankState& rs = ranks_[rslot(rank)];
      rs.outstanding.push_back({s.handle, id, r, !s.is_send});
    }
  }

  void wait(const WaitStmt& s, Frame& f) {
    need_on(s, s.all ? "waitall" : "wait");
    uint32_t rank = on_rank_;
    if (mode_ == Mode::Count) {
      if (mine(rank)) ++est.steps;
      return;
    }
    if (!mine(rank)) return;
    RankState& rs = ranks_[rslot(rank)];
    std::vector<RankState::Handle> done;
    if (s.all) {
      done = std::move(rs.outstanding);
      rs.outstanding.clear();
    } else {
      for (size_t i = 0; i < s.handles.size(); ++i) {
        const std::string& h = s.handles[i];
        // The latest operation issued under this name (an earlier one with the name was dropped).
        auto it = std::find_if(rs.outstanding.rbegin(), rs.outstanding.rend(), [&](const auto& x) { return x.name == h; });
        if (it == rs.outstanding.rend()) {
          auto w = std::find_if(rs.waited.begin(), rs.waited.end(), [&](const auto& x) { return x.first == h; });
          std::string msg = w != rs.waited.end() ? "handle '" + h + "' is waited twice on rank " + std::to_string(rank) +
                                                       " (first wait at line " + std::to_string(ses_.stmt_locs[w->second].line) + ")"
                                                 : "unknown handle '" + h + "' on rank " + std::to_string(rank) + " (no isend/irecv … as " +
                                                       h + " before this wait)";
          // The verifier reports this as a lifecycle defect of the program (with the rest of
          // its analysis); compile and check refuse it as an input error.
          if (opts_.lifecycle_as_findings) {
            bad_waits_.push_back({rank, s.handle_locs[i], msg});
            continue;
          }
          fail(s.handle_locs[i], static_cast<uint32_t>(h.size()), msg);
        }
        done.push_back(*it);
        rs.outstanding.erase(std::next(it).base());
        // Drop earlier same-named handles from the search: they stay outstanding for waitall.
        rs.waited.emplace_back(h, s.id);
      }
    }
    if (s.all)
      for (const auto& d : done)
        if (!d.name.empty()) rs.waited.emplace_back(d.name, s.id);
    uint32_t off = static_cast<uint32_t>(g_->wait_handles.size());
    g_->wait_handles.push_back(static_cast<StepId>(done.size()));
    std::vector<StepId> extra;
    for (const auto& d : done) {
      g_->wait_handles.push_back(d.step);
      extra.push_back(d.step);
    }
    Ranges none;
    StepId id = emit(StepKind::Wait, kFlagLocal, rank, s, Range{}, off, none, none, extra.data(), extra.size());
    for (auto& b : bad_waits_) g_->bad_waits.push_back(BadWait{id, b.rank, b.loc, std::move(b.msg)});
    bad_waits_.clear();
    // After the wait, later accesses to the handles' chunks are ordered by the wait.
    for (const auto& d : done) {
      Ranges rd, wr;
      (d.is_recv ? wr : rd).add(d.range);
      register_access(id, rank, rd, wr);
    }
  }

  // The ranks a global-view local statement runs on: `at R`, or every member of the group.
  template <class Fn>
  void for_targets(const Expr* at, Frame& f, Fn&& fn) {
    if (in_on_) {
      if (at) fail(at->loc, at->length, "'at' is not needed inside an 'on' block: the statement runs on that rank");
      fn(on_rank_);
      return;
    }
    if (at) {
      fn(rank_of(*at, f, "'at'"));
      return;
    }
    for (uint32_t k = 0; k < f.group.count; ++k) fn(f.group.member(k));
  }

  void copy(const CopyStmt& s, Frame& f) {
    if (mode_ == Mode::Count) {
      for_targets(s.at.get(), f, [&](uint32_t r) { est.steps += mine(r); });
      return;
    }
    Range src = ref(s.src, f), dst = ref(s.dst, f);
    check_same_bytes(src, dst, s.dst, s.reduce ? "a reduce between chunks" : "a copy between chunks");
    for_targets(s.at.get(), f, [&](uint32_t r) {
      if (!mine(r)) return;
      uint32_t idx = static_cast<uint32_t>(g_->ranges.size());
      g_->ranges.push_back(src);
      Ranges rd, wr;
      rd.add(src);
      if (s.reduce) rd.add(dst);
      wr.add(dst);
      uint8_t flags = in_on_ ? kFlagLocal : 0;
      if (s.reduce) flags |= op_flag(s.op);
      emit(s.reduce ? StepKind::Reduce : StepKind::Copy, flags, r, s, dst, idx, rd, wr);
    });
  }

  void compute(const ComputeStmt& s, Frame& f) {
    if (mode_ == Mode::Count) {
      for_targets(s.at.get(), f, [&](uint32_t r) {
        est.steps += mine(r);
        est.computes += mine(r);
      });
      return;
    }
    ComputeInfo c;
    c.kind = s.what;
    c.mask = s.mask;
    if (stmt_name_.size() <= s.id) stmt_name_.resize(s.id + 1, kNil);  // (a name search a step was 2 % of a big build)
    if (stmt_name_[s.id] == kNil) stmt_name_[s.id] = g_->intern_name(s.name);
    c.name = stmt_name_[s.id];
    if (s.flops) {
      int64_t fl = ev(*s.flops, f);
      if (fl < 0) fail(s.flops->loc, s.flops->length, "flops must not be negative (got " + std::to_string(fl) + ")");
      c.flops = static_cast<double>(fl);
    }
    std::vector<Range>& rd = scratch_rd_;  // (reused: no allocation a step)
    std::vector<Range>& wr = scratch_wr_;
    rd.clear();
    wr.clear();
    if (s.what == ComputeKind::Generic) {
      for (const auto& r : s.reads) rd.push_back(ref(r, f));
      for (const auto& r : s.writes) wr.push_back(ref(r, f));
    } else {
      for (const auto& r : s.inputs) rd.push_back(ref(r, f));
      Range o0 = ref(s.outputs[0], f);
      if (rd[1].cnt != 1)
        fail(s.inputs[1].loc, s.inputs[1].length, "an attention tile takes one KV chunk (" + std::to_string(rd[1].cnt) + " given)");
      Range v{};
      if (rd.size() == 3) {  // attn(Q[i], K[j], V[j]): V goes after the accumulators (ComputeInfo::split_kv)
        c.split_kv = true;
        v = rd.back();
        rd.pop_back();
        if (v.cnt != 1)
          fail(s.inputs[2].loc, s.inputs[2].length, "an attention tile takes one V chunk (" + std::to_string(v.cnt) + " given)");
        if (g_->buffers[v.buf].chunk_bytes != g_->buffers[rd[1].buf].chunk_bytes)
          fail(s.inputs[2].loc, s.inputs[2].length, "an attention tile needs K and V chunks of one size");
      }
      if (rd[0].cnt != o0.cnt)
        fail(s.outputs[0].loc, s.outputs[0].length, "an attention tile needs Q and its output with the same chunk count");
      for (size_t k = 1; k < s.outputs.size(); ++k)
        if (ref(s.outputs[k], f).cnt != 1)
          fail(s.outputs[k].loc, s.outputs[k].length,
               c.split_kv ? (k == 1 ? "attn_bwd writes one dK chunk" : "attn_bwd writes one dV chunk") : "attn_bwd writes one dKV chunk");
      for (const auto& r : s.outputs) {
        Range o = ref(r, f);
        rd.push_back(o);  // the accumulator is read and written
        wr.push_back(o);
        g_->buffers[o.buf].accumulator = true;
      }
      if (c.split_kv) rd.push_back(v);
    }
    if (rd.size() + wr.size() > 12) fail(s.loc, s.length, "a compute step may touch at most 12 chunk ranges");
    uint32_t idx = kNil;
    for_targets(s.at.get(), f, [&](uint32_t r) {
      if (!mine(r)) return;
      if (idx == kNil) idx = intern_compute(c, rd, wr);
      Ranges hrd, hwr;
      for (const auto& x : rd) hrd.add(x);
      for (const auto& x : wr) hwr.add(x);
      Range primary = !wr.empty() ? wr[0] : (!rd.empty() ? rd[0] : Range{});
      emit(StepKind::Compute, in_on_ ? kFlagLocal : 0, r, s, primary, idx, hrd, hwr);
    });
  }

  void coll(const CollStmt& s, Frame& f) {
    GroupInfo gr = s.over ? gev(*s.over, f) : f.group;
    if (mode_ == Mode::Count) {
      if (in_on_) {
        est.steps += mine(on_rank_);
        est.collectives += mine(on_rank_);
      } else if (me_ >= 0) {
        bool member = gr.index_of(static_cast<uint32_t>(me_)) >= 0;
        est.steps += member;
        est.collectives += member;
      } else if (set_) {
        for (uint32_t r : opts_.only_ranks) {
          bool member = gr.index_of(r) >= 0;
          est.steps += member;
          est.collectives += member;
        }
      } else {
        est.steps += gr.count;
        est.collectives += gr.count;
      }
      return;
    }
    CollInfo c;
    c.kind = s.what;
    c.op = s.op;
    c.group = g_->intern_group(gr);
    Range r{};
    if (s.buf.present()) r = ref(s.buf, f);
    if (s.root) {
      c.root = rank_of(*s.root, f, "root");
      if (gr.index_of(c.root) < 0)
        fail(s.root->loc, s.root->length, "the root is not a member of the group (root " + std::to_string(c.root) + ")");
    }
    if (s.what == CollKind::Allgather || s.what == CollKind::ReduceScatter || s.what == CollKind::Alltoall) {
      if (r.cnt % gr.count)
        fail(s.buf.loc, s.buf.length,
             std::string(coll_name(s.what)) + " needs a chunk count that is a multiple of the group size (" + std::to_string(r.cnt) +
                 " chunks, " + std::to_string(gr.count) + " members)");
    }
    if (s.into.present()) {
      c.into = ref(s.into, f);
      if (c.into.cnt != r.cnt || g_->range_bytes(c.into) != g_->range_bytes(r))
        fail(s.into.loc, s.into.length, "alltoall … into … needs two slices of the same size");
    }
    auto one = [&](uint32_t rank) {
      if (!mine(rank)) return;
      uint64_t key = (uint64_t{c.group} << 32) | rank;
      CollInfo ci = c;
      ci.seq = coll_seq_[key]++;
      // The members of one call share its entry (a job has millions of member steps, each
      // instance's alike); a member that disagrees gets its own.
      auto [at, added] = coll_entry_.try_emplace((uint64_t{ci.group} << 32) | ci.seq, static_cast<uint32_t>(g_->colls.size()));
      uint32_t idx = at->second;
      bool share = !added;
      if (share) {
        const CollInfo& known = g_->colls[idx];
        share = known.kind == ci.kind && known.op == ci.op && known.root == ci.root && known.into == ci.into;
      }
      if (!share) {
        idx = static_cast<uint32_t>(g_->colls.size());
        g_->colls.push_back(ci);
      }
      std::vector<Range> rv, wv;
      collective_access(ci, gr, rank, r, false, rv);
      collective_access(ci, gr, rank, r, true, wv);
      Ranges rd, wr;
      for (const auto& x : rv) rd.add(x);
      for (const auto& x : wv) wr.add(x);
      emit(StepKind::Collective, in_on_ ? kFlagLocal : 0, rank, s, r, idx, rd, wr);
    };
    if (in_on_) {
      if (gr.index_of(on_rank_) < 0)
        fail(s.loc, s.length, "rank " + std::to_string(on_rank_) + " is not a member of the collective's group");
      one(on_rank_);
    } else {
      for (uint32_t k = 0; k < gr.count; ++k) one(gr.member(k));
    }
  }

  void on(const OnStmt& s, Frame& f) {
    if (in_on_) fail(s.loc, s.length, "'on' blocks cannot be nested");
    auto body = [&](uint32_t r) {
      in_on_ = true;
      on_rank_ = r;
      try {
        block(s.body, f);
      } catch (...) {
        in_on_ = false;
        throw;
      }
      in_on_ = false;
      if (!dead_after_on_.empty()) release(r);
    };
    if (s.rank) {
      uint32_t r = rank_of(*s.rank, f, "'on'");
      if (mode_ == Mode::Count && !mine(r)) return;
      body(r);
      return;
    }
    int64_t lo = ev(*s.lo, f), hi = ev(*s.hi, f), step = s.step ? ev(*s.step, f) : 1;
    if (step == 0) fail(s.step->loc, s.step->length, "a rank range step must not be zero");
    auto& var = f.slots[static_cast<size_t>(s.slot)];
    LoopScope scope(*this, s.var, f, s.slot, nullptr);
    for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) {
      if (v < 0 || v >= n_) {
        var = Val{false, v, {}};
        fail(s.lo->loc, s.lo->length, "'on' rank out of range (rank " + std::to_string(v) + ", valid 0 .. " + std::to_string(n_ - 1) + ")");
      }
      if (!mine(static_cast<uint32_t>(v))) continue;  // some ranks' programs: the other ranks' blocks are skipped
      var = Val{false, v, {}};
      body(static_cast<uint32_t>(v));
    }
  }

  void call(const CallStmt& s, Frame& f) {
    if (in_on_) fail(s.loc, s.length, "'call' cannot appear inside an 'on' block");
    if (f.depth >= kMaxCallDepth) fail(s.loc, s.length, "calls nested deeper than 64 (recursion without end?)");
    Target t = ses_.find_callee(*f.prog, s.callee);
    if (!t.schedule)
      fail(s.callee_loc, static_cast<uint32_t>(s.callee.size()),
           "unknown schedule '" + s.callee + "' (not in this file nor in the library)");
    const Schedule& c = *t.schedule;
    Frame nf;
    nf.prog = t.program;
    nf.sched = &c;
    nf.slots.resize(c.num_slots);
    nf.bufs.resize(c.num_buffers);
    nf.group = f.group;
    nf.group_id = f.group_id;
    nf.prefix = f.prefix + c.name + ".";
    nf.depth = f.depth + 1;
    std::vector<bool> set(c.params.size(), false);
    size_t positional = 0;
    for (const auto& a : s.args) {
      if (!a.key.empty()) {
        auto it = std::find_if(c.params.begin(), c.params.end(), [&](const Param& p) { return p.name == a.key; });
        if (it == c.params.end() || it->kind != ParamKind::Int)
          fail(a.loc, static_cast<uint32_t>(a.key.size()), "schedule '" + c.name + "' has no integer parameter '" + a.key + "'");
        size_t i = static_cast<size_t>(it - c.params.begin());
        if (set[i]) fail(a.loc, static_cast<uint32_t>(a.key.size()), "parameter '" + a.key + "' is given twice");
        nf.slots[static_cast<size_t>(it->slot)] = Val{false, ev(*a.value, f), {}};
        set[i] = true;
        continue;
      }
      // Positional: the next group or buffer parameter.
      while (positional < c.params.size() && c.params[positional].kind == ParamKind::Int) ++positional;
      if (positional >= c.params.size())
        fail(a.loc, 1, "too many arguments for schedule '" + c.name + "' (pass integer parameters as key = value)");
      const Param& p = c.params[positional];
      if (p.kind == ParamKind::Group) {
        if (a.ref.present() && !a.bare_name)
          fail(a.loc, a.ref.length, "parameter '" + p.name + "' of '" + c.name + "' is a group, not a buffer");
        GroupInfo gr = gev(*a.value, f);
        nf.slots[static_cast<size_t>(p.slot)] = Val{true, 0, gr};
        nf.group = gr;
        nf.group_id = g_->intern_group(gr);
      } else {
        if (!a.ref.present()) fail(a.loc, 1, "parameter '" + p.name + "' of '" + c.name + "' is a buffer");
        Range r = ref(a.ref, f);
        nf.bufs[static_cast<size_t>(p.slot)] = View{r.buf, r.lo, r.cnt, true, false, kNil};
      }
      set[positional] = true;
      ++positional;
    }
    for (size_t i = 0; i < c.params.size(); ++i) {
      const Param& p = c.params[i];
      if (set[i]) continue;
      if (p.kind != ParamKind::Int)
        fail(s.loc, s.length,
             "missing argument for " + std::string(p.kind == ParamKind::Group ? "group" : "buffer") + " parameter '" + p.name + "' of '" +
                 c.name + "'");
      if (!p.def) fail(s.loc, s.length, "missing value for parameter '" + p.name + "' of '" + c.name + "' (pass " + p.name + " = …)");
      nf.slots[static_cast<size_t>(p.slot)] = Val{false, ev(*p.def, nf), {}};
    }
    block(c.body, nf);
  }

  // ------------------------------------------------------------------ parameters
  void bind_top_params(const Schedule& s, Frame& f) {
    std::vector<bool> used(opts_.sets.size(), false);
    for (const auto& p : s.params) {
      const std::pair<std::string, std::string>* set = nullptr;
      for (size_t i = 0; i < opts_.sets.size(); ++i)
        if (opts_.sets[i].first == p.name) set = &opts_.sets[i], used[i] = true;
      try {
        if (set) {
          f.slots[static_cast<size_t>(p.slot)] = Val{false, set_value(*set), {}};
          g_->params.emplace_back(p.name, f.slots[static_cast<size_t>(p.slot)].i);
        } else if (p.def) {
          f.slots[static_cast<size_t>(p.slot)] = Val{false, ev(*p.def, f), {}};
          g_->params.emplace_back(p.name, f.slots[static_cast<size_t>(p.slot)].i);
        } else {
          diags_.error(p.loc, "parameter '" + p.name + "' of '" + s.name + "' has no default: give it with --set " + p.name + "=…",
                       static_cast<uint32_t>(p.name.size()));
        }
      } catch (const EvalError& e) {
        diags_.error(e.loc, e.msg, e.length);
      }
    }
    for (size_t i = 0; i < opts_.sets.size(); ++i) {
      if (used[i]) continue;
      std::string names;
      for (const auto& p : s.params) names += (names.empty() ? "" : ", ") + p.name;
      auto& d = diags_.error(
          s.loc, "unknown parameter '" + opts_.sets[i].first + "' (--set " + opts_.sets[i].first + "=" + opts_.sets[i].second + ")",
          static_cast<uint32_t>(s.name.size()));
      d.notes.push_back(
          {Loc{}, "schedule '" + s.name + "' takes " + (names.empty() ? std::string("no parameters") : "parameters: " + names)});
    }
  }

  int64_t set_value(const std::pair<std::string, std::string>& kv) {
    uint32_t file = ses_.sources.add("--set " + kv.first, kv.second);
    uint64_t before = diags_.error_count();
    auto e = parse_expression(ses_.sources, file, diags_);
    if (!e) {
      if (diags_.error_count() > before) return 0;  // the parser said what is wrong
      throw EvalError{Loc{file, 1, 1}, 1, "bad value for --set " + kv.first};
    }
    Frame empty;
    fix_names(*e, file);
    return ev(*e, empty);
  }

  // A --set value may only use N.
  void fix_names(Expr& e, uint32_t file) {
    if (e.kind == ExprKind::Var) {
      if (e.name == "N") e.slot = -2;
      else
        throw EvalError{e.loc, static_cast<uint32_t>(e.name.size()), "a --set value may only use numbers and N (found '" + e.name + "')"};
    }
    if (e.kind == ExprKind::GroupAt || e.kind == ExprKind::Ranks || e.kind == ExprKind::World ||
        (e.kind == ExprKind::Func && e.fn == Func::Size))
      throw EvalError{e.loc, e.length, "a --set value must be an integer"};
    for (auto& a : e.args) fix_names(*a, file);
  }

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

std::string Elaborator::print_cond(const RequireStmt& s) { return print_expr(*s.cond); }

}  // namespace

std::string unsupported_reason(const Diagnostic& d) {
  // The elaborator writes "MESSAGE (require COND with N = n[; context])": the last " (require ".
  size_t k = d.message.rfind(" (require ");
  return k == std::string::npos ? d.message : d.message.substr(0, k);
}

SizeEstimate estimate_size(Session& session, const Target& target, const ElabOptions& opts) {
  Elaborator e(session, opts, Mode::Count);
  bool ok = e.run(target, 0);
  SizeEstimate est = e.est;
  est.ok = ok && !est.too_much_work;
  // Steps and one dependency each, plus the hazard state, plus slack for side tables.
  // Saturating: a count past 2^64 must still read as too big, not wrap to a small number.
  est.bytes = sat_add(sat_add(sat_mul(est.steps, StepGraph::kBytesPerStep), est.hazard_bytes),
                      sat_add(sat_mul(est.p2p, sizeof(P2PInfo)), uint64_t{16} << 20));
  // (Compute and collective entries are shared: one per distinct work and one per instance, not
  // one a step. Where they are not, the build's own watch refuses: Elaborator::watch_memory.)
  return est;
}

std::unique_ptr<StepGraph> elaborate(Session& session, const Target& target, const ElabOptions& opts, SizeEstimate* out) {
  SizeEstimate est = estimate_size(session, target, opts);
  if (out) *out = est;
  const Schedule& s = *target.schedule;
  if (est.too_much_work) {
    session.diags.error(
        est.work_loc,
        "elaboration would run more than " + with_commas(opts.max_work) +
            " statements or loop iterations beyond the steps it builds (a loop far longer than the steps it emits?); refusing to "
            "build (N = " +
            std::to_string(opts.nranks) + ")",
        3);
    return nullptr;
  }
  uint64_t later = opts.consumer_bytes ? opts.consumer_bytes(est, opts.nranks) : 0;
  uint64_t need = sat_add(est.bytes, later);
  if (est.steps >= 0xfffffff0ULL || (opts.max_memory && need > opts.max_memory)) {
    if (out) out->too_big = true;
    auto& d = session.diags.error(s.loc,
                                  "instance too big to build: " + with_commas(est.steps) + " steps (" + with_commas(est.transfers) +
                                      " transfers) for N = " + std::to_string(opts.nranks) + " would need about " + human_bytes(need) +
                                      (later ? std::string(" (") + human_bytes(later) + " of it for " + opts.consumer + ")" : "") +
                                      (est.steps >= 0xfffffff0ULL ? " and more than 2^32 step ids" : ""),
                                  static_cast<uint32_t>(s.name.size()));
    if (opts.max_memory)
      d.notes.push_back(
          {Loc{}, "the memory limit is " + human_bytes(opts.max_memory) + " (--max-memory); use fewer ranks, or raise the limit"});
    return nullptr;
  }
  Elaborator e(session, opts, Mode::Build);
  e.budget(est.steps, later);
  if (!e.run(target, est.ok ? est.steps : 0)) return nullptr;
  return std::move(e.g_);
}

}  // namespace sg
