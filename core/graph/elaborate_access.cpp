// The elaborator's chunk access tracking and step emission: per-rank chunk states (the last
// writer and the readers since, in a pooled list), the dependencies they give a step, the
// release of a top-level `on` block's dead buffers, compute entries shared by content, emit()
// and the build's memory watch. Apart because it is the graph-building core every statement
// that emits a step goes through, and holds all of the hazard state.
#include "core/graph/elaborate_impl.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/base/errors.hpp"
#include "core/base/sizes.hpp"

namespace sg::elab::detail {

// A buffer's chunk states on one rank, made at its first touch.
ChunkState* Elaborator::chunk_states(uint32_t buf, uint32_t rank) {
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
void Elaborator::release(uint32_t rank) {
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
std::vector<uint32_t> Elaborator::dead_after(const Block& b, size_t i, const Frame& f) {
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

void Elaborator::collect_deps(uint32_t rank, const Ranges& rd, const Ranges& wr) {
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
uint32_t Elaborator::intern_compute(const ComputeInfo& c, const std::vector<Range>& rd, const std::vector<Range>& wr) {
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
void Elaborator::drop_readers(ChunkState& cs) {
  if (cs.readers != kNil && (cs.readers & kPooled))
    for (uint32_t p = cs.readers & ~kPooled; p != kNil;) {
      uint32_t nx = pool_[p].second;
      pool_[p].second = free_;
      free_ = p;
      p = nx;
    }
  cs.readers = kNil;
}

void Elaborator::register_access(StepId id, uint32_t rank, const Ranges& rd, const Ranges& wr) {
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
uint32_t Elaborator::pool_node(StepId id, uint32_t next) {
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
StepId Elaborator::emit(StepKind k, uint8_t flags, uint32_t rank, const Stmt& st, const Range& primary, uint32_t refv, const Ranges& rd,
                        const Ranges& wr, const StepId* extra, size_t nextra) {
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
void Elaborator::watch_memory() {
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

[[noreturn]] void Elaborator::throw_too_big(const Stmt& st) {
  diags_.error(st.loc, "the step graph outgrew 32-bit step ids (4 G steps or dependencies); use fewer ranks", st.length);
  throw Abort{};
}

}  // namespace sg::elab::detail
