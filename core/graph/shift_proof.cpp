// A shift of the ranks proved from the schedule's text (shift_proof.hpp).
//
// Why one representative per class of `group` is enough, beside the shift s being proved: where
// the group's shifts were proved here too, rank x = g·s^m·r1 (g in the group, r1 a
// representative of both) runs g(s^m(prog(r1))) = s^m(g(prog(r1))) (shifts on different digits
// commute), so prog(s(x)) = s(prog(x)) follows from the proof at r1 alone.
#include "core/graph/shift_proof.hpp"

#include "core/dsl/resolve.hpp"
#include "core/graph/shift_values.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

namespace sg {

namespace {

using namespace shift_proof;

class Prover : Values {
 public:
  Prover(const ShiftProofInput& in, const RankSymmetry& group, const RankShift& s) : Values(in, s), group_(group) {}

  std::string run() {
    try {
      if (!in_.schedule || !in_.program) throw NotProved{"no schedule"};
      const Schedule& sch = *in_.schedule;
      slots_.assign(sch.num_slots, AVal{});
      for (const auto& p : sch.params) {
        if (p.kind != ParamKind::Int) throw NotProved{"a schedule with group or buffer parameters"};
        auto it = std::find_if(in_.params.begin(), in_.params.end(), [&](const auto& kv) { return kv.first == p.name; });
        if (it == in_.params.end()) throw NotProved{"parameter '" + p.name + "' has no value"};
        slots_[static_cast<size_t>(p.slot)].v = it->second;
      }
      block(sch.body);
      check_globals();
    } catch (const NotProved& e) {
      return e.why;
    }
    return "";
  }

 private:
  const RankSymmetry& group_;
  bool in_on_ = false;
  uint64_t work_ = 0;

  // ------------------------------------------------------------------ what steps may depend on
  [[noreturn]] void refuse_tag(const Expr& e, const Tag& t, const char* what) const {
    const Expr& at = t.at ? *t.at : e;
    refuse(at.loc, std::string(what) + " depends on the rank in a way the proof does not follow");
  }
  // The same for every rank of a class.
  int64_t inv(const Expr& e, const char* what) {
    AVal a = num(e);
    if (a.t.kind != Tag::Inv) refuse_tag(e, a.t, what);
    return a.v;
  }
  // The representative's own rank moved: rank r0 + m·inner finds the value's m-th image.
  bool moved_rank(int64_t v, const Tag& t) const {
    if (v < 0 || v >= in_.nranks) return false;
    if (t.kind == Tag::Lin) return t.c == s_.inner && s_.digit(static_cast<uint32_t>(v)) == 0;
    if (t.kind != Tag::Mod) return false;
    const int64_t I = s_.inner, M = s_.count, d = s_.digit(static_cast<uint32_t>(v));
    // The moved digit itself, round its M values: v0 + I·((d + m) mod M - d) is the m-th image.
    if (t.s == I && t.k == M && ((t.c % M) + M) % M == 1 && t.u0 == d) return true;
    // A position round blocks of I·M ranks from the first: (v0 + I·m) mod I·M.
    if (t.s == 1 && t.k == I * M && t.c == I && t.u0 == v && v < I * M) return true;
    return false;
  }
  void rank(const Expr& e, const char* what) {
    AVal a = num(e);
    if (!moved_rank(a.v, a.t)) {
      if (a.t.kind == Tag::Inv) refuse(e.loc, std::string(what) + " is the same rank for every rank of a class");
      refuse_tag(e, a.t, what);
    }
  }
  // Whether the shift maps the set of ranks {start + j·stride} onto itself.
  bool invariant_set(int64_t start, uint32_t count, uint32_t stride) const {
    for (uint32_t j = 0; j < count; ++j) {
      int64_t x = s_.moved(static_cast<uint32_t>(start + int64_t{j} * stride));
      if (x < start || (x - start) % stride || (x - start) / stride >= count) return false;
    }
    return true;
  }
  // A collective's group inside an `on` block: either every member the representative's own
  // moved (the group moves with the rank), or the same group for every rank, mapped onto itself.
  // A collective whose member k reads or writes its own block k (allgather, reduce-scatter)
  // tells its members' places apart: a group mapped onto itself with its members moved to other
  // places does not map the collective's accesses.
  static bool positional(CollKind k) { return k == CollKind::Allgather || k == CollKind::ReduceScatter; }
  void group(const Expr* e, const Loc& at, bool positional_kind) {
    AVal g;
    if (e) {
      g = eval(*e);
      if (!g.group) refuse(e->loc, "an integer where a group is needed");
    } else {
      g.group = true;  // the frame's group: every rank here (calls are refused)
      g.count = in_.nranks;
    }
    if (g.t.kind == Tag::Inv) {
      if (!invariant_set(g.v, g.count, g.stride)) refuse(at, "a group the shift does not map onto itself");
      if (positional_kind)
        refuse(at, "an all-gather or reduce-scatter over a group the shift maps onto itself, its members to other places");
      return;
    }
    for (uint32_t j = 0; j < g.count; ++j)
      if (!moved_rank(g.v + int64_t{j} * g.stride, g.t)) refuse_tag(*e, g.t, "a group member");
  }
  // A chunk reference's indices, invariant; their values appended to `key`. The buffer is then
  // not rotated (a whole buffer may be: it is its own image).
  void ref(const Ref& r, std::vector<int64_t>* key = nullptr) {
    if (r.present() && !r.idx.empty()) rotate(r, 0);
    if (key) key->push_back(r.slot);
    for (const auto& ix : r.idx) {
      int64_t lo = ix.lo ? inv(*ix.lo, "a chunk index") : INT64_MIN;
      int64_t hi = ix.hi ? inv(*ix.hi, "a chunk index") : INT64_MIN;
      if (key) key->insert(key->end(), {lo, hi});
    }
    if (key) key->push_back(INT64_MAX);
  }

  // ------------------------------------------------------------------ global statements
  // A statement outside `on` blocks runs on every member of its group, alike but for the group:
  // each execution is a record (the statement and its values), and each rank's list of
  // (record, group) is compared with its image's after the walk (check_globals).
  // Each record carries the number of `on`-block and rank-loop executions before it: a rank and
  // its image take part in the same executions (their ranges are the shift's own), so equal
  // epochs keep a global statement where it was between them on both.
  struct Global {
    uint32_t rec, group;
    uint64_t epoch;
  };
  uint64_t epoch_ = 0;
  std::map<std::vector<int64_t>, uint32_t> recs_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> group_ids_;
  std::vector<GroupInfo> groups_;
  std::vector<std::vector<Global>> per_rank_;

  std::vector<char> rec_positional_;  // per record: a member's place decides its accesses

  void global(const Stmt& st, const Expr* over, std::vector<int64_t>& key, bool positional_kind) {
    GroupInfo g{0, in_.nranks, 1};
    if (over) {
      AVal a = eval(*over);
      if (!a.group) refuse(over->loc, "an integer where a group is needed");
      g = GroupInfo{static_cast<uint32_t>(a.v), a.count, a.stride};
    }
    key.insert(key.begin(), st.id);
    uint32_t rec = recs_.emplace(key, static_cast<uint32_t>(recs_.size())).first->second;
    if (rec_positional_.size() <= rec) rec_positional_.resize(rec + 1, 0);
    rec_positional_[rec] = positional_kind;
    auto [it, fresh] = group_ids_.emplace(std::make_tuple(g.start, g.count, g.stride), static_cast<uint32_t>(groups_.size()));
    if (fresh) groups_.push_back(g);
    if (per_rank_.empty()) per_rank_.resize(in_.nranks);
    for (uint32_t j = 0; j < g.count; ++j) {
      per_rank_[g.member(j)].push_back(Global{rec, it->second, epoch_});
      tick();
    }
  }

  void check_globals() {
    if (per_rank_.empty()) return;
    // (a, b, places): the shift maps group a onto group b (each member to its own place in b)
    std::set<std::tuple<uint32_t, uint32_t, bool>> mapped;
    auto maps = [&](uint32_t a, uint32_t b, bool places) {
      if (mapped.count({a, b, places})) return true;
      const GroupInfo &ga = groups_[a], &gb = groups_[b];
      if (ga.count != gb.count) return false;
      for (uint32_t j = 0; j < ga.count; ++j) {
        int64_t at = gb.index_of(s_.moved(ga.member(j)));
        if (at < 0 || (places && at != j)) return false;
      }
      mapped.insert({a, b, places});
      return true;
    };
    for (uint32_t x = 0; x < in_.nranks; ++x) {
      const auto &a = per_rank_[x], &b = per_rank_[s_.moved(x)];
      bool same = a.size() == b.size();
      for (size_t i = 0; same && i < a.size(); ++i)
        same = a[i].rec == b[i].rec && a[i].epoch == b[i].epoch && maps(a[i].group, b[i].group, rec_positional_[a[i].rec]);
      if (!same)
        throw NotProved{"ranks " + std::to_string(x) + " and " + std::to_string(s_.moved(x)) +
                        " run different statements outside `on` blocks"};
    }
  }

  // ------------------------------------------------------------------ choreographies
  // A loop over the ranks (`for r in 0 .. N { send B[(r - s) % N] from r to (r + 1) % N; }`) runs
  // once per representative with r abstract, like an `on` block. Its transfers' ends must be the
  // representative's own moved, and a chunk index that moves with r moves its buffer's chunks:
  // each buffer has one rotation δ (chunk c of rank x stands for chunk c + δ·m of rank x moved m
  // times; 0 for every buffer indexed otherwise). Since the shift reorders the loop's iterations,
  // one execution of the loop must not depend on their order: each rank sends in at most one
  // iteration and receives in at most one (its sends, and its local work, keep their order), and
  // no two iterations touch one chunk of one rank where either writes (the hazards between them).
  std::map<std::string, int64_t> delta_;  // buffer -> rotation, once fixed
  bool in_rank_loop_ = false;
  struct Access {
    uint32_t iter;  // the representative's iteration (its index in this execution)
    int64_t rank;   // at m = 0
    std::string buf;
    bool whole;
    int64_t chunk;  // at m = 0 (not whole)
    bool write;
  };
  std::vector<Access> accesses_;
  std::vector<AVal> send_roles_, recv_roles_;  // per iteration: who sends, who receives
  uint32_t iter_ = 0;
  std::set<std::tuple<int64_t, int64_t, int64_t>> invariant_ranges_;

  std::pair<uint32_t, uint32_t> buffer_shape(const Ref& r) const {
    for (const auto& b : in_.buffers)
      if (b.name == r.buf) return {b.chunks, b.dims};
    refuse(r.loc, "buffer '" + r.buf + "' is not known");
  }
  void rotate(const Ref& r, int64_t delta) {
    auto [it, fresh] = delta_.emplace(r.buf, delta);
    if (!fresh && it->second != delta)
      refuse(r.loc, "buffer '" + r.buf + "' is indexed by the rank in one place and not, or otherwise, in another");
  }
  // The chunk a transfer's end names, as it moves with the ranks.
  Access chunk(const Ref& r, int64_t rank, bool write) {
    Access a{iter_, rank, r.buf, r.idx.empty(), 0, write};
    if (a.whole) return a;
    auto [chunks, dims] = buffer_shape(r);
    if (dims != 1 || r.idx.size() != 1 || r.idx[0].hi) {
      ref(r);
      a.whole = false;
      a.chunk = INT64_MIN;  // fixed chunks, compared as one (conservative)
      return a;
    }
    AVal c = num(*r.idx[0].lo);
    a.chunk = c.v;
    const int64_t K = chunks;
    int64_t delta = 0;
    if (c.t.kind == Tag::Inv) {
      delta = 0;
    } else if (c.t.kind == Tag::Lin && span(c.v, c.t.c).first >= 0 && span(c.v, c.t.c).second < K) {
      delta = ((c.t.c % K) + K) % K;
    } else if (c.t.kind == Tag::Mod && c.t.k == K && c.t.s == 1) {
      delta = ((c.t.c % K) + K) % K;
    } else {
      refuse_tag(*r.idx[0].lo, c.t, "a chunk index");
    }
    // Moved count times a rank is itself again: so must its chunks be (chunk c of the last rank
    // of a class, moved once, is chunk c + δ of the first).
    if (delta * s_.count % K) refuse(r.loc, "buffer '" + r.buf + "' rotates by a step that does not come round with the ranks");
    rotate(r, delta);
    return a;
  }
  static bool same_role(const AVal& a, const AVal& b) {
    return a.v == b.v && a.t.kind == b.t.kind && a.t.c == b.t.c && a.t.k == b.t.k && a.t.s == b.t.s && a.t.u0 == b.t.u0;
  }
  void transfer(const SendStmt& st) {
    AVal from = num(*st.from), to = num(*st.to);
    if (!moved_rank(from.v, from.t)) refuse_tag(*st.from, from.t, "a sender");
    if (!moved_rank(to.v, to.t)) refuse_tag(*st.to, to.t, "a receiver");
    for (auto [roles, who] : {std::pair{&send_roles_, &from}, std::pair{&recv_roles_, &to}}) {
      if (roles->size() <= iter_) roles->push_back(*who);
      else if (!same_role((*roles)[iter_], *who)) refuse(st.loc, "one iteration's transfers sent or received by different ranks");
    }
    accesses_.push_back(chunk(st.src, from.v, false));
    accesses_.push_back(chunk(st.into.present() ? st.into : st.src, to.v, true));
  }
  static bool sends_use(const Block& b, int32_t slot) {
    std::vector<int32_t> used;
    for (const auto& st : b) {
      if (st->kind == StmtKind::Send) {
        auto& s = static_cast<const SendStmt&>(*st);
        expr_slots(s.from.get(), used);
        expr_slots(s.to.get(), used);
      } else if (st->kind == StmtKind::For) {
        if (sends_use(static_cast<const ForStmt&>(*st).body, slot)) return true;
      } else if (st->kind == StmtKind::If) {
        auto& s = static_cast<const IfStmt&>(*st);
        if (sends_use(s.then_body, slot) || sends_use(s.else_body, slot)) return true;
      }
    }
    return std::find(used.begin(), used.end(), slot) != used.end();
  }
  // The ranks of lo .. hi (by step) whose moved digit is 0 and that represent their class of the
  // group so far, in order: N / count of them at most, found without visiting the others (a ring's
  // loop over the ranks runs 2(N - 1) times).
  std::vector<int64_t> representatives(int64_t lo, int64_t hi, int64_t step) const {
    std::vector<int64_t> out;
    const int64_t I = s_.inner, block = I * s_.count;
    for (int64_t base = lo - lo % block; base < hi; base += block)
      for (int64_t r = std::max(base, lo); r < std::min(base + I, hi); ++r)
        if ((r - lo) % step == 0 && group_.representative_rank(static_cast<uint32_t>(r))) out.push_back(r);
    return out;
  }

  // One execution of a loop over the ranks.
  void rank_loop(const ForStmt& s) {
    if (in_rank_loop_) refuse(s.loc, "a loop over the ranks inside another");
    if (!group_.none()) refuse(s.loc, "a choreography beside other shifts");
    int64_t lo = inv(*s.lo, "a loop bound"), hi = inv(*s.hi, "a loop bound");
    int64_t step = s.step ? inv(*s.step, "a loop step") : 1;
    if (step <= 0 || lo < 0 || hi > in_.nranks) refuse(s.loc, "a loop over the ranks that is not ascending inside 0 .. N");
    if (!invariant_ranges_.count({lo, hi, step})) {  // (a ring's loop runs 2(N - 1) times over one range)
      auto in_range = [&](int64_t r) { return r >= lo && r < hi && (r - lo) % step == 0; };
      for (int64_t r = lo; r < hi; r += step)
        if (!in_range(s_.moved(static_cast<uint32_t>(r)))) refuse(s.loc, "a loop over the ranks the shift does not map onto itself");
      invariant_ranges_.insert({lo, hi, step});
    }
    in_rank_loop_ = true;
    ++epoch_;
    accesses_.clear();
    send_roles_.clear();
    recv_roles_.clear();
    iter_ = 0;
    for (int64_t r : representatives(lo, hi, step)) {
      slots_[static_cast<size_t>(s.slot)] = AVal{false, r, 0, 1, lin(s_.inner)};
      block(s.body);
      tick();
      if (send_roles_.size() == iter_) send_roles_.emplace_back();  // (an iteration with no transfer)
      if (recv_roles_.size() == iter_) recv_roles_.emplace_back();
      ++iter_;
    }
    in_rank_loop_ = false;
    // Two iterations never send from (receive at) one rank: the representatives' senders are in
    // classes of their own (each class's ranks are one representative's iterations, moved).
    for (const auto* roles : {&send_roles_, &recv_roles_}) {
      std::set<uint32_t> classes;
      for (const AVal& a : *roles)
        if (a.t.kind != Tag::Inv && !classes.insert(s_.class_of(static_cast<uint32_t>(a.v))).second)
          refuse(s.loc, "two iterations of a loop over the ranks on one rank");
    }
    // No two iterations touch one chunk of one rank where either writes: iteration b moved j
    // times is a's where j moves b's rank onto a's.
    for (const Access& a : accesses_)
      for (const Access& b : accesses_) {
        tick();
        if (!(a.write || b.write) || a.buf != b.buf) continue;
        auto ra = static_cast<uint32_t>(a.rank), rb = static_cast<uint32_t>(b.rank);
        if (s_.class_of(ra) != s_.class_of(rb)) continue;
        uint32_t j = s_.times(rb, ra);
        if (j == 0 && a.iter == b.iter) continue;  // one iteration: its own order
        bool clash = a.whole || b.whole || a.chunk == INT64_MIN || b.chunk == INT64_MIN;
        if (!clash) {
          int64_t K = buffer_shape(Ref{a.buf, {}, 1, {}, -1}).first, d = delta_.at(a.buf);
          clash = ((b.chunk + d * j) % K + K) % K == a.chunk;
        }
        if (clash) refuse(s.loc, "two iterations of a loop over the ranks touch one chunk of one rank (their order would decide)");
      }
  }

  // ------------------------------------------------------------------ statements
  void block(const Block& b) {
    for (const auto& st : b) stmt(*st);
  }

  void tick() {
    if (++work_ > in_.max_work) throw NotProved{"the proof would take too long (" + std::to_string(in_.max_work) + " statements)"};
  }

  void stmt(const Stmt& st) {
    tick();
    if (st.erroneous) refuse(st.loc, "a statement with a syntax error");
    if (in_rank_loop_ && st.kind != StmtKind::Let && st.kind != StmtKind::For && st.kind != StmtKind::If && st.kind != StmtKind::Send)
      refuse(st.loc, "a statement beside the transfers of a loop over the ranks");
    switch (st.kind) {
      case StmtKind::Let: {
        auto& s = static_cast<const LetStmt&>(st);
        slots_[static_cast<size_t>(s.slot)] = eval(*s.value);
        return;
      }
      case StmtKind::For: {
        auto& s = static_cast<const ForStmt&>(st);
        if (!in_on_ && sends_use(s.body, s.slot)) {
          rank_loop(s);
          return;
        }
        int64_t lo = inv(*s.lo, "a loop bound"), hi = inv(*s.hi, "a loop bound");
        int64_t step = s.step ? inv(*s.step, "a loop step") : 1;
        if (step == 0) refuse(st.loc, "a loop step of zero");
        for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) {
          slots_[static_cast<size_t>(s.slot)] = AVal{false, v, 0, 1, Tag{}};
          block(s.body);
          tick();
        }
        return;
      }
      case StmtKind::If: {
        auto& s = static_cast<const IfStmt&>(st);
        block(inv(*s.cond, "a condition") ? s.then_body : s.else_body);
        return;
      }
      case StmtKind::Require:
        if (!inv(*static_cast<const RequireStmt&>(st).cond, "a requirement")) refuse(st.loc, "a requirement fails");
        return;
      case StmtKind::Buffer:
      case StmtKind::Init:
      case StmtKind::Expect:
        // Declarations and postconditions: no steps (values only, which timing does not read).
        if (in_on_) refuse(st.loc, "a declaration inside an `on` block");
        return;
      case StmtKind::Send:
        if (!in_rank_loop_) refuse(st.loc, "a choreographic transfer outside a loop over the ranks");
        transfer(static_cast<const SendStmt&>(st));
        return;
      case StmtKind::P2P: {
        auto& s = static_cast<const P2PStmt&>(st);
        if (!in_on_) refuse(st.loc, "a point-to-point statement outside an `on` block");
        if (!s.peer || s.any_tag) refuse(st.loc, "a receive from any source or with any tag");
        rank(*s.peer, "a peer");
        if (s.tag) inv(*s.tag, "a tag");
        ref(s.buf);
        return;
      }
      case StmtKind::Wait:
        if (!in_on_) refuse(st.loc, "a wait outside an `on` block");
        return;
      case StmtKind::Copy: {
        auto& s = static_cast<const CopyStmt&>(st);
        if (s.at) refuse(st.loc, "a statement at one rank");
        std::vector<int64_t> key;
        ref(s.src, &key);
        ref(s.dst, &key);
        if (!in_on_) global(st, nullptr, key, false);
        return;
      }
      case StmtKind::Compute: {
        auto& s = static_cast<const ComputeStmt&>(st);
        if (s.at) refuse(st.loc, "a statement at one rank");
        std::vector<int64_t> key;
        if (s.flops) key.push_back(inv(*s.flops, "a compute's flops"));
        for (const auto* list : {&s.inputs, &s.outputs, &s.reads, &s.writes})
          for (const Ref& r : *list) ref(r, &key);
        if (!in_on_) global(st, nullptr, key, false);
        return;
      }
      case StmtKind::Coll: {
        auto& s = static_cast<const CollStmt&>(st);
        std::vector<int64_t> key;
        ref(s.buf, &key);
        ref(s.into, &key);
        if (!in_on_) {
          if (s.root) refuse(st.loc, "a rooted collective outside an `on` block (its root would have to move)");
          global(st, s.over.get(), key, positional(s.what));
          return;
        }
        if (s.root) rank(*s.root, "a root");
        group(s.over.get(), st.loc, positional(s.what));
        return;
      }
      case StmtKind::On: on(static_cast<const OnStmt&>(st)); return;
      case StmtKind::Call: refuse(st.loc, "a call");
    }
    refuse(st.loc, "a statement of an unknown kind");
  }

  void on(const OnStmt& s) {
    if (in_on_) refuse(s.loc, "an `on` block inside another");
    if (s.rank) refuse(s.loc, "an `on` block for one rank");
    int64_t lo = inv(*s.lo, "an `on` range"), hi = inv(*s.hi, "an `on` range");
    int64_t step = s.step ? inv(*s.step, "an `on` step") : 1;
    if (step <= 0) refuse(s.loc, "an `on` range that is not ascending");
    lo = std::max<int64_t>(lo, 0);
    hi = std::min<int64_t>(hi, in_.nranks);
    if (lo >= hi) return;
    auto in_range = [&](int64_t r) { return r >= lo && r < hi && (r - lo) % step == 0; };
    for (int64_t r = lo; r < hi; r += step)
      if (!in_range(s_.moved(static_cast<uint32_t>(r)))) refuse(s.loc, "an `on` range the shift does not map onto itself");
    in_on_ = true;
    ++epoch_;
    for (int64_t r : representatives(lo, hi, step)) {
      AVal& var = slots_[static_cast<size_t>(s.slot)];
      var = AVal{false, r, 0, 1, lin(s_.inner)};
      block(s.body);
    }
    in_on_ = false;
  }
};

}  // namespace

std::string prove_shift(const ShiftProofInput& in, const RankSymmetry& group, const RankShift& s) {
  if (s.count < 2 || uint64_t{s.inner} * s.count > in.nranks || in.nranks % (s.inner * s.count)) return "not a shift of these ranks";
  return Prover(in, group, s).run();
}

}  // namespace sg
