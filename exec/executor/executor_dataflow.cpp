// The dataflow run (Executor::run without a stream-ordered transport): the progress loop that
// starts ready steps, tests the requests in flight (MPI_Testsome) and completes steps, and what
// issuing and completing a step does. The messages and collectives it starts are in
// executor_transfers.cpp, the local work in executor_local_work.cpp, the gates a transfer waits
// at with lanes in executor_lanes.cpp. The semantics are exec/executor/executor.hpp's.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

RunResult Executor::Impl::run(bool compute, bool values) {
  do_compute = compute;
  write_values = values;
  if (o.stream) {
    errors.clear();
    compute_s = 0;
    return run_streamed();
  }
  RunResult res;
  size_t n = g.size();
  st.assign(n, 0);
  ready.clear();
  reqs.clear();
  req_step.clear();
  req_kind.clear();
  waits.clear();
  sent_copy.clear();
  buffered_out = 0;
  completed = 0;
  compute_s = 0;
  errors.clear();
  cur_step = kNoStep;
  direct.assign(n, 0);
  taken.assign(srcs.size(), 0);
  ipc_acks.clear();  // (left over only by a run that failed)
  ipc_acks_out = 0;
  flow_lanes = lanes = dev && o.lanes;
  if (flow_lanes) {
    cur_lane = -1;
    lane0_waited = -1;
    for (std::deque<int>& q : unseen) q.clear();
    dm.assign(n, {-1, -1});
    passed.assign(n, 0);
    gated.clear();
    lane_values.clear();
    to_lane(0);
  }
  // The plan setup made (executor_setup.cpp): the dependency counts and first ready steps are
  // copied, and only the receives to post at the start are visited.
  pending = pending0;
  for (StepId s : post0) {
    if (failed()) break;  // not after a failed start (a refused lane): nothing may be left posted
    Range r = g.range(s);
    MPI_Request q = persistent.empty() ? MPI_REQUEST_NULL : persistent[s];
    int rc;
    if (!probe) {  // more than 64 sources: every receive into staging
      rc = via_ipc(s) ? ipc_irecv(s, mpi_stage(s), static_cast<int>(g.peer(s)), tag[s], choreo, &q)
                      : MPI_Irecv(mpi_stage(s), count_of(bytes(r), s), MPI_BYTE, static_cast<int>(g.peer(s)), tag[s], choreo, &q);
    } else {  // a receive that depends on nothing: straight into its destination, or its staging slot to reduce
      bool reduces = g.flags(s) & kFlagReduce;
      direct[s] = !reduces;
      unsigned char* dst = reduces ? mpi_stage(s) : mpi_ptr(s, r);
      rc = q != MPI_REQUEST_NULL ? MPI_Start(&q)
           : via_ipc(s)          ? ipc_irecv(s, dst, static_cast<int>(g.peer(s)), tag[s], choreo, &q)
                                 : MPI_Irecv(dst, count_of(bytes(r), s), MPI_BYTE, static_cast<int>(g.peer(s)), tag[s], choreo, &q);
    }
    if (!check_rc(rc, "MPI_Irecv", s)) break;
    track(q, s, Req::ChoreoData);
  }
  ready.assign(ready0.begin(), ready0.end());
  // Progress since the stall timer last looked: the clock is read only every 1,024 idle polls
  // (reading it on every completion, and at the start and end of a run, took 11% of a 1 KiB
  // all-gather on 2 processes), and any progress in between restarts the wait.
  Clock::time_point last;  // set at the first look (moved): a run that never idles reads no clock
  bool moved = true;
  std::vector<int> idx, done;
  std::vector<MPI_Status> stats;
  std::vector<std::pair<StepId, Req>> finished;
  uint64_t idle = 0;
  while (!failed()) {
    // Issuing is progress: a long synchronous compute must not count as waiting.
    if (!ready.empty()) {
      while (!ready.empty() && !failed()) {
        StepId s = ready.front();
        ready.pop_front();
        issue(s);
      }
      moved = true;
    }
    // (An IPC run ends once its acknowledgements are out: the senders wait for them.)
    if (failed() || (completed == n && buffered_out == 0 && ipc_acks.empty() && ipc_acks_out == 0)) break;
    if (!ipc_acks.empty() && ipc_send_acks()) moved = true;
    if (failed()) break;
    if (flow_lanes && !gated.empty()) {
      if (open_gates()) {
        moved = true;
        continue;
      }
      if (failed()) break;
    }
    bool expecting = false;
    if (probe && take_messages(expecting)) {
      moved = true;
      continue;
    }
    if (failed()) break;
    if (reqs.empty() && !expecting && gated.empty() && ipc_acks.empty()) {
      fail(kNoStep, "nothing can run and nothing is in flight: the schedule is stuck");
      res.report = stall_report(0);
      break;
    }
    int outcount = 0;
    if (reqs.empty()) outcount = MPI_UNDEFINED;  // waiting only for messages to probe
    idx.resize(reqs.size());
    stats.resize(reqs.size());
    int rc = reqs.empty() ? MPI_SUCCESS : MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &outcount, idx.data(), stats.data());
    if (rc != MPI_SUCCESS) {
      // MPI_ERR_IN_STATUS: the statuses are those of the outcount requests that completed, in
      // idx's order (not the requests' own order).
      if (rc == MPI_ERR_IN_STATUS && outcount != MPI_UNDEFINED)
        for (int i = 0; i < outcount && !failed(); ++i) {
          const MPI_Status& status = stats[static_cast<size_t>(i)];
          if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING)
            check_rc(status.MPI_ERROR, "an MPI operation", req_step[static_cast<size_t>(idx[static_cast<size_t>(i)])]);
        }
      if (!failed()) check_rc(rc, "MPI_Testsome", kNoStep);
      break;
    }
    if (outcount == MPI_UNDEFINED || outcount == 0) {
      // Nothing finished: poll again. No sched_yield of our own: with more processes than
      // cores Open MPI's progress engine yields already, and a second yield per poll made
      // small messages 1.4x slower (measured, 4 processes on 2 cores).
      if ((++idle & 1023) == 0) {
        if (moved || (flow_lanes && device_moved())) last = Clock::now(), moved = false;
        double waited = std::chrono::duration<double>(Clock::now() - last).count();
        if (o.timeout_s > 0 && waited > o.timeout_s) {
          res.stalled = true;
          res.report = stall_report(waited);
          break;
        }
      }
      continue;
    }
    moved = true;
    // Handle completions, then drop the finished requests (indices from high to low).
    // (Both lists kept across passes: no allocation per completion.)
    done.assign(idx.begin(), idx.begin() + outcount);
    std::sort(done.begin(), done.end());
    finished.clear();
    for (int k : done) finished.emplace_back(req_step[static_cast<size_t>(k)], req_kind[static_cast<size_t>(k)]);
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      auto k = static_cast<size_t>(*it);
      reqs[k] = reqs.back();
      reqs.pop_back();
      req_step[k] = req_step.back();
      req_step.pop_back();
      req_kind[k] = req_kind.back();
      req_kind.pop_back();
    }
    for (auto& [s, kind] : finished) on_request_done(s, kind);
  }
  if (flow_lanes) {
    // The drain: both lanes done (at most the timeout; after a failure, briefly), then back to
    // synchronous calls.
    bool fine = !failed() && !res.stalled;
    if (!dev->select_lane(-1, fine ? o.timeout_s : 1, dev_diags) && fine)
      res.report = "rank " + std::to_string(me) + ": " + place_failure(kNoStep, "the device's work did not finish: ", false);
    dev_placed = dev_diags.size();  // (after a failure, what the drain says adds nothing)
    flow_lanes = lanes = false;
    cur_lane = -1;
    // The host only enqueued the compute: its time is on the device, which the host does not
    // see, so none is reported (and exec prints no overlap figure; --device-sync does).
    compute_s = 0;
  }
  res.completed = !failed() && !res.stalled && completed == n;
  if (failed()) res.error = errors.all().front();
  res.compute_s = compute_s;
  return res;
}

void Executor::Impl::issue(StepId s) {
  cur_step = s;
  if (g.kind(s) == StepKind::Collective && coll_prev[s] != kNoStep && !(st[coll_prev[s]] & kIssued)) {
    st[s] |= kDeferred;  // started right after its predecessor on the communicator
    return;
  }
  StepKind k = g.kind(s);
  bool transfer = k == StepKind::Send || k == StepKind::Recv || k == StepKind::Collective;
  if (flow_lanes && transfer && !passed[s]) {
    enter_gate(s);
    return;
  }
  st[s] |= kIssued;
  Range r = k == StepKind::Wait ? Range{} : g.range(s);
  if (!flow_lanes && has_prep(s) && !prepare(s)) return;  // (with lanes done before the gate)
  switch (k) {
    case StepKind::Send: {
      MPI_Request q;
      int rc;
      if (!g.local(s)) {
        q = persistent.empty() ? MPI_REQUEST_NULL : persistent[s];
        int to = static_cast<int>(g.peer(s));
        rc = q != MPI_REQUEST_NULL ? MPI_Start(&q)
             : via_ipc(s)          ? ipc_isend(s, r, g.peer(s), to, tag[s], choreo, &q)
                                   : MPI_Isend(mpi_ptr(s, r), count_of(bytes(r), s), MPI_BYTE, to, tag[s], choreo, &q);
      } else {
        MPI_Comm c;
        int peer = 0;
        if (!p2p_target(s, c, peer)) {
          fail(s, "no communicator for " + describe(s));
          return;
        }
        if (g.connection_slots) {  // buffered: the message leaves a copy, and the send is done
          if (direct_p2p(s)) {
            fail(s, "buffered sends (FIFO connections: MSCCL) copy their message on the host; " + describe(s) +
                        " is in device memory under the " + std::string(via_ipc(s) ? "ipc" : "cuda-aware") +
                        " transport (use --transport staged)");
            return;
          }
          if (sent_copy.size() < g.size()) sent_copy.resize(g.size());
          sent_copy[s].assign(mpi_ptr(s, r), mpi_ptr(s, r) + bytes(r));
          rc = MPI_Isend(sent_copy[s].data(), count_of(bytes(r), s), MPI_BYTE, peer, g.p2p_info(s).tag, c, &q);
          if (!check_rc(rc, "MPI_Isend", s)) return;
          track(q, s, Req::BufferedSend);
          ++buffered_out;
          complete(s);
          return;
        }
        rc = via_ipc(s) ? ipc_isend(s, r, g.p2p_info(s).peer, peer, g.p2p_info(s).tag, c, &q)
                        : MPI_Isend(mpi_ptr(s, r), count_of(bytes(r), s), MPI_BYTE, peer, g.p2p_info(s).tag, c, &q);
      }
      if (!check_rc(rc, "MPI_Isend", s)) return;
      if (g.nonblocking(s)) satisfy(s);
      // An eager message has usually left already: then the send is done now, and the loop has
      // one request fewer to test on every pass.
      int done = 0;
      if (!check_rc(MPI_Test(&q, &done, MPI_STATUS_IGNORE), "MPI_Test", s)) return;
      if (done) complete(s);
      else track(q, s, Req::Send);
      return;
    }
    case StepKind::Recv: {
      if (!g.local(s)) {
        if (st[s] & kArrived) {
          finish_choreo_recv(s);
        } else if (st[s] & kHeld) {
          st[s] &= static_cast<uint8_t>(~kHeld);
          receive_matched(s, held[s]);
        }
        return;  // finished when its data arrives
      }
      MPI_Comm c;
      int peer = 0;
      if (!p2p_target(s, c, peer)) {
        fail(s, "no communicator for " + describe(s));
        return;
      }
      unsigned char* dst = (g.flags(s) & kFlagReduce) ? mpi_stage(s) : mpi_ptr(s, r);
      int32_t t = g.p2p_info(s).tag;
      MPI_Request q;
      int mt = t == kAnyTag ? MPI_ANY_TAG : t;
      if (!check_rc(via_ipc(s) ? ipc_irecv(s, dst, peer, mt, c, &q) : MPI_Irecv(dst, count_of(bytes(r), s), MPI_BYTE, peer, mt, c, &q),
                    "MPI_Irecv", s))
        return;
      track(q, s, Req::LocalRecv);
      if (g.nonblocking(s)) satisfy(s);
      return;
    }
    case StepKind::Copy:
    case StepKind::Reduce:
    case StepKind::Compute:
      if (flow_lanes) {  // on lane 0, after the transfers it needs; a mark after it
        std::array<int, 2> n = needs(s);
        if (!local_after(n[1])) return;
        local_work(s);
        dm[s] = {new_mark(), n[1]};
      } else {
        local_work(s);
      }
      complete(s);
      return;
    case StepKind::Collective: {
      start_collective(s, r);
      StepId n = coll_next[s];
      if (n != kNoStep && (st[n] & kDeferred)) {
        st[n] &= static_cast<uint8_t>(~kDeferred);
        ready.push_front(n);
      }
      return;
    }
    case StepKind::Wait: {
      if (handles_done(s)) complete(s);
      else waits.push_back(s);
      return;
    }
  }
}

void Executor::Impl::complete(StepId s) {
  cur_step = s;
  if (flow_lanes) {
    StepKind k = g.kind(s);
    // A receive's or collective's device work after MPI (on lane 1, on_request_done) is marked.
    if (k == StepKind::Recv || (k == StepKind::Collective && g.coll(s).kind != CollKind::Barrier)) {
      to_lane(1);
      dm[s][1] = std::max(dm[s][1], new_mark());
    } else if (k == StepKind::Wait) {
      dm[s] = needs(s);
    }
  }
  st[s] |= kCompleted;
  ++completed;
  if (!g.nonblocking(s)) satisfy(s);
  else recheck_waits();
}

void Executor::Impl::recheck_waits() {
  for (size_t i = 0; i < waits.size();) {
    StepId w = waits[i];
    if (handles_done(w)) {
      waits[i] = waits.back();
      waits.pop_back();
      complete(w);
      i = 0;  // complete() may have changed the list
    } else {
      ++i;
    }
  }
}

bool Executor::Impl::handles_done(StepId w) const {
  for (const StepId* h = g.handles_begin(w); h != g.handles_end(w); ++h)
    if (!(st[*h] & kCompleted)) return false;
  return true;
}

// Completions only make steps ready (the loop starts them): no request is added here.
void Executor::Impl::on_request_done(StepId s, Req kind) {
  cur_step = s;
  if (kind == Req::IpcAck) {
    --ipc_acks_out;
    return;
  }
  // IPC: what came is a descriptor; its bytes are copied (on lane 1) first.
  if ((kind == Req::ChoreoData || kind == Req::LocalRecv) && via_ipc(s) && !ipc_pull(s)) return;
  if (flow_lanes && !to_lane(1)) return;  // what MPI wrote goes up on lane 1
  switch (kind) {
    case Req::ChoreoData:
      st[s] |= kArrived;
      if (direct[s]) {  // device mode: from the host mirror it landed in, unless it came straight to the device
        if (!direct_p2p(s)) up(g.range(s), true);
        complete(s);
      } else if (st[s] & kIssued) finish_choreo_recv(s);
      break;
    case Req::Send: complete(s); break;
    case Req::BufferedSend:
      --buffered_out;
      std::vector<unsigned char>().swap(sent_copy[s]);
      break;
    case Req::LocalRecv: {
      Range r = g.range(s);
      if (dev && (g.flags(s) & kFlagReduce)) finish_staged_on_device(s, r, staging.p + stage_off[s]);
      else if (dev && !direct_p2p(s)) up(r, true);  // (nothing to do when MPI or IPC wrote the device buffer itself)
      else if (g.flags(s) & kFlagReduce) reduce_range(r, flag_op(g.flags(s)), ptr(r), staging.p + stage_off[s], UINT64_MAX);
      complete(s);
      break;
    }
    case Req::Coll: finish_collective(s); break;
    case Req::IpcAck: break;  // (handled above)
  }
}

}  // namespace sg::exec
