// The reference interpreter's step semantics: what each step does to the chunks (reads, writes
// and reductions, with the undefined reads and the followed atoms' trails they record), sends
// and receives posted, computes and attention tiles, collectives. Apart from the run loop and
// from matching; members of the Interp of interpret_impl.hpp.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/interp/interpret_impl.hpp"

namespace sg::interp_detail {

void Interp::trail_read(uint32_t rank, uint32_t buf, uint32_t chunk) {
  for (auto& h : holders_) {
    auto it = h.find(loc_key(rank, buf, chunk));
    if (it != h.end()) it->second.read = true;
  }
}
// Before a chunk's value changes from `before` to `after` by step `by`.
// `added`: what a reduction adds (null for a plain write).
void Interp::trail_write(uint32_t rank, uint32_t buf, uint32_t chunk, const Value& before, const Value& after, StepId by,
                         const Value* added) {
  for (size_t i = 0; i < trails_.size(); ++i) {
    const Run& a = trails_[i].atom;
    bool had = holds(before, a), has = holds(after, a);
    uint64_t key = loc_key(rank, buf, chunk);
    auto& h = holders_[i];
    if (had && !has) {
      auto it = h.find(key);
      if (it != h.end() && !it->second.read)
        trails_[i].events.push_back({TrailEvent::Lost, by, rank, buf, chunk, it->second.brought, false});
      if (it != h.end()) h.erase(it);
    }
    // A write that puts it there, or a reduction that adds it (again, when it was there).
    bool adds = added ? holds(*added, a) : has;
    if (adds) {
      trails_[i].events.push_back({TrailEvent::Arrive, by, rank, buf, chunk, kNoStep, had});
      h[key] = Holder{by, false};
    }
  }
}

const Value& Interp::read(uint32_t rank, uint32_t buf, uint32_t chunk, StepId by) {
  if (!trails_.empty()) trail_read(rank, buf, chunk);
  ChunkSlot& c = state_.at(rank, buf, chunk);
  if (!c.v.defined && c.writer == kNoStep && c.v.runs.empty()) {
    if (g_.buffers[buf].accumulator) {
      c.v = Value::empty();  // an accumulator starts empty
      return c.v;
    }
    uint64_t key = (uint64_t{rank} << 32) ^ (uint64_t{buf} << 24) ^ chunk;
    if (undefined_seen_.insert(key).second && undef_reported_ < 32) {
      ++undef_reported_;
      issues_.push_back(Issue::of_run(IssueKind::UndefinedRead, rank, by,
                                      std::string(step_kind_name(g_.kind(by))) + " on rank " + std::to_string(rank) + " reads " +
                                          g_.chunk_name(buf, chunk) + ", which was never written",
                                      buf, chunk));
    }
  }
  return c.v;
}
std::vector<Value> Interp::read_range(uint32_t rank, const Range& r, StepId by) {
  std::vector<Value> out;
  out.reserve(r.cnt);
  for (uint32_t k = 0; k < r.cnt; ++k) out.push_back(read(rank, r.buf, r.lo + k, by));
  return out;
}
void Interp::write(uint32_t rank, uint32_t buf, uint32_t chunk, Value v, StepId by) {
  ChunkSlot& c = state_.at(rank, buf, chunk);
  if (!trails_.empty()) trail_write(rank, buf, chunk, c.v, v, by, nullptr);
  c.v = std::move(v);
  c.writer = by;
}
void Interp::reduce_into(uint32_t rank, uint32_t buf, uint32_t chunk, const Value& v, StepId by) {
  read(rank, buf, chunk, by);
  ChunkSlot& c = state_.at(rank, buf, chunk);
  if (!trails_.empty()) {
    Value before = c.v;
    add_into(c.v, v);
    trail_write(rank, buf, chunk, before, c.v, by, &v);
  } else {
    add_into(c.v, v);
  }
  c.writer = by;
}
void Interp::apply(uint32_t rank, const Range& dst, const std::vector<Value>& payload, bool reduce, StepId by) {
  for (uint32_t k = 0; k < dst.cnt && k < payload.size(); ++k) {
    if (reduce) reduce_into(rank, dst.buf, dst.lo + k, payload[k], by);
    else write(rank, dst.buf, dst.lo + k, payload[k], by);
  }
}

// ---------------------------------------------------------------- steps
void Interp::step(StepId s) {
  if (st_[s] & kCompleted) return;
  uint32_t rank = g_.rank(s);
  switch (g_.kind(s)) {
    case StepKind::Send: {
      if (st_[s] & kIssued) return;
      st_[s] |= kIssued;
      std::vector<Value> payload = read_range(rank, g_.range(s), s);
      if (!g_.local(s)) {
        StepId r = g_.ref(s);
        inbox_[r] = std::move(payload);
        complete(s);  // its receive is posted from the start
        if ((st_[r] & kDepsReady) && !(st_[r] & kCompleted)) step(r);
      } else {
        const P2PInfo& p = g_.p2p_info(s);
        Msg m{s, rank, p.tag, p.comm, std::move(payload)};
        if (o_.mode == SendMode::Bounded) {
          // Its connection's FIFO: the send completes once its message holds a slot.
          auto& fifo = fifo_[connection(rank, p)];
          fifo.push_back(s);
          if (fifo.size() <= std::max<uint32_t>(1, g_.connection_slots)) complete(s);
          else if (g_.nonblocking(s)) release(s);
        } else if (o_.mode == SendMode::Eager) {
          complete(s);  // the message is buffered
        } else if (g_.nonblocking(s)) {
          release(s);  // an isend has started; it completes when matched
        }
        deliver(p.peer, std::move(m));
      }
      break;
    }
    case StepKind::Recv: {
      st_[s] |= kIssued;
      if (!g_.local(s)) {
        auto it = inbox_.find(s);
        if (it == inbox_.end()) return;  // the send has not run yet: it will wake us
        apply(rank, g_.range(s), it->second, g_.flags(s) & kFlagReduce, s);
        inbox_.erase(it);
        partner_[s] = g_.ref(s);
        partner_[g_.ref(s)] = s;
        complete(s);
        break;
      }
      if (st_[s] & kArrived) return;  // already posted
      st_[s] |= kArrived;
      if (g_.nonblocking(s)) release(s);  // an irecv has started
      posted_[rank].push_back(s);
      progress(rank);
      break;
    }
    case StepKind::Copy:
    case StepKind::Reduce: {
      st_[s] |= kIssued;
      Range src = g_.copy_source(s), dst = g_.range(s);
      std::vector<Value> vals = read_range(rank, src, s);
      apply(rank, dst, vals, g_.kind(s) == StepKind::Reduce, s);
      complete(s);
      break;
    }
    case StepKind::Compute:
      st_[s] |= kIssued;
      compute(s);
      complete(s);
      break;
    case StepKind::Collective: {
      st_[s] |= kIssued;
      const CollInfo& c = g_.coll(s);
      if (!(st_[s] & kArrived)) {
        st_[s] |= kArrived;
        ++arrived_[c.instance];
      }
      const Instance& in = g_.instances[c.instance];
      const GroupInfo& gr = g_.groups[in.group];
      if (in.complete && in.consistent && arrived_[c.instance] == gr.count) run_collective(in);
      break;
    }
    case StepKind::Wait: {
      st_[s] |= kIssued;
      for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) {
        if (!(st_[*h] & kCompleted)) {
          waiters_[*h].push_back(s);
          return;
        }
      }
      for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) waited_.insert(*h);
      complete(s);
      break;
    }
  }
}

void Interp::compute(StepId s) {
  const ComputeInfo& c = g_.compute(s);
  uint32_t rank = g_.rank(s);
  const Range* rd = g_.ranges.data() + c.reads_off;
  const Range* wr = g_.ranges.data() + c.writes_off;
  if (c.kind == ComputeKind::Generic) {
    for (uint32_t i = 0; i < c.reads_cnt; ++i)
      for (uint32_t k = 0; k < rd[i].cnt; ++k) read(rank, rd[i].buf, rd[i].lo + k, s);
    for (uint32_t i = 0; i < c.writes_cnt; ++i)
      for (uint32_t k = 0; k < wr[i].cnt; ++k) write(rank, wr[i].buf, wr[i].lo + k, Value::contrib(wr[i].buf, rank, wr[i].lo + k), s);
    return;
  }
  // attn / attn_bwd: reads Q, KV (and the accumulators), writes O (dQ, dKV). An operand is
  // judged by the item it holds, not by the buffer it sits in: kv(m) rotated through a double
  // buffer (`copy KV[m] into cur[0]`, then `send cur[0]`) is still kv(m), and the tile's atoms
  // name the items' own buffers.
  const Range& q = rd[0];
  const Range& kv = rd[1];
  const Value& kvv = read(rank, kv.buf, kv.lo, s);
  uint32_t kv_home = 0;
  int64_t m = kvv.single_item_any(kv_home);
  if (m < 0) {
    bad_operand(s, rank, kv.buf, kv.lo, c.split_kv ? "K" : "KV", kvv, c.split_kv ? "a single k(m)" : "a single kv(m)");
    return;
  }
  uint32_t v_home = 0;
  if (c.split_kv) {  // V apart: it must hold the same item as K (v(m) beside k(m))
    const Range& vr = rd[c.reads_cnt - 1];
    const Value& vv = read(rank, vr.buf, vr.lo, s);
    if (vv.single_item_any(v_home) != m) {
      std::string want = "v(" + std::to_string(m) + "), the item K holds";
      bad_operand(s, rank, vr.buf, vr.lo, "V", vv, want.c_str());
      return;
    }
  }
  for (uint32_t k = 0; k < q.cnt; ++k) {
    const Value& qv = read(rank, q.buf, q.lo + k, s);
    uint32_t q_home = 0;
    int64_t i = qv.single_item_any(q_home);
    if (i < 0) {
      bad_operand(s, rank, q.buf, q.lo + k, "Q", qv, "a single q(i)");
      continue;
    }
    // attn adds A(i, m) to O[i]; attn_bwd adds Gq(i, m) to dQ[i] and Gkv(m, i) to dKV[j].
    // Each tile's atom is remembered with its step (the culprit of a foreign term).
    auto add = [&](AtomKind kind, uint32_t home, int64_t fixed, int64_t partner, const Range& into, uint32_t chunk) {
      Value v;
      v.defined = true;
      v.runs.push_back(
          Run{kind, c.mask, home, static_cast<uint32_t>(fixed), static_cast<uint32_t>(partner), static_cast<uint32_t>(partner + 1), 1});
      tile_steps_[tile_key(v.runs[0], v.runs[0].lo)] = s;
      reduce_into(rank, into.buf, chunk, v, s);
    };
    add(c.kind == ComputeKind::Attn ? AtomKind::Attn : AtomKind::GradQ, q_home, i, m, wr[0], wr[0].lo + k);
    if (c.kind == ComputeKind::AttnBwd) {
      add(AtomKind::GradKV, kv_home, m, i, wr[1], wr[1].lo);
      // dV: the V half of the same gradient, an atom of v(m)'s own buffer (so dK's partials
      // landing in dV are a wrong result, not the same terms).
      if (c.split_kv) add(AtomKind::GradV, v_home, m, i, wr[2], wr[2].lo);
    }
  }
}

void Interp::bad_operand(StepId s, uint32_t rank, uint32_t buf, uint32_t chunk, const char* what, const Value& v, const char* want) {
  issues_.push_back(Issue::of_run(IssueKind::BadOperand, rank, s,
                                  std::string("attention tile on rank ") + std::to_string(rank) + ": operand " + what + " = " +
                                      g_.chunk_name(buf, chunk) + " holds " + describe_value(v, g_, buf) + ", not " + want,
                                  buf, chunk));
}

void Interp::run_collective(const Instance& in) {
  const GroupInfo& gr = g_.groups[in.group];
  const StepId* steps = g_.instance_steps.data() + in.steps_off;
  uint32_t gsz = gr.count;
  const CollInfo& c0 = g_.coll(steps[0]);
  uint32_t cnt = g_.range(steps[0]).cnt;
  // Snapshot every member's input first: the collective reads before it writes.
  std::vector<std::vector<Value>> in_vals(gsz);
  for (uint32_t j = 0; j < gsz; ++j) {
    StepId s = steps[j];
    std::vector<Range> rd;
    g_.reads(s, rd);
    Range r = g_.range(s);
    in_vals[j].resize(cnt);
    for (const Range& x : rd)
      for (uint32_t k = 0; k < x.cnt; ++k) in_vals[j][x.lo - r.lo + k] = read(g_.rank(s), x.buf, x.lo + k, s);
  }
  uint32_t blk = gsz ? cnt / gsz : 0;
  auto out_range = [&](uint32_t j) {
    const CollInfo& c = g_.coll(steps[j]);
    return c.kind == CollKind::Alltoall && c.into.cnt ? c.into : g_.range(steps[j]);
  };
  auto put = [&](uint32_t j, uint32_t k, const Value& v) {
    Range o = out_range(j);
    write(g_.rank(steps[j]), o.buf, o.lo + k, v, steps[j]);
  };
  auto sum = [&](uint32_t k) {
    Value acc = in_vals[0][k];
    for (uint32_t m = 1; m < gsz; ++m) add_into(acc, in_vals[m][k]);
    return acc;
  };
  int64_t root = gr.index_of(c0.root);
  switch (c0.kind) {
    case CollKind::Barrier: break;
    case CollKind::Allreduce:
      for (uint32_t k = 0; k < cnt; ++k) {
        Value v = sum(k);
        for (uint32_t j = 0; j < gsz; ++j) put(j, k, v);
      }
      break;
    case CollKind::Bcast:
      for (uint32_t j = 0; j < gsz; ++j)
        if (static_cast<int64_t>(j) != root)
          for (uint32_t k = 0; k < cnt; ++k) put(j, k, in_vals[static_cast<size_t>(root)][k]);
      break;
    case CollKind::Reduce:
      for (uint32_t k = 0; k < cnt; ++k) put(static_cast<uint32_t>(root), k, sum(k));
      break;
    case CollKind::Allgather:
      for (uint32_t j = 0; j < gsz; ++j)
        for (uint32_t src = 0; src < gsz; ++src)
          if (src != j)
            for (uint32_t k = 0; k < blk; ++k) put(j, src * blk + k, in_vals[src][src * blk + k]);
      break;
    case CollKind::ReduceScatter:
      for (uint32_t j = 0; j < gsz; ++j)
        for (uint32_t k = 0; k < blk; ++k) put(j, j * blk + k, sum(j * blk + k));
      break;
    case CollKind::Alltoall:
      for (uint32_t j = 0; j < gsz; ++j)
        for (uint32_t src = 0; src < gsz; ++src)
          for (uint32_t k = 0; k < blk; ++k) put(j, src * blk + k, in_vals[src][j * blk + k]);
      break;
  }
  for (uint32_t j = 0; j < gsz; ++j) complete(steps[j]);
}

}  // namespace sg::interp_detail
