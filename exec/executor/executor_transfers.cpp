// The dataflow run's MPI transfers: choreographic messages taken as they come (matched probes,
// source by source, in send order) straight into their destination or into staging, and what a
// received message does once it is there; MPI's nonblocking collectives, started and finished.
// On-block sends and receives are posted by issue() (executor_dataflow.cpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

// Takes every choreographic message that has come, source by source (a source's messages come
// in the order they were sent, so once this run's count from a source is reached the rest are
// the next run's and stay queued in MPI). True when it took one; `expecting`: some are due.
//
// One matched probe per message and none wasted: a message whose receive will start after local
// work only (a reduction of data already here, say) is held, matched, and received straight into
// its destination when the step starts; and once a message makes a step ready (the next send of a
// chain), this returns at once so that the step goes out before any other probing. An
// unsuccessful probe is not free: with more processes than cores Open MPI yields the core in it,
// and one between receiving a block and forwarding it made a 4-process ring 4x slower.
bool Executor::Impl::take_messages(bool& expecting) {
  bool took = false;
  for (size_t i = 0; i < srcs.size(); ++i) {
    while (taken[i] < probe_count[i]) {
      expecting = true;
      int flag = 0;
      MPI_Message msg;
      MPI_Status status;
      if (!check_rc(MPI_Improbe(static_cast<int>(srcs[i]), MPI_ANY_TAG, choreo, &flag, &msg, &status), "MPI_Improbe", kNoStep))
        return false;
      if (!flag) break;
      auto seq = static_cast<size_t>(status.MPI_TAG);
      if (seq >= from_src[i].size()) {
        fail(kNoStep,
             "a choreographic message from rank " + std::to_string(srcs[i]) + " with tag " + std::to_string(seq) + " has no receive");
        return false;
      }
      StepId s = from_src[i][seq];
      if (!prepost.empty() && prepost[s]) {  // (its receive was posted: MPI matches it there first)
        fail(s, "internal: a message for the posted receive " + describe(s) + " was probed");
        return false;
      }
      ++taken[i];
      st[s] |= kTaken;
      took = true;
      if (!(st[s] & kIssued) && !(g.flags(s) & kFlagReduce) && deps_soon(s, 4)) {
        held[s] = msg;
        st[s] |= kHeld;
        continue;
      }
      if (!receive_matched(s, msg)) return false;
      if (!ready.empty()) return true;
    }
  }
  return took;
}

// Receives a matched message: straight into the destination when its step has started (and does
// not reduce), else into staging. An eager message is already here, so the receive is usually
// done at once: then it completes now, not on the loop's next test.
bool Executor::Impl::receive_matched(StepId s, MPI_Message& msg) {
  Range r = g.range(s);
  bool straight = (st[s] & kIssued) && !(g.flags(s) & kFlagReduce);
  direct[s] = straight;
  MPI_Request q;
  unsigned char* dst = straight ? mpi_ptr(s, r) : mpi_stage(s);
  if (!check_rc(via_ipc(s) ? ipc_imrecv(s, dst, &msg, &q) : MPI_Imrecv(dst, count_of(bytes(r), s), MPI_BYTE, &msg, &q), "MPI_Imrecv", s))
    return false;
  int done = 0;
  if (!check_rc(MPI_Test(&q, &done, MPI_STATUS_IGNORE), "MPI_Test", s)) return false;
  if (done) on_request_done(s, Req::ChoreoData);
  else track(q, s, Req::ChoreoData);
  return !failed();
}

// Whether every unsatisfied dependency of s will be done without waiting on anything but
// messages already under way: local work (copy, reduce, compute) whose own dependencies are so,
// a choreographic receive whose message is already taken, or a choreographic send already
// started (its receiver takes every message as it comes, into staging when it cannot hold it,
// so the send completes without the receiver's program moving on). On-block steps and
// collectives wait on their peers' programs, so a message is never held back behind them (that
// could deadlock). Holding behind a started send saves a staged copy of the whole message
// where a rank reuses a buffer it is still sending from (recursive doubling's tmp: 1.4x).
bool Executor::Impl::deps_soon(StepId s, int depth) const {
  if (depth == 0) return false;
  for (StepId d : g.deps(s)) {
    uint8_t x = st[d];
    if ((x & kCompleted) || ((x & kIssued) && g.nonblocking(d))) continue;
    StepKind k = g.kind(d);
    bool local_work = k == StepKind::Copy || k == StepKind::Reduce || k == StepKind::Compute;
    bool incoming = k == StepKind::Recv && !g.local(d) && (x & kTaken);
    bool outgoing = k == StepKind::Send && !g.local(d) && (x & kIssued);
    // (Under IPC a send completes only once its receiver copied the message, which may be held
    // itself: not soon.)
    if (outgoing && !ipc) continue;
    if (!(local_work || incoming) || !deps_soon(d, depth - 1)) return false;
  }
  return true;
}

void Executor::Impl::finish_choreo_recv(StepId s) {
  cur_step = s;
  if (flow_lanes && !to_lane(1)) return;
  Range r = g.range(s);
  const unsigned char* src = staging.p + stage_off[s];
  if (dev) finish_staged_on_device(s, r, src);
  else if (g.flags(s) & kFlagReduce) reduce_range(r, flag_op(g.flags(s)), ptr(r), src, UINT64_MAX);
  else std::memcpy(ptr(r), src, bytes(r));
  complete(s);
}

// Device mode: a received message in host staging goes to its destination on the device, or to
// the device staging slot and is reduced from there by the device.
void Executor::Impl::finish_staged_on_device(StepId s, const Range& r, const unsigned char* src) {
  if (direct_p2p(s)) {  // the message is in the device staging slot already
    unsigned char* d = dstage + stage_off[s];
    if (g.flags(s) & kFlagReduce) reduce_range(r, flag_op(g.flags(s)), dptr(r), d, UINT64_MAX);
    else dev_ok(dev->copy(dptr(r), d, bytes(r), dev_diags), "a device copy of a received message", &r);
    return;
  }
  if (g.flags(s) & kFlagReduce) {
    unsigned char* d = dstage + stage_off[s];
    if (dev_ok(dev->to_device(d, src, bytes(r), dev_diags), "a copy of a received message to the device", &r))
      reduce_range(r, flag_op(g.flags(s)), dptr(r), d, UINT64_MAX);
  } else {
    dev_ok(dev->to_device(dptr(r), src, bytes(r), dev_diags), "a copy of a received message to the device", &r);
  }
}

void Executor::Impl::start_collective(StepId s, const Range& r) {
  cur_step = s;
  const CollInfo& c = g.coll(s);
  const GroupInfo& gr = g.groups[c.group];
  MPI_Comm comm = group_comm[c.group];
  if (comm == MPI_COMM_NULL) {
    fail(s, "no communicator for " + describe(s));
    return;
  }
  MPI_Datatype t = mpi_type(dtype(r));
  MPI_Op mop = mpi_op(c.op, dtype(r));
  int n = count_of(elems(r), s);
  if (att.active && att.merge[r.buf]) {  // partial attention outputs: rows of dim + 1 floats, merged
    t = attention_row_type(att.dim);
    mop = attention_merge_op();
    n = count_of(bytes(r) / ((att.dim + uint64_t{1}) * 4), s);
  }
  int per = gr.count ? n / static_cast<int>(gr.count) : 0;
  int root = static_cast<int>(std::max<int64_t>(0, gr.index_of(c.root)));
  MPI_Request q = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  // Device mode: MPI's collectives work on the host mirror with either transport (prepare()).
  unsigned char* p = c.kind == CollKind::Barrier ? nullptr : ptr(r);
  switch (c.kind) {
    case CollKind::Barrier: rc = MPI_Ibarrier(comm, &q); break;
    case CollKind::Allreduce: rc = MPI_Iallreduce(MPI_IN_PLACE, p, n, t, mop, comm, &q); break;
    case CollKind::Bcast: rc = MPI_Ibcast(p, n, t, root, comm, &q); break;
    case CollKind::Reduce:
      rc = me == c.root ? MPI_Ireduce(MPI_IN_PLACE, p, n, t, mop, root, comm, &q) : MPI_Ireduce(p, nullptr, n, t, mop, root, comm, &q);
      break;
    case CollKind::Allgather: rc = MPI_Iallgather(MPI_IN_PLACE, 0, t, p, per, t, comm, &q); break;
    case CollKind::ReduceScatter:
      // MPI puts this member's block at the start of its receive buffer; the language wants it
      // in place at block me: staged, then copied (finish_collective).
      rc = MPI_Ireduce_scatter_block(p, staging.p + stage_off[s], per, t, mop, comm, &q);
      break;
    case CollKind::Alltoall:
      if (c.into.cnt) {
        rc = MPI_Ialltoall(p, per, t, ptr(c.into), per, t, comm, &q);
      } else {
        std::memcpy(staging.p + stage_off[s], p, bytes(r));
        rc = MPI_Ialltoall(staging.p + stage_off[s], per, t, p, per, t, comm, &q);
      }
      break;
  }
  if (!check_rc(rc, "the MPI collective", s)) return;
  track(q, s, Req::Coll);
}

void Executor::Impl::finish_collective(StepId s) {
  cur_step = s;
  const CollInfo& c = g.coll(s);
  if (c.kind == CollKind::ReduceScatter) {
    const GroupInfo& gr = g.groups[c.group];
    Range r = g.range(s);
    uint64_t blk = bytes(r) / gr.count;
    std::memcpy(ptr(r) + blk * static_cast<uint64_t>(gr.index_of(me)), staging.p + stage_off[s], blk);
  }
  // Device mode: what MPI wrote goes back to the device (an all-to-all's output range, else the
  // collective's own, which its host mirror held for MPI since the start).
  if (c.kind != CollKind::Barrier) up(c.kind == CollKind::Alltoall && c.into.cnt ? c.into : g.range(s), true);
  complete(s);
}

}  // namespace sg::exec
