// The abstract syntax tree of a schedule file. Names are resolved to frame slots by resolve.cpp
// so elaboration never looks a name up by string.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/kinds.hpp"
#include "core/dsl/source.hpp"

namespace sg {

enum class ExprKind : uint8_t { Int, Var, Unary, Binary, Cond, Func, GroupAt, Ranks, World, BufLen };
enum class BinOp : uint8_t { Add, Sub, Mul, Div, Mod, Pow, Eq, Ne, Lt, Le, Gt, Ge, And, Or };
enum class UnOp : uint8_t { Neg, Not };
enum class Func : uint8_t { Min, Max, Pow2, Cdiv, Log2, Flog2, IsPow2, Size };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::Int;
  Loc loc;
  uint32_t length = 1;
  int64_t value = 0;
  std::string name;  // Var and GroupAt: the variable; Func: the function's name
  BinOp bop = BinOp::Add;
  UnOp uop = UnOp::Neg;
  Func fn = Func::Min;
  std::vector<ExprPtr> args;  // operands; GroupAt: the index; Ranks: start, count[, stride]
  int32_t slot = -1;          // Var, GroupAt: frame slot (resolve.cpp); -2 means N
  uint32_t depth = 1;         // height of the tree below it (the parser bounds it)
};

// One index position of a chunk reference: a single index or a half-open range lo .. hi.
struct Index {
  ExprPtr lo;
  ExprPtr hi;  // null for a single index
};

// B, B[i], B[i, j], B[i .. j]: names a contiguous range of B's flattened chunks.
struct Ref {
  std::string buf;
  Loc loc;
  uint32_t length = 1;
  std::vector<Index> idx;
  int32_t slot = -1;  // buffer slot in the schedule's frame
  bool present() const { return !buf.empty(); }
};

// ReduceOp, Mask, CollKind, ExpectKind, InitKind, ComputeKind: core/base/kinds.hpp.

enum class StmtKind : uint8_t { Let, For, If, Require, Buffer, Init, Expect, Send, P2P, Wait, Copy, Compute, Coll, On, Call };

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct Stmt {
  explicit Stmt(StmtKind k) : kind(k) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  Loc loc;
  uint32_t length = 1;  // width of the leading keyword, for carets
  uint32_t id = 0;      // index into the session's statement table (source locations of steps)
  // A declaration (`let`, `buffer`) whose name was read but whose rest did not parse: kept so the
  // name stays declared and later uses raise no errors of their own. Its parts may be missing;
  // nothing elaborates or prints it (the parse error has been reported).
  bool erroneous = false;
};

struct LetStmt : Stmt {
  LetStmt() : Stmt(StmtKind::Let) {}
  std::string name;
  ExprPtr value;
  int32_t slot = -1;
};

struct ForStmt : Stmt {
  ForStmt() : Stmt(StmtKind::For) {}
  std::string var;
  ExprPtr lo, hi, step;  // step may be null
  Block body;
  int32_t slot = -1;
  // Set by resolve: no control expression in the body depends on the loop variable, so the
  // body emits the same number of steps in every iteration (used by the size estimate).
  bool count_invariant = false;
  bool count_invariant_rank = false;  // the same, also for one rank's program
};

struct IfStmt : Stmt {
  IfStmt() : Stmt(StmtKind::If) {}
  ExprPtr cond;
  Block then_body, else_body;
};

struct RequireStmt : Stmt {
  RequireStmt() : Stmt(StmtKind::Require) {}
  ExprPtr cond;
  std::string message;
};

struct BufferStmt : Stmt {
  BufferStmt() : Stmt(StmtKind::Buffer) {}
  std::string name;
  std::vector<ExprPtr> dims;
  ExprPtr bytes;               // either bytes…
  std::vector<ExprPtr> shape;  // …or shape
  std::string layout;          // `layout bshd` after a shape: what its extents are (attention)
  Loc layout_loc;
  std::string dtype;  // empty: f32
  Loc dtype_loc;
  int32_t slot = -1;
};

struct InitStmt : Stmt {
  InitStmt() : Stmt(StmtKind::Init) {}
  InitKind mode = InitKind::Contrib;
  Ref target;    // for OnRank, may carry an index
  ExprPtr rank;  // OnRank
};

struct ExpectStmt : Stmt {
  ExpectStmt() : Stmt(StmtKind::Expect) {}
  ExpectKind what = ExpectKind::Nothing;
  std::vector<Ref> bufs;
  ExprPtr root;
  Mask mask = Mask::None;
  ExprPtr heads;  // attention: head groups (`, heads H`), may be null (one)
  ExprPtr over;   // group, may be null
};

// Choreographic transfer: send B[i] from A to P [into B2[j]] [reduce [OP]].
struct SendStmt : Stmt {
  SendStmt() : Stmt(StmtKind::Send) {}
  Ref src;
  ExprPtr from, to;
  Ref into;
  bool reduce = false;
  ReduceOp op = ReduceOp::Sum;
};

// Local-view point-to-point: send/isend/recv/irecv inside an `on` block.
struct P2PStmt : Stmt {
  P2PStmt() : Stmt(StmtKind::P2P) {}
  bool is_send = true;
  bool nonblocking = false;
  Ref buf;
  ExprPtr peer;  // null: any (receives only)
  ExprPtr tag;   // null: tag 0, or any when any_tag
  bool any_tag = false;
  bool reduce = false;
  ReduceOp op = ReduceOp::Sum;
  std::string handle;  // `as h`, may be empty
};

struct WaitStmt : Stmt {
  WaitStmt() : Stmt(StmtKind::Wait) {}
  bool all = false;
  std::vector<std::string> handles;
  std::vector<Loc> handle_locs;
};

// copy B[i] into B2[j] / reduce B[i] into B2[j] [op OP]  [at R]
struct CopyStmt : Stmt {
  CopyStmt() : Stmt(StmtKind::Copy) {}
  bool reduce = false;
  ReduceOp op = ReduceOp::Sum;
  Ref src, dst;
  ExprPtr at;
};

struct ComputeStmt : Stmt {
  ComputeStmt() : Stmt(StmtKind::Compute) {}
  ComputeKind what = ComputeKind::Generic;
  std::string name;
  std::vector<Ref> inputs;   // attn: Q, KV
  std::vector<Ref> outputs;  // attn: O; attn_bwd: dQ, dKV
  Mask mask = Mask::None;
  ExprPtr flops;
  std::vector<Ref> reads, writes;  // generic
  ExprPtr at;
};

struct CollStmt : Stmt {
  CollStmt() : Stmt(StmtKind::Coll) {}
  CollKind what = CollKind::Barrier;
  Ref buf;
  Ref into;  // alltoall
  ExprPtr root;
  ReduceOp op = ReduceOp::Sum;
  ExprPtr over;
};

struct OnStmt : Stmt {
  OnStmt() : Stmt(StmtKind::On) {}
  ExprPtr rank;     // on R
  std::string var;  // on r in lo .. hi [step k]
  ExprPtr lo, hi, step;
  Block body;
  int32_t slot = -1;
};

struct CallArg {
  std::string key;         // non-empty: key = value for an integer parameter
  ExprPtr value;           // integer value, or a group expression (positional)
  Ref ref;                 // positional buffer argument (also set for a bare name)
  bool bare_name = false;  // a lone identifier: group or buffer, decided by the callee's parameter
  Loc loc;
};

struct CallStmt : Stmt {
  CallStmt() : Stmt(StmtKind::Call) {}
  std::string callee;
  Loc callee_loc;
  std::vector<CallArg> args;
};

enum class ParamKind : uint8_t { Int, Group, Buffer };

struct Param {
  ParamKind kind = ParamKind::Int;
  std::string name;
  ExprPtr def;  // Int only; may be null (required)
  Loc loc;
  int32_t slot = -1;
  bool erroneous = false;  // its default did not parse (the name is still declared)
};

struct Schedule {
  std::string name;
  Loc loc;
  std::vector<Param> params;
  Block body;
  std::string doc;                        // the comment block above the schedule (the file header)
  uint32_t num_slots = 0;                 // value slots of one activation frame
  uint32_t num_buffers = 0;               // buffer slots of one activation frame
  std::vector<std::string> buffer_names;  // by buffer slot
  bool callable_only() const {
    for (const auto& p : params)
      if (p.kind != ParamKind::Int) return true;
    return false;
  }
};

struct Program {
  uint32_t file = 0;
  std::string header;  // the leading comment block of the file
  std::vector<std::unique_ptr<Schedule>> schedules;
  const Schedule* find(const std::string& name) const {
    for (const auto& s : schedules)
      if (s->name == name) return s.get();
    return nullptr;
  }
};

}  // namespace sg
