// The elaborator's statements that emit steps: choreographic sends, local-view sends, receives
// and waits (with their handles), copies and reductions, computes and collectives. Apart because
// each lowers one statement to steps through emit() (elaborate_access.cpp), on the ranks it
// concerns.
#include "core/graph/elaborate_impl.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace sg::elab::detail {

void Elaborator::check_same_bytes(const Range& a, const Range& b, const Ref& at, const char* what) {
  uint64_t ba = g_->range_bytes(a), bb = g_->range_bytes(b);
  if (ba != bb)
    fail(at.loc, at.length,
         std::string(what) + " of different sizes (" + std::to_string(ba) + " bytes from " + g_->range_name(a) + ", " + std::to_string(bb) +
             " bytes into " + g_->range_name(b) + ")");
}

void Elaborator::send(const SendStmt& s, Frame& f) {
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

void Elaborator::need_on(const Stmt& s, const char* what) {
  if (!in_on_)
    fail(s.loc, s.length,
         std::string("'") + what + "' is a local-view statement: put it inside an 'on' block" +
             (std::string(what) == "send" ? " (or write a choreographic 'send B[i] from A to P')" : ""));
}

void Elaborator::p2p(const P2PStmt& s, Frame& f) {
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

void Elaborator::wait(const WaitStmt& s, Frame& f) {
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
void Elaborator::for_targets(const Expr* at, Frame& f, Fn&& fn) {
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

void Elaborator::copy(const CopyStmt& s, Frame& f) {
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

void Elaborator::compute(const ComputeStmt& s, Frame& f) {
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

void Elaborator::coll(const CollStmt& s, Frame& f) {
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
    if (gr.index_of(on_rank_) < 0) fail(s.loc, s.length, "rank " + std::to_string(on_rank_) + " is not a member of the collective's group");
    one(on_rank_);
  } else {
    for (uint32_t k = 0; k < gr.count; ++k) one(gr.member(k));
  }
}

}  // namespace sg::elab::detail
