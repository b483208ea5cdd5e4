// Structured random MPI programs (see structured_mpi.hpp for why they exist).
//
// Families, each with random N, direction, tag, buffer shape and statement order:
//   ring         ring all-gather, reduce-scatter or all-reduce (two phases), every message on one
//                tag (or `tag s`); orders: everyone sends first (a rendezvous deadlock, fine when
//                eager), rank 0 receives first, irecv/send/wait, isend/recv/wait, irecv+isend+wait;
//                rows of a 2-D buffer as blocks; `from any` at small N (one sender, so harmless)
//   parity-ring  the same with even ranks sending first and odd ranks receiving first
//   shift        r -> r + s for s = 1 .. N-1 (all-gather or pairwise all-to-all with a local copy),
//                or one shift by k; orders that are always safe (ranks r < k receive first,
//                irecv first) and two that are not (parity: a deadlock when N and k are even;
//                everyone sends first)
//   burst        several messages from one rank to another on one tag, received in order (also
//                by `from any`/`tag any`, or by irecv + waitall), copied or reduced, one buffer or
//                two interleaved; or two tags received stream by stream (a rendezvous deadlock
//                with blocking receives, fine with irecv)
//   pipeline     a chain from a root forwarding chunks, broadcast or reduction, blocking or isend,
//                one tag or a tag per chunk
//   window       pairwise all-gather/all-to-all with W outstanding irecv/isend per waitall (or
//                handles and `wait rx, tx`), and a ring all-reduce that stages receives in a
//                scratch chunk: irecv, isend, wait, reduce, wait
//   exchange     recursive doubling at N a power of two (`let p = ...`): all-gather of slices or
//                an all-reduce through a scratch chunk
//   wildcard     N <= 6: a gather to a root (by source, by `tag k`, by `tag any`), a reduction by
//                arrival order (right in every order), optionally broadcast back, and rounds
//                of reductions told apart by tag
// Most carry an `expect`, so a right and a wrong result are both possible verdicts.
//
// Mutations (about a third of the programs; one per program, on one rank and iteration or on
// every rank): drop or duplicate a receive, swap two adjacent statements, change a tag or a
// peer, move a wait after an access to the chunk in flight (race), write a chunk in flight
// (race), drop a wait (lifecycle), read a never-initialised buffer or drop an `init`
// (undefined data), an off-by-one chunk index (wrong result), a message or receive of two
// chunks instead of one (a size mismatch: bad input where the pair is fixed, `unmatched` where a
// wildcard leaves it open); and in the wildcard family three typical bugs: a gather stored by
// arrival order, reduction rounds that share one tag, one sender's message (or one receive of a
// gather) twice the size of the others, which the generator knows is `unmatched` (StructuredCase::expect).
//
// Programs are kept as a small tree of statements (not as text) so that a mutation can find a
// receive or a wait and rewrite one rank's copy of it as `if r == R && s == S { … } else { … }`,
// which keeps the loops as the user wrote them.
#include "structured_mpi.hpp"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

namespace sgtest {
namespace {

// Keeps a Z3 run within seconds: on rings its time grows steeply past 300 steps (measured:
// 0.2 s median, 10-24 s for rings of 310-360 steps at N = 13-14).
constexpr int64_t kStepBudget = 300;

// Concatenation without operator+ chains (g++ 12 -O2 warns falsely on those: -Wrestrict).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}
std::string num(int64_t v) { return std::to_string(v); }

struct Gen {
  std::mt19937_64& rng;
  uint32_t n = 2;  // N of the program being built
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng); }
  template <class T>
  T choose(std::initializer_list<T> xs) {
    return *(xs.begin() + pick(0, static_cast<int64_t>(xs.size()) - 1));
  }
};

// ---------------------------------------------------------------------------------------------
// Statements

enum class Op { Send, Isend, Recv, Irecv, Wait, Waitall, Copy, Reduce, Raw, For, If, On };

struct Ref {
  std::string buf, idx;  // buf[idx]; idx "a .. b" is a slice
  std::string text() const { return idx.empty() ? buf : cat({buf, "[", idx, "]"}); }
  bool one_row() const { return !idx.empty() && idx.find("..") == std::string::npos; }
};

using RankPred = std::function<bool(int64_t)>;

struct Node {
  Op op = Op::Raw;
  Ref a, b;                             // a: the message's chunk, or a copy/reduce source; b: its target
  std::string peer, tag, handle;        // tag "" = no clause (tag 0); handle: `as h`, or a wait's list
  bool reduce = false;                  // recv … reduce
  std::string text;                     // Raw: the statement; For/If/On: the head
  std::string var;                      // For: the loop variable; On: the rank variable ("" in `on R`)
  int64_t lo = 0, step = 1, count = 0;  // For: the iterations, evaluated for this N
  std::vector<bool> ranks, else_ranks;  // On/If: the ranks that may run body / orelse
  std::vector<Node> body, orelse;
  bool is_stmt() const { return op < Op::For; }
};

Node xfer(Op op, Ref a, std::string peer, std::string tag, bool reduce = false) {
  Node x;
  x.op = op;
  x.a = std::move(a);
  x.peer = std::move(peer);
  x.tag = std::move(tag);
  x.reduce = reduce;
  return x;
}
Node send(Ref a, std::string to, std::string tag) { return xfer(Op::Send, std::move(a), std::move(to), std::move(tag)); }
Node recv(Ref a, std::string from, std::string tag, bool reduce = false) {
  return xfer(Op::Recv, std::move(a), std::move(from), std::move(tag), reduce);
}
Node nonblocking(Node x, std::string handle) {
  x.op = x.op == Op::Send ? Op::Isend : Op::Irecv;
  x.handle = std::move(handle);
  return x;
}
Node wait(std::string handles) {
  Node x;
  x.op = Op::Wait;
  x.handle = std::move(handles);
  return x;
}
Node waitall() {
  Node x;
  x.op = Op::Waitall;
  return x;
}
Node local(Op op, Ref from, Ref into) {
  Node x;
  x.op = op;
  x.a = std::move(from);
  x.b = std::move(into);
  return x;
}
Node raw(std::string text) {
  Node x;
  x.text = std::move(text);
  return x;
}
Node loop(std::string var, int64_t lo, int64_t hi, std::string_view lo_text, std::string_view hi_text, std::vector<Node> body,
          int64_t step = 1) {
  Node x;
  x.op = Op::For;
  x.text = cat({"for ", var, " in ", lo_text, " .. ", hi_text});
  if (step != 1) x.text += cat({" step ", num(step)});
  x.var = std::move(var);
  x.lo = lo;
  x.step = step;
  x.count = hi > lo ? (hi - lo + step - 1) / step : 0;
  x.body = std::move(body);
  return x;
}
// `if cond`; pred says which ranks take the then-branch, or is empty when that depends on a
// loop variable (both branches may then run on every rank).
Node when(const Gen& g, std::string_view cond, const RankPred& pred, std::vector<Node> then, std::vector<Node> otherwise = {}) {
  Node x;
  x.op = Op::If;
  x.text = cat({"if ", cond});
  for (uint32_t r = 0; r < g.n; ++r) {
    x.ranks.push_back(!pred || pred(r));
    x.else_ranks.push_back(!pred || !pred(r));
  }
  x.body = std::move(then);
  x.orelse = std::move(otherwise);
  return x;
}
Node on_all(const Gen& g, std::vector<Node> body) {
  Node x;
  x.op = Op::On;
  x.text = "on r in 0 .. N";
  x.var = "r";
  x.ranks.assign(g.n, true);
  x.body = std::move(body);
  return x;
}
Node on_rank(const Gen& g, int64_t rank, std::vector<Node> body) {
  Node x;
  x.op = Op::On;
  x.text = cat({"on ", num(rank)});
  x.ranks.assign(g.n, false);
  x.ranks[static_cast<size_t>(rank)] = true;
  x.body = std::move(body);
  return x;
}

std::string stmt_text(const Node& x) {
  std::string s;
  std::string tag = x.tag.empty() ? "" : cat({" tag ", x.tag});
  switch (x.op) {
    case Op::Send:
    case Op::Isend: s = cat({x.op == Op::Send ? "send " : "isend ", x.a.text(), " to ", x.peer, tag}); break;
    case Op::Recv:
    case Op::Irecv: s = cat({x.op == Op::Recv ? "recv " : "irecv ", x.a.text(), " from ", x.peer, tag, x.reduce ? " reduce" : ""}); break;
    case Op::Wait: s = cat({"wait ", x.handle}); break;
    case Op::Waitall: s = "waitall"; break;
    case Op::Copy: s = cat({"copy ", x.a.text(), " into ", x.b.text()}); break;
    case Op::Reduce: s = cat({"reduce ", x.a.text(), " into ", x.b.text()}); break;
    default: return x.text;
  }
  if ((x.op == Op::Isend || x.op == Op::Irecv) && !x.handle.empty()) s += cat({" as ", x.handle});
  s += ';';
  return s;
}

void render(const std::vector<Node>& xs, int depth, std::string& out) {
  const std::string pad(static_cast<size_t>(2 * depth), ' ');
  for (const Node& x : xs) {
    out += pad;
    if (x.is_stmt()) {
      out += stmt_text(x);
      out += '\n';
      continue;
    }
    out += x.text;
    out += " {\n";
    render(x.body, depth + 1, out);
    if (!x.orelse.empty()) {
      out += pad;
      out += "} else {\n";
      render(x.orelse, depth + 1, out);
    }
    out += pad;
    out += "}\n";
  }
}

// ---------------------------------------------------------------------------------------------
// Programs

struct Buffer {
  std::string name, dim0, tail, bytes;  // buffer NAME[DIM0 TAIL] bytes BYTES;
};

struct Prog {
  std::string family;
  std::vector<std::string> about;  // header comment: the variant
  std::string params;              // "size = 1MiB" when a chunk size uses it
  std::vector<Buffer> buffers;
  std::vector<std::string> decls;  // init, let, expect
  std::vector<Node> body;
  std::string mutation;  // what was perturbed ("" if nothing)
  std::string expect;    // the verdict, where known by construction (StructuredCase::expect)

  const Buffer* buffer(const std::string& name) const {
    for (const Buffer& b : buffers)
      if (b.name == name) return &b;
    return nullptr;
  }
  // Chunk sizes vary so that byte counts are part of what the engines see; every buffer of a
  // program uses the same one, so any two chunks may be exchanged.
  std::string chunk_bytes(Gen& g, std::string_view count) {
    if (!chunk_bytes_.empty()) return chunk_bytes_;
    switch (g.pick(0, 3)) {
      case 0: chunk_bytes_ = "8"; break;
      case 1: chunk_bytes_ = "64"; break;
      case 2: chunk_bytes_ = "4KiB"; break;
      default: params = "size = 1MiB"; chunk_bytes_ = cat({"size / ", count});
    }
    return chunk_bytes_;
  }
  void add_buffer(Gen& g, std::string name, std::string dim0, std::string tail = "") {
    std::string bytes = chunk_bytes(g, dim0);
    buffers.push_back({std::move(name), std::move(dim0), std::move(tail), std::move(bytes)});
  }

 private:
  std::string chunk_bytes_;
};

std::string render(const Prog& p, uint32_t n) {
  std::string t = cat({"# structured random MPI program: ", p.family, ", N = ", num(n), "\n"});
  for (const std::string& line : p.about) t += cat({"# ", line, "\n"});
  if (!p.mutation.empty()) t += cat({"# mutation: ", p.mutation, "\n"});
  std::string name = p.family;
  std::replace(name.begin(), name.end(), '-', '_');
  t += cat({"schedule ", name, "(", p.params, ") {\n"});
  for (const Buffer& b : p.buffers) t += cat({"  buffer ", b.name, "[", b.dim0, b.tail, "] bytes ", b.bytes, ";\n"});
  for (const std::string& d : p.decls) t += cat({"  ", d, "\n"});
  render(p.body, 1, t);
  t += "}\n";
  return t;
}

// A buffer of two chunks shaped like `like`'s, initialised: `wide[0 .. 2]` is a message twice
// the size of one chunk of `like`.
std::string wide(Prog& p, const std::string& like) {
  std::string name = cat({like, "_wide"});
  if (!p.buffer(name)) {
    Buffer b = *p.buffer(like);
    b.name = name;
    b.dim0 = "2";
    p.buffers.push_back(b);
    p.decls.insert(p.decls.begin(), cat({"init ", name, " contrib;"}));
  }
  return name;
}

// Picks N in 2 .. the largest N <= max_ranks whose program fits the step budget.
void pick_n(Gen& g, uint32_t max_ranks, const std::function<int64_t(int64_t)>& steps) {
  int64_t hi = 2;
  while (hi + 1 <= max_ranks && steps(hi + 1) <= kStepBudget) ++hi;
  g.n = static_cast<uint32_t>(g.pick(2, hi));
}

// Most messages share one tag, so only MPI's matching order keeps them apart.
std::string one_tag(Gen& g) { return g.coin(0.7) ? "" : num(g.pick(1, 9)); }

// How a rank orders the send and the receive of one step.
enum class Order { SendFirst, Cond, IrecvFirst, IsendFirst, Nonblocking };

const char* order_name(Order o) {
  switch (o) {
    case Order::SendFirst: return "every rank sends first";
    case Order::Cond: return "ranks where the condition holds send first, the others receive first";
    case Order::IrecvFirst: return "irecv, send, wait";
    case Order::IsendFirst: return "isend, recv, wait";
    case Order::Nonblocking: return "irecv, isend, then wait for both";
  }
  return "";
}

// cond/pred (Order::Cond): the ranks that send first.
std::vector<Node> ordered(Gen& g, Order o, Node s, Node r, std::string_view cond = "", const RankPred& pred = {}) {
  switch (o) {
    case Order::SendFirst: return {s, r};
    case Order::Cond: return {when(g, cond, pred, {s, r}, {r, s})};
    case Order::IrecvFirst: return {nonblocking(r, "rx"), s, wait("rx")};
    case Order::IsendFirst: return {nonblocking(s, "tx"), r, wait("tx")};
    case Order::Nonblocking:
      if (g.coin(0.5)) return {nonblocking(r, "rx"), nonblocking(s, "tx"), wait("rx, tx")};
      return {nonblocking(r, ""), nonblocking(s, ""), waitall()};
  }
  return {};
}
int64_t ops_per_step(Order o) { return o == Order::SendFirst || o == Order::Cond ? 2 : 3; }

// Block r - σ·(s + c) mod N: what a rank sends (c) or receives (c + 1) in step s of a ring.
std::string ring_block(int sigma, int c) {
  std::string e = sigma > 0 ? "(r - s" : "(r + s";
  if (c != 0) e += cat({(c > 0) == (sigma > 0) ? " - " : " + ", num(c < 0 ? -c : c)});
  e += ") % N";
  return e;
}

// ---------------------------------------------------------------------------------------------
// Families

Prog ring(Gen& g, uint32_t max_ranks, bool parity) {
  Prog p;
  p.family = parity ? "parity-ring" : "ring";
  const std::string kind = g.choose<const char*>({"allgather", "allgather", "reduce_scatter", "allreduce"});
  const int phases = kind == "allreduce" ? 2 : 1;
  const Order order =
      parity ? Order::Cond : g.choose({Order::SendFirst, Order::Cond, Order::IrecvFirst, Order::IsendFirst, Order::Nonblocking});
  pick_n(g, max_ranks, [&](int64_t n) { return phases * (n - 1) * n * ops_per_step(order); });
  const int sigma = g.coin(0.75) ? 1 : -1;
  const std::string right = sigma > 0 ? "(r + 1) % N" : "(r - 1) % N";
  // A ring receive has one possible sender, so `from any` must change nothing. Small N and
  // blocking orders only: the explicit engine branches over the order in which concurrent
  // wildcard receives are resolved. Eager executions of an all-gather: parity order 13 at N = 3,
  // 486 at N = 4, over 20,000 at N = 5; rank 0 receiving first, 7,677 at N = 4; everyone
  // sending first, over 20,000 at N = 4.
  const bool wild = ops_per_step(order) == 2 && g.n <= (parity && phases == 1 ? 4u : 3u) && g.coin(0.2);
  const std::string left = wild ? "any" : sigma > 0 ? "(r - 1) % N" : "(r + 1) % N";
  const std::string tag = g.coin(0.2) ? "s" : one_tag(g);
  const std::string tail = g.coin(0.25) ? cat({", ", num(g.pick(2, 3))}) : "";  // blocks are rows

  p.add_buffer(g, "data", "N", tail);
  p.decls.push_back(kind == "allgather" ? "init data owned;" : "init data contrib;");
  p.decls.push_back(cat({"expect ", kind, "(data);"}));
  std::string cond = parity ? "r % 2 == 0" : "r != 0";
  RankPred pred = parity ? RankPred([](int64_t r) { return r % 2 == 0; }) : RankPred([](int64_t r) { return r != 0; });
  auto phase = [&](int c_send, int c_recv, bool reduce) {
    Node s = send({"data", ring_block(sigma, c_send)}, right, tag);
    Node r = recv({"data", ring_block(sigma, c_recv)}, left, tag, reduce);
    return loop("s", 0, g.n - 1, "0", "N - 1", ordered(g, order, s, r, cond, pred));
  };
  std::vector<Node> body;
  if (kind == "allgather") body.push_back(phase(0, 1, false));
  if (kind == "reduce_scatter") body.push_back(phase(1, 2, true));  // ends with block r on rank r
  if (kind == "allreduce") {
    body.push_back(phase(0, 1, true));    // rank r completes block r + σ
    body.push_back(phase(-1, 0, false));  // and passes completed blocks on
  }
  p.body.push_back(on_all(g, std::move(body)));
  p.about.push_back(cat({"ring ", kind, sigma > 0 ? " to the right" : " to the left", "; ", order_name(order),
                         order == Order::Cond ? cat({" (", cond, ")"}) : ""}));
  return p;
}

Prog shift(Gen& g, uint32_t max_ranks) {
  Prog p;
  p.family = "shift";
  const int variant = static_cast<int>(g.pick(0, 2));  // 0: all-gather sweep, 1: all-to-all sweep, 2: one shift
  const int pattern = static_cast<int>(g.pick(0, 8));
  const Order order = pattern < 3   ? Order::Cond  // ranks below the offset receive first
                      : pattern < 4 ? Order::Cond  // parity (see below)
                      : pattern < 6 ? Order::IrecvFirst
                      : pattern < 8 ? Order::Nonblocking
                                    : Order::SendFirst;
  const bool by_parity = pattern == 3;
  if (variant == 2) g.n = static_cast<uint32_t>(g.pick(2, max_ranks));
  else pick_n(g, max_ranks, [&](int64_t n) { return (n - 1) * n * ops_per_step(order) + n; });
  const int64_t k = g.pick(1, g.n - 1);
  const std::string off = variant == 2 ? num(k) : "s";
  const std::string to = cat({"(r + ", off, ") % N"}), from = cat({"(r - ", off, ") % N"});
  const std::string tag = one_tag(g);
  // Every cycle of r -> r + k mixes ranks below k (which receive first) with ranks at or above
  // it (which send first), so nothing waits in a circle. Parity mixes them only if a cycle has
  // ranks of both parities: with N and k even, a cycle is all even (rendezvous deadlock) or all
  // odd (deadlock under both semantics).
  std::string cond = by_parity ? "r % 2 == 0" : cat({"r >= ", off});
  RankPred pred;
  if (by_parity) pred = [](int64_t r) { return r % 2 == 0; };
  if (!by_parity && variant == 2) pred = [k](int64_t r) { return r >= k; };

  std::vector<Node> body;
  Node s, r;
  if (variant == 1) {
    p.add_buffer(g, "sbuf", "N");
    p.add_buffer(g, "rbuf", "N");
    p.decls = {"init sbuf contrib;", "expect alltoall(sbuf, rbuf);"};
    body.push_back(local(Op::Copy, {"sbuf", "r"}, {"rbuf", "r"}));
    s = send({"sbuf", to}, to, tag);
    r = recv({"rbuf", from}, from, tag);
  } else {
    p.add_buffer(g, "data", "N");
    p.decls = {"init data owned;", variant == 0 ? "expect allgather(data);" : "expect nothing;"};
    s = send({"data", "r"}, to, tag);
    r = recv({"data", from}, from, tag);
  }
  std::vector<Node> step = ordered(g, order, s, r, cond, pred);
  if (variant == 2) body.insert(body.end(), step.begin(), step.end());
  else body.push_back(loop("s", 1, g.n, "1", "N", std::move(step)));
  p.body.push_back(on_all(g, std::move(body)));
  p.about.push_back(cat({variant == 0   ? "all-gather by shifts r -> r + s"
                         : variant == 1 ? "pairwise all-to-all by shifts r -> r + s"
                                        : "one shift r -> r + k",
                         "; ", order_name(order), order == Order::Cond ? cat({" (", cond, ")"}) : ""}));
  return p;
}

Prog burst(Gen& g, uint32_t max_ranks) {
  Prog p;
  p.family = "burst";
  g.n = static_cast<uint32_t>(g.pick(2, max_ranks));  // the other ranks stay idle: no steps
  const int64_t a = g.pick(0, g.n - 1), b = (a + g.pick(1, g.n - 1)) % g.n;
  const int64_t m = g.pick(2, 6);
  const bool two = g.coin(0.35);     // a second buffer interleaved with the first
  const bool reduce = g.coin(0.3);   // the receiver adds what it gets to its own values
  const bool by_tag = g.coin(0.25);  // two tags: the receiver may take the streams one by one
  const bool split = by_tag && g.coin(0.6);
  const int recv_style = static_cast<int>(g.pick(0, 2));  // 0 blocking, 1 wildcards, 2 irecv + waitall
  const bool isend = g.coin(0.3);
  const std::string tag = one_tag(g);
  const std::string t0 = tag.empty() ? "0" : tag, t1 = num((tag.empty() ? 0 : std::stoi(tag)) + 1);
  // Tags per message: one tag; or one per buffer; or, with one buffer, alternating.
  const std::string tag_m = !by_tag ? tag : two ? t0 : tag.empty() ? "i % 2" : cat({"i % 2 + ", t0});
  const std::string tag_w = !by_tag ? tag : t1;

  const std::vector<std::string> names = two ? std::vector<std::string>{"msg", "aux"} : std::vector<std::string>{"msg"};
  for (const std::string& name : names) {
    p.add_buffer(g, name, num(m));
    p.decls.push_back(reduce ? cat({"init ", name, " contrib;"}) : cat({"init ", name, " on ", num(a), ";"}));
  }
  p.decls.push_back(cat({"let G = ranks(", num(std::min(a, b)), ", 2, ", num(a > b ? a - b : b - a), ");"}));
  for (const std::string& name : names)
    p.decls.push_back(reduce ? cat({"expect reduce(", name, ", ", num(b), ") over G;"})
                             : cat({"expect broadcast(", name, ", ", num(a), ") over G;"}));

  auto tag_of = [&](const std::string& name) { return name == "msg" ? tag_m : tag_w; };
  std::vector<Node> sends;
  for (const std::string& name : names) {
    Node x = send({name, "i"}, num(b), tag_of(name));
    sends.push_back(isend ? nonblocking(x, "") : x);
  }
  std::vector<Node> sender{loop("i", 0, m, "0", num(m), sends)};
  if (isend) sender.push_back(waitall());

  // Only rank a sends to b: `from any` may not change anything, nor `tag any` unless the
  // receiver takes the tags apart.
  const std::string from = recv_style == 1 && g.coin(0.7) ? "any" : num(a);
  auto take = [&](const std::string& name, const std::string& t) {
    Node x = recv({name, "i"}, from, recv_style == 1 && !split && g.coin(0.5) ? "any" : t, reduce);
    return recv_style == 2 ? nonblocking(x, "") : x;
  };
  std::vector<Node> receiver;
  if (!split) {
    std::vector<Node> takes;
    for (const std::string& name : names) takes.push_back(take(name, tag_of(name)));
    receiver.push_back(loop("i", 0, m, "0", num(m), takes));
  } else if (two) {  // stream by stream: with blocking sends and receives, a rendezvous deadlock
    receiver.push_back(loop("i", 0, m, "0", num(m), {take("msg", t0)}));
    receiver.push_back(loop("i", 0, m, "0", num(m), {take("aux", t1)}));
  } else {  // even messages, then odd ones (a rendezvous deadlock from three messages on)
    receiver.push_back(loop("i", 0, m, "0", num(m), {take("msg", t0)}, 2));
    receiver.push_back(loop("i", 1, m, "1", num(m), {take("msg", t1)}, 2));
  }
  if (recv_style == 2) receiver.push_back(waitall());
  p.body.push_back(on_rank(g, a, std::move(sender)));
  p.body.push_back(on_rank(g, b, std::move(receiver)));
  p.about.push_back(cat({num(m), " messages per buffer from rank ", num(a), " to rank ", num(b), reduce ? ", reduced" : ", copied",
                         by_tag ? ", two tags" : ", one tag", split ? ", received stream by stream" : "",
                         recv_style == 1   ? ", wildcard receives"
                         : recv_style == 2 ? ", irecv + waitall"
                                           : "",
                         isend ? ", isend + waitall" : ""}));
  return p;
}

Prog pipeline(Gen& g, uint32_t max_ranks) {
  Prog p;
  p.family = "pipeline";
  const int64_t c = g.pick(2, 6);
  const bool reduce = g.coin(0.3);
  const bool isend = g.coin(0.3);
  const bool gather_first = g.coin(0.2);  // irecv every chunk, waitall, then forward them all
  pick_n(g, max_ranks, [&](int64_t n) { return n * c * 2 + 2 * n; });
  const int sigma = g.coin(0.7) ? 1 : -1;
  const int64_t root = g.coin(0.5) ? 0 : g.pick(0, g.n - 1);
  const int64_t last = ((root - sigma) % g.n + g.n) % g.n;
  const std::string next = sigma > 0 ? "(r + 1) % N" : "(r - 1) % N", prev = sigma > 0 ? "(r - 1) % N" : "(r + 1) % N";
  const std::string tag = g.coin(0.25) ? "i" : one_tag(g);

  p.add_buffer(g, "data", num(c));
  p.decls.push_back(reduce ? "init data contrib;" : cat({"init data on ", num(root), ";"}));
  p.decls.push_back(reduce ? cat({"expect reduce(data, ", num(last), ");"}) : cat({"expect broadcast(data, ", num(root), ");"}));
  const std::string not_root = cat({"r != ", num(root)}), not_last = cat({"r != ", num(last)});
  RankPred takes = [root](int64_t r) { return r != root; };
  RankPred gives = [last](int64_t r) { return r != last; };
  Node in = recv({"data", "i"}, prev, tag, reduce), out = send({"data", "i"}, next, tag);
  if (isend) out = nonblocking(out, "");
  std::vector<Node> body;
  if (gather_first) {
    body.push_back(when(g, not_root, takes, {loop("i", 0, c, "0", num(c), {nonblocking(in, "")}), waitall()}));
    body.push_back(when(g, not_last, gives, {loop("i", 0, c, "0", num(c), {out})}));
  } else {
    body.push_back(loop("i", 0, c, "0", num(c), {when(g, not_root, takes, {in}), when(g, not_last, gives, {out})}));
  }
  if (isend) body.push_back(waitall());
  p.body.push_back(on_all(g, std::move(body)));
  p.about.push_back(cat({reduce ? "reduction" : "broadcast", " down the chain from rank ", num(root), sigma > 0 ? " upwards" : " downwards",
                         ", ", num(c), " chunks", isend ? ", isend + waitall" : "", gather_first ? ", irecv all then forward" : ""}));
  return p;
}

Prog window(Gen& g, uint32_t max_ranks) {
  Prog p;
  p.family = "window";
  const int variant = static_cast<int>(g.pick(0, 2));  // 0 pairwise all-gather, 1 pairwise all-to-all, 2 staged ring
  const std::string tag = one_tag(g);
  if (variant == 2) {
    pick_n(g, max_ranks, [](int64_t n) { return 8 * (n - 1) * n; });
    const int sigma = g.coin(0.75) ? 1 : -1;
    const std::string right = sigma > 0 ? "(r + 1) % N" : "(r - 1) % N", left = sigma > 0 ? "(r - 1) % N" : "(r + 1) % N";
    p.add_buffer(g, "data", "N");
    p.add_buffer(g, "tmp", "1");
    p.decls = {"init data contrib;", "expect allreduce(data);"};
    // Reduce-scatter through a scratch chunk: it may be read only after its wait, and the block
    // in flight may not be written before its own.
    std::vector<Node> rs{nonblocking(recv({"tmp", "0"}, left, tag), "rx"),
                         nonblocking(send({"data", ring_block(sigma, 0)}, right, tag), "tx"), wait("rx"),
                         local(Op::Reduce, {"tmp", "0"}, {"data", ring_block(sigma, 1)}), wait("tx")};
    std::vector<Node> ag{nonblocking(recv({"data", ring_block(sigma, 0)}, left, tag), "rx"),
                         nonblocking(send({"data", ring_block(sigma, -1)}, right, tag), "tx"), wait("rx, tx")};
    p.body.push_back(on_all(g, {loop("s", 0, g.n - 1, "0", "N - 1", rs), loop("s", 0, g.n - 1, "0", "N - 1", ag)}));
    p.about.push_back("ring all-reduce, receives staged in tmp[0]: irecv, isend, wait, reduce, wait");
    return p;
  }
  const int64_t w = g.pick(1, 4);
  pick_n(g, max_ranks, [w](int64_t n) { return 2 * (n - 1) * n + (n - 1 + w - 1) / w * n + n; });
  const std::string to = "(r + s) % N", from = "(r - s) % N";
  std::vector<Node> body;
  Node s, r;
  if (variant == 1) {
    p.add_buffer(g, "sbuf", "N");
    p.add_buffer(g, "rbuf", "N");
    p.decls = {"init sbuf contrib;", "expect alltoall(sbuf, rbuf);"};
    body.push_back(local(Op::Copy, {"sbuf", "r"}, {"rbuf", "r"}));
    s = send({"sbuf", to}, to, tag);
    r = recv({"rbuf", from}, from, tag);
  } else {
    p.add_buffer(g, "data", "N");
    p.decls = {"init data owned;", "expect allgather(data);"};
    s = send({"data", "r"}, to, tag);
    r = recv({"data", from}, from, tag);
  }
  const bool handles = w == 1 && g.coin(0.5);
  std::vector<Node> step;
  if (g.coin(0.5)) step = {nonblocking(r, handles ? "rx" : ""), nonblocking(s, handles ? "tx" : "")};
  else step = {nonblocking(s, handles ? "tx" : ""), nonblocking(r, handles ? "rx" : "")};
  if (handles) step.push_back(wait("rx, tx"));
  else step.push_back(when(g, cat({"s % ", num(w), " == 0 || s == N - 1"}), {}, {waitall()}));
  body.push_back(loop("s", 1, g.n, "1", "N", std::move(step)));
  p.body.push_back(on_all(g, std::move(body)));
  p.about.push_back(cat({variant == 0 ? "pairwise all-gather" : "pairwise all-to-all", ", windows of ", num(w), " irecv/isend pairs",
                         handles ? ", wait rx, tx" : ", waitall"}));
  return p;
}

Prog exchange(Gen& g, uint32_t max_ranks) {
  Prog p;
  p.family = "exchange";
  int64_t levels = 1;
  while (int64_t{2} << levels <= max_ranks && levels < 4) ++levels;
  const int64_t k = g.pick(1, levels);
  g.n = static_cast<uint32_t>(int64_t{1} << k);
  const bool allreduce = g.coin(0.4);
  const Order order = g.choose({Order::Cond, Order::Cond, Order::Nonblocking, Order::IrecvFirst, Order::IsendFirst, Order::SendFirst});
  const std::string tag = one_tag(g);
  std::vector<Node> step{raw("let d = pow2(k);"), raw("let p = (r / d) % 2 == 0 ? r + d : r - d;")};
  if (allreduce) {
    p.add_buffer(g, "data", "1");
    p.add_buffer(g, "tmp", "1");
    p.decls = {"init data contrib;", "expect allreduce(data);"};
    std::vector<Node> xs = ordered(g, order, send({"data", "0"}, "p", tag), recv({"tmp", "0"}, "p", tag), "r < p");
    step.insert(step.end(), xs.begin(), xs.end());
    step.push_back(local(Op::Reduce, {"tmp", "0"}, {"data", "0"}));
  } else {
    p.add_buffer(g, "data", "N");
    p.decls = {"init data owned;", "expect allgather(data);"};
    // After level k, rank r holds the 2d blocks of its aligned group; it sends its d of them.
    std::vector<Node> xs = ordered(g, order, send({"data", "(r / d) * d .. (r / d) * d + d"}, "p", tag),
                                   recv({"data", "(p / d) * d .. (p / d) * d + d"}, "p", tag), "r < p");
    step.insert(step.end(), xs.begin(), xs.end());
  }
  p.body.push_back(on_all(g, {loop("k", 0, k, "0", "log2(N)", std::move(step))}));
  p.about.push_back(cat({"recursive doubling ", allreduce ? "all-reduce through tmp[0]" : "all-gather of slices", "; ", order_name(order),
                         order == Order::Cond ? " (r < p)" : ""}));
  return p;
}

Prog wildcard(Gen& g, uint32_t max_ranks, bool bug) {
  Prog p;
  p.family = "wildcard";
  const int variant = static_cast<int>(g.pick(0, 2));  // 0 gather, 1 reduction (+ broadcast), 2 rounds by tag
  // The explicit engine enumerates arrival orders: (N-1)! per round, so N stays small. The bugs
  // need two senders to race.
  g.n = static_cast<uint32_t>(g.pick(bug ? std::min<uint32_t>(max_ranks, 3) : 2, std::min<uint32_t>(max_ranks, variant == 2 ? 4 : 6)));
  const int64_t root = g.coin(0.6) ? 0 : g.pick(0, g.n - 1);
  const std::string R = num(root), not_root = cat({"r != ", R});
  RankPred others = [root](int64_t r) { return r != root; };
  const std::string tag = one_tag(g);
  // The size bug: one sender X's message (or, in a gather, the root's receive from X) is two
  // chunks where the others are one. Every receive that can take X's message is a wildcard, and
  // every execution has one take it, so the verdict is `unmatched` under both semantics.
  // Not only among the perturbed programs (a third of a fifteenth of them): a fifth of the
  // gathers and reductions get it, so that a few hundred programs see several.
  const bool size_bug = variant != 2 && g.coin(bug ? 0.5 : 0.2);
  const int64_t X = (root + g.pick(1, g.n - 1)) % g.n;
  const bool wide_recv = size_bug && variant == 0 && g.coin(0.5);
  // Sends from the other ranks, and X's own: a different message where the size bug is.
  auto senders = [&](Node x) {
    if (!size_bug || wide_recv) return std::vector<Node>{when(g, not_root, others, {x})};
    Node y = x;
    y.a = {wide(p, x.a.buf), "0 .. 2"};
    RankPred is_x = [X](int64_t r) { return r == X; };
    RankPred rest = [root, X](int64_t r) { return r != root && r != X; };
    return std::vector<Node>{when(g, cat({"r == ", num(X)}), is_x, {y}, {when(g, not_root, rest, {x})})};
  };
  if (size_bug) {
    p.expect = "unmatched";
    p.mutation =
        wide_recv ? cat({"the root's receive from rank ", num(X), " is two chunks"}) : cat({"rank ", num(X), "'s message is two chunks"});
  }
  if (variant == 0) {
    p.add_buffer(g, "g", "N");
    p.decls = {"init g owned;", cat({"expect gather(g, ", R, ");"})};
    // Right: by source; by a tag naming the source; by source with any tag. Wrong: slot k gets
    // the k-th message to arrive. The size bug needs a wildcard (else it is bad input).
    const int how = size_bug ? static_cast<int>(g.pick(1, 2)) : bug ? 3 : static_cast<int>(g.pick(0, 2));
    const std::string send_tag = how == 1 ? "r" : tag;
    Node take = recv({"g", "k"}, how == 0 || how == 2 ? "k" : "any", how == 1 ? "k" : how == 2 ? "any" : tag);
    const bool irecv = how != 3 && g.coin(0.3);
    Node taken = irecv ? nonblocking(take, "") : take;
    std::vector<Node> per_k{taken};
    if (wide_recv) {
      Node w = taken;
      w.a = {wide(p, "g"), "0 .. 2"};
      per_k = {when(g, cat({"k == ", num(X)}), {}, {w}, {taken})};
    }
    std::vector<Node> root_prog{loop("k", 0, g.n, "0", "N", {when(g, cat({"k != ", R}), {}, per_k)})};
    if (irecv) root_prog.push_back(waitall());
    p.body.push_back(on_all(g, senders(send({"g", "r"}, R, send_tag))));
    p.body.push_back(on_rank(g, root, std::move(root_prog)));
    if (bug && !size_bug) p.mutation = "gather stored by arrival order (recv g[k] from any)";
    p.about.push_back(cat({"gather to rank ", R,
                           how == 0   ? " by source"
                           : how == 1 ? " from any, tag = source"
                           : how == 2 ? " by source, tag any"
                                      : "",
                           irecv ? ", irecv + waitall" : ""}));
    return p;
  }
  if (variant == 1) {
    const bool bcast = g.coin(0.5), staged = g.coin(0.4);
    p.add_buffer(g, "s", "1");
    p.decls = {"init s contrib;", bcast ? "expect allreduce(s);" : cat({"expect reduce(s, ", R, ");"})};
    std::vector<Node> sender = senders(send({"s", "0"}, R, tag));
    if (bcast) sender.push_back(when(g, not_root, others, {recv({"s", "0"}, R, tag)}));
    std::vector<Node> take{recv({"s", "0"}, "any", tag, true)};
    if (staged) {
      p.add_buffer(g, "t", "1");
      take = {recv({"t", "0"}, "any", tag), local(Op::Reduce, {"t", "0"}, {"s", "0"})};
    }
    std::vector<Node> root_prog{loop("k", 1, g.n, "1", "N", take)};
    if (bcast) root_prog.push_back(loop("k", 0, g.n, "0", "N", {when(g, cat({"k != ", R}), {}, {send({"s", "0"}, "k", tag)})}));
    p.body.push_back(on_all(g, sender));
    p.body.push_back(on_rank(g, root, std::move(root_prog)));
    p.about.push_back(
        cat({"reduction to rank ", R, " in arrival order", staged ? " through t[0]" : "", bcast ? ", then broadcast back" : ""}));
    return p;
  }
  // Rounds: every rank sends c chunks; the root adds round i's messages, from any source, into
  // chunk i. The tag tells the rounds apart; without it a fast rank's next chunk can be taken
  // for this round.
  const int64_t c = g.pick(2, 3);
  p.add_buffer(g, "s", num(c));
  p.decls = {"init s contrib;", cat({"expect reduce(s, ", R, ");"})};
  const std::string round_tag = bug ? tag : "i";
  p.body.push_back(on_all(g, {when(g, not_root, others, {loop("i", 0, c, "0", num(c), {send({"s", "i"}, R, round_tag)})})}));
  p.body.push_back(
      on_rank(g, root, {loop("i", 0, c, "0", num(c), {loop("k", 1, g.n, "1", "N", {recv({"s", "i"}, "any", round_tag, true)})})}));
  if (bug) p.mutation = "reduction rounds share one tag";
  p.about.push_back(cat({num(c), " rounds of reduction to rank ", R, " from any source, ", bug ? "one tag" : "tag = round"}));
  return p;
}

// ---------------------------------------------------------------------------------------------
// Mutations

struct Pin {
  std::string var;
  int64_t lo, step, count;
};
struct Site {
  std::vector<Node>* list = nullptr;
  size_t i = 0;
  std::vector<bool> ranks;  // ranks that may run it
  std::string rvar;         // the rank variable in scope ("" inside `on R`)
  std::vector<Pin> loops;   // enclosing loops
  Node& node() const { return (*list)[i]; }
};

void collect(std::vector<Node>& xs, const Site& ctx, std::vector<Site>& out) {
  for (size_t i = 0; i < xs.size(); ++i) {
    Node& x = xs[i];
    Site in = ctx;
    if (x.is_stmt()) {
      in.list = &xs;
      in.i = i;
      if (std::find(in.ranks.begin(), in.ranks.end(), true) != in.ranks.end()) out.push_back(in);
    } else if (x.op == Op::On) {
      in.ranks = x.ranks;
      in.rvar = x.var;
      collect(x.body, in, out);
    } else if (x.op == Op::For) {
      if (x.count == 0) continue;
      in.loops.push_back({x.var, x.lo, x.step, x.count});
      collect(x.body, in, out);
    } else {  // If
      for (size_t r = 0; r < in.ranks.size(); ++r) in.ranks[r] = ctx.ranks[r] && x.ranks[r];
      collect(x.body, in, out);
      for (size_t r = 0; r < in.ranks.size(); ++r) in.ranks[r] = ctx.ranks[r] && x.else_ranks[r];
      collect(x.orelse, in, out);
    }
  }
}

// Where the mutation applies: one rank (mostly), and for some enclosing loops one iteration.
// "" means everywhere the statement runs.
std::string guard(Gen& g, const Site& s) {
  std::vector<std::string> parts;
  if (!s.rvar.empty() && !g.coin(0.2)) {
    std::vector<int64_t> rs;
    for (size_t r = 0; r < s.ranks.size(); ++r)
      if (s.ranks[r]) rs.push_back(static_cast<int64_t>(r));
    parts.push_back(cat({s.rvar, " == ", num(rs[static_cast<size_t>(g.pick(0, static_cast<int64_t>(rs.size()) - 1))])}));
  }
  for (const Pin& l : s.loops)
    if (g.coin(0.5)) parts.push_back(cat({l.var, " == ", num(l.lo + l.step * g.pick(0, l.count - 1))}));
  std::string c;
  for (const std::string& part : parts) c += cat({c.empty() ? "" : " && ", part});
  return c;
}

// Replaces statements i .. i+len-1 of the site's list by `mutated` where cond holds.
void replace(const Site& s, size_t len, std::vector<Node> mutated, const std::string& cond) {
  std::vector<Node>& xs = *s.list;
  const auto first = xs.begin() + static_cast<std::ptrdiff_t>(s.i);
  std::vector<Node> orig(first, first + static_cast<std::ptrdiff_t>(len));
  xs.erase(first, first + static_cast<std::ptrdiff_t>(len));
  std::vector<Node> put = std::move(mutated);
  if (!cond.empty()) {
    Node x;
    x.op = Op::If;
    if (put.empty()) {
      x.text = cat({"if !(", cond, ")"});
      x.body = std::move(orig);
    } else {
      x.text = cat({"if ", cond});
      x.body = std::move(put);
      x.orelse = std::move(orig);
    }
    put = {std::move(x)};
  }
  xs.insert(xs.begin() + static_cast<std::ptrdiff_t>(s.i), put.begin(), put.end());
}

bool is_msg(const Node& x) { return x.op == Op::Send || x.op == Op::Isend || x.op == Op::Recv || x.op == Op::Irecv; }
bool waits_for(const Node& w, const Node& x) {  // does wait w name x's handle?
  if (w.op != Op::Wait || x.handle.empty()) return false;
  for (size_t at = 0; (at = w.handle.find(x.handle, at)) != std::string::npos; at += x.handle.size()) {
    const bool starts = at == 0 || w.handle[at - 1] == ' ' || w.handle[at - 1] == ',';
    const size_t end = at + x.handle.size();
    if (starts && (end == w.handle.size() || w.handle[end] == ',')) return true;
  }
  return false;
}
bool touches(const Node& x, const Ref& r) {
  return (x.is_stmt() && x.op != Op::Raw && x.op != Op::Wait && x.op != Op::Waitall) && (x.a.text() == r.text() || x.b.text() == r.text());
}

// A scratch buffer shaped like `like` (so its chunk 0 can replace a chunk of it); init or not.
std::string scratch(Prog& p, const std::string& like, std::string_view suffix, bool init) {
  std::string name = cat({like, "_", suffix});
  if (!p.buffer(name)) {
    Buffer b = *p.buffer(like);
    b.name = name;
    b.dim0 = "1";
    p.buffers.push_back(b);
    if (init) p.decls.insert(p.decls.begin(), cat({"init ", name, " contrib;"}));
  }
  return name;
}

enum class Mut { DropRecv, DupRecv, Swap, Retag, Repeer, LateWait, WriteInFlight, DropWait, Uninit, OffByOne, Resize };

// Tries mutation m on a random eligible statement; false if nothing in the program fits it.
bool mutate(Gen& g, Prog& p, Mut m) {
  std::vector<Site> sites, fit;
  std::vector<size_t> fit_target;  // LateWait: the statement to move the wait past
  Site top;
  top.ranks.assign(g.n, true);
  collect(p.body, top, sites);
  for (const Site& s : sites) {
    const Node& x = s.node();
    const std::vector<Node>& xs = *s.list;
    bool ok = false;
    size_t target = 0;
    switch (m) {
      case Mut::DropRecv:
      case Mut::DupRecv: ok = x.op == Op::Recv || (x.op == Op::Irecv && x.handle.empty()); break;
      case Mut::Swap:
        ok = s.i + 1 < xs.size() && xs[s.i + 1].is_stmt() && x.op != Op::Raw && xs[s.i + 1].op != Op::Raw && !waits_for(xs[s.i + 1], x) &&
             !waits_for(x, xs[s.i + 1]);
        break;
      case Mut::Retag: ok = is_msg(x) && x.tag != "any"; break;
      case Mut::Repeer: ok = is_msg(x) && x.peer != "any"; break;
      case Mut::LateWait:
        if (x.op != Op::Wait) break;
        for (size_t j = s.i + 1; j < xs.size() && !ok; ++j)
          for (size_t op = 0; op < s.i && !ok; ++op)
            if (waits_for(x, xs[op]) && touches(xs[j], xs[op].a)) {
              ok = true;
              target = j;
            }
        break;
      case Mut::WriteInFlight: ok = (x.op == Op::Isend || x.op == Op::Irecv) && x.a.one_row(); break;
      case Mut::DropWait: ok = x.op == Op::Wait || x.op == Op::Waitall; break;
      case Mut::Uninit: ok = (is_msg(x) || x.op == Op::Copy || x.op == Op::Reduce) && x.a.one_row(); break;
      case Mut::OffByOne: ok = is_msg(x) && x.a.one_row() && p.buffer(x.a.buf)->dim0 != "1"; break;
      case Mut::Resize: ok = is_msg(x) && x.a.one_row(); break;
    }
    if (ok) {
      fit.push_back(s);
      fit_target.push_back(target);
    }
  }
  std::vector<size_t> inits;
  for (size_t d = 0; d < p.decls.size(); ++d)
    if (p.decls[d].rfind("init ", 0) == 0) inits.push_back(d);
  if (m == Mut::Uninit && !inits.empty() && g.coin(0.4)) {  // forget an init: its buffer's reads are undefined
    const size_t d = inits[static_cast<size_t>(g.pick(0, static_cast<int64_t>(inits.size()) - 1))];
    p.mutation = cat({"forgot \"", p.decls[d], "\""});
    p.decls.erase(p.decls.begin() + static_cast<std::ptrdiff_t>(d));
    return true;
  }
  if (fit.empty()) return false;
  const size_t k = static_cast<size_t>(g.pick(0, static_cast<int64_t>(fit.size()) - 1));
  const Site& s = fit[k];
  const Node x = s.node();
  const std::string cond = guard(g, s);
  std::string what;
  switch (m) {
    case Mut::DropRecv:
      what = "dropped";
      replace(s, 1, {}, cond);
      break;
    case Mut::DupRecv:
      what = "duplicated";
      replace(s, 1, {x, x}, cond);
      break;
    case Mut::Swap:
      what = cat({"swapped with the next statement, \"", stmt_text((*s.list)[s.i + 1]), "\","});
      replace(s, 2, {(*s.list)[s.i + 1], x}, cond);
      break;
    case Mut::Retag: {
      Node y = x;
      y.tag = x.tag.empty() ? "1" : cat({x.tag, " + 1"});
      what = cat({"retagged as \"", stmt_text(y), "\""});
      replace(s, 1, {y}, cond);
      break;
    }
    case Mut::Repeer: {
      Node y = x;
      y.peer = cat({"(", x.peer, " + 1) % N"});
      what = cat({"sent to / received from the next rank, \"", stmt_text(y), "\","});
      replace(s, 1, {y}, cond);
      break;
    }
    case Mut::LateWait: {
      const size_t j = fit_target[k];
      std::vector<Node> moved((*s.list).begin() + static_cast<std::ptrdiff_t>(s.i) + 1,
                              (*s.list).begin() + static_cast<std::ptrdiff_t>(j) + 1);
      what = cat({"moved after \"", stmt_text((*s.list)[j]), "\", which uses the chunk in flight,"});
      moved.push_back(x);
      replace(s, j - s.i + 1, std::move(moved), cond);
      break;
    }
    case Mut::WriteInFlight: {
      const std::string spare = scratch(p, x.a.buf, "spare", true);
      what = cat({"followed (before its wait) by a write to its chunk, copy ", spare, "[0] into ", x.a.text(), ","});
      replace(s, 1, {x, local(Op::Copy, {spare, "0"}, x.a)}, cond);
      break;
    }
    case Mut::DropWait:
      what = "dropped";
      replace(s, 1, {}, cond);
      break;
    case Mut::Uninit: {
      const std::string junk = scratch(p, x.a.buf, "junk", false);
      what = cat({"preceded by a read of the never-initialised ", junk, "[0] (copy into ", x.a.text(), "),"});
      replace(s, 1, {local(Op::Copy, {junk, "0"}, x.a), x}, cond);
      break;
    }
    case Mut::OffByOne: {
      Node y = x;
      y.a.idx = cat({"(", x.a.idx, " + 1) % ", p.buffer(x.a.buf)->dim0});
      what = cat({"off by one chunk: \"", stmt_text(y), "\""});
      replace(s, 1, {y}, cond);
      break;
    }
    case Mut::Resize: {
      Node y = x;
      y.a = {wide(p, x.a.buf), "0 .. 2"};
      what = cat({"twice the size: \"", stmt_text(y), "\""});
      replace(s, 1, {y}, cond);
      break;
    }
  }
  p.mutation = cat({"\"", stmt_text(x), "\" ", what, cond.empty() ? " everywhere it runs" : cat({" where ", cond})});
  return true;
}

void mutate(Gen& g, Prog& p) {
  std::vector<Mut> order{Mut::DropRecv, Mut::DupRecv,       Mut::Swap,     Mut::Swap,   Mut::Retag,    Mut::Repeer, Mut::LateWait,
                         Mut::LateWait, Mut::WriteInFlight, Mut::DropWait, Mut::Uninit, Mut::OffByOne, Mut::Resize};
  std::shuffle(order.begin(), order.end(), g.rng);
  for (Mut m : order)
    if (mutate(g, p, m)) return;
}

}  // namespace

StructuredCase structured_mpi_schedule(std::mt19937_64& rng, uint32_t max_ranks) {
  max_ranks = std::max<uint32_t>(max_ranks, 2);
  Gen g{rng};
  const bool perturb = g.coin(0.35);
  Prog p;
  switch (g.pick(0, 14)) {
    case 0:
    case 1: p = ring(g, max_ranks, false); break;
    case 2:
    case 3: p = ring(g, max_ranks, true); break;
    case 4:
    case 5: p = shift(g, max_ranks); break;
    case 6:
    case 7: p = burst(g, max_ranks); break;
    case 8:
    case 9: p = pipeline(g, max_ranks); break;
    case 10:
    case 11: p = window(g, max_ranks); break;
    case 12: p = exchange(g, max_ranks); break;
    default: p = wildcard(g, max_ranks, perturb && g.coin(0.5)); break;
  }
  if (perturb && p.mutation.empty()) mutate(g, p);
  StructuredCase out;
  out.nranks = g.n;
  out.family = p.mutation.empty() ? p.family : cat({p.family, "+mutation"});
  out.text = render(p, g.n);
  out.expect = p.expect;
  return out;
}

}  // namespace sgtest
