// The stream-ordered run (ExecOptions::stream, NCCL's model; docs/exec.md, "The NCCL
// transport"): the plan (this rank's steps by level of core/graph/stream_order.hpp), the run that
// issues them level by level onto the device's two lanes, a transfer of the open group, and what
// a stalled run reports. No dataflow loop: MPI only built the communicators.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

// The stream-ordered transport's plan: this rank's steps by level (core/graph/stream_order.hpp).
bool Executor::Impl::plan_streams(Diagnostics& diags) {
  const StreamOrder* so = o.order;
  if (!dev || !so) return diags.fail("the stream-ordered transport needs a device and the schedule's stream order");
  if (so->level.size() != g.size())
    return diags.fail("internal: the stream order covers " + std::to_string(so->level.size()) + " steps of rank " + std::to_string(me) +
                      ", its program has " + std::to_string(g.size()));
  for (StepId s = 0; s < g.size(); ++s)
    if (so->stmt[s] != g.stmt(s) || so->kind[s] != static_cast<uint8_t>(g.kind(s)))
      return diags.error(g.loc(s),
                         "internal: the stream order does not follow rank " + std::to_string(me) + "'s program at " + describe(s)),
             false;
  level_xfer.assign(so->groups + 1, {});
  level_local.assign(so->groups + 1, {});
  needs_mark.assign(g.size(), 0);
  for (StepId s = 0; s < g.size(); ++s) {
    if (!stream_transfer(g.kind(s))) {
      level_local[so->level[s]].push_back(s);
      continue;
    }
    level_xfer[so->level[s]].push_back(s);
    for (StepId d : g.deps(s))
      if (!stream_transfer(g.kind(d))) needs_mark[d] = 1;
    if (g.kind(s) == StepKind::Collective) {
      const CollInfo& c = g.coll(s);
      if (stream_group[c.group] < 0) return diags.error(g.loc(s), "no communicator for " + describe(s)), false;
      bool reduces = c.kind == CollKind::Allreduce || c.kind == CollKind::Reduce || c.kind == CollKind::ReduceScatter;
      if (reduces && att.active && att.merge[g.range(s).buf]) {
        return diags.error(g.loc(s),
                           "this collective reduces partial attention outputs, which merge by log-sum-exp: NCCL's collectives only "
                           "add, multiply or take maxima (use --transport staged)"),
               false;
      }
    }
  }
  for (auto& v : level_xfer) std::stable_sort(v.begin(), v.end(), [&](StepId a, StepId b) { return so->key[a] < so->key[b]; });
  return true;
}

// Issues every step once, level by level: group L's transfers on lane 1 (after the local work
// they depend on), then the local work of level L on lane 0 (after the newest group it needs).
// Nothing waits on the host but the stand-in transport's groups and the final drain.
RunResult Executor::Impl::run_streamed() {
  RunResult res;
  auto t0 = Clock::now();
  const StreamOrder& so = *o.order;
  std::vector<int> group_mark(so.groups + 1, -1), step_mark(g.size(), -1);
  uint32_t waited_group = 0;  // lane 0 has waited for the groups up to this one
  cur_lane = -1;
  // A failure of the transport: placed at step s's statement, named by the transport.
  auto stream_failed = [&](StepId s) { return place_failure(s, o.stream->name() + ": ", false); };
  lanes = true;
  lane_values.clear();
  for (uint32_t lv = 0; lv <= so.groups && !failed(); ++lv) {
    const std::vector<StepId>& xs = level_xfer[lv];
    if (!xs.empty()) {
      if (!to_lane(1)) break;
      int need = -1;  // lane 0's marks grow in issue order: the newest one covers the rest
      for (StepId s : xs)
        for (StepId d : g.deps(s))
          if (!stream_transfer(g.kind(d))) need = std::max(need, step_mark[d]);
      if (need >= 0 && !dev_ok(dev->wait_mark(need, dev_diags), "a device wait", nullptr, kNoStep)) break;
      // An in-place all-to-all reads a copy of its input (staging on the device).
      for (StepId s : xs)
        if (g.kind(s) == StepKind::Collective && g.coll(s).kind == CollKind::Alltoall && g.coll(s).into.cnt == 0) {
          Range r = g.range(s);
          dev_ok(dev->copy(dstage + stage_off[s], dptr(r), bytes(r), dev_diags), "a device copy", &r, s);
        }
      if (failed()) break;
      if (!o.stream->group_start(dev_diags)) {
        stream_failed(xs.front());
        break;
      }
      // A group once started is always ended, also after a failed issue, so that NCCL's group
      // state is left clean (the run stops with the error either way).
      for (StepId s : xs)
        if (!failed() && !stream_issue(s, so.bytes[s])) stream_failed(s);
      if (failed()) {
        Diagnostics ignored;  // the run already failed: the group only ends
        o.stream->group_end(o.timeout_s, ignored);
        break;
      }
      if (!o.stream->group_end(o.timeout_s, dev_diags)) {
        std::string why = dev_diags.messages(dev_placed);  // (the report quotes the transport's own words)
        stream_failed(kNoStep);
        res.stalled = why.find("did not complete") != std::string::npos;
        res.report = stream_report(lv, why);
        break;
      }
      // Reducing receives landed in device staging: reduced into place on lane 1.
      for (StepId s : xs)
        if (g.kind(s) == StepKind::Recv && (g.flags(s) & kFlagReduce)) {
          cur_step = s;
          Range r = g.range(s);
          reduce_range(r, flag_op(g.flags(s)), dptr(r), dstage + stage_off[s], so.bytes[s] / dtype_size(dtype(r)));
        }
      if (!dev_ok(dev->mark(group_mark[lv], dev_diags), "a device mark", nullptr, kNoStep)) break;
    }
    for (StepId s : level_local[lv]) {
      if (failed()) break;
      // Its level is the newest group it needs (the transfers it waits for, those its local
      // dependencies needed, and what an isend or irecv it follows waited for: stream_order.hpp);
      // always one of this rank's groups.
      const uint32_t need = so.level[s];
      if (g.kind(s) == StepKind::Wait && need <= waited_group && !needs_mark[s]) continue;  // nothing to wait for
      if (!to_lane(0)) break;
      if (need > waited_group) {
        if (!dev_ok(dev->wait_mark(group_mark[need], dev_diags), "a device wait", nullptr, s)) break;
        waited_group = need;
      }
      local_work(s);
      if (needs_mark[s] && !dev_ok(dev->mark(step_mark[s], dev_diags), "a device mark", nullptr, s)) break;
    }
  }
  // The drain: both lanes done (at most the timeout), then back to synchronous calls.
  if (!failed() && !dev->select_lane(-1, o.timeout_s, dev_diags)) {
    res.stalled = true;
    std::string why = place_failure(kNoStep, "", true);
    uint32_t first = 1;
    while (first <= so.groups && (group_mark[first] < 0 || dev->mark_reached(group_mark[first]))) ++first;
    res.report = stream_report(std::min(first, so.groups), why);
  } else if (failed()) {
    Diagnostics ignored;  // the run already failed: the lanes only drain
    dev->select_lane(-1, 1, ignored);
  }
  lanes = false;
  cur_lane = -1;
  res.completed = !failed();
  if (failed()) res.error = errors.all().front();
  // The host only enqueued the compute: its time is on the device lanes, which the host does
  // not see, so none is reported (and exec prints no overlap figure for this transport).
  res.compute_s = 0;
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

// One transfer or collective of the open group.
bool Executor::Impl::stream_issue(StepId s, uint64_t msg_bytes) {
  Range r = g.range(s);
  switch (g.kind(s)) {
    case StepKind::Send: return o.stream->send(dptr(r), msg_bytes, g.peer(s), dev_diags);
    case StepKind::Recv:
      return o.stream->recv((g.flags(s) & kFlagReduce) ? dstage + stage_off[s] : dptr(r), msg_bytes, g.peer(s), dev_diags);
    case StepKind::Collective: {
      const CollInfo& c = g.coll(s);
      const GroupInfo& gr = g.groups[c.group];
      StreamComm::Coll x;
      x.kind = c.kind, x.op = c.op, x.type = dtype(r), x.comm = stream_group[c.group];
      x.root = static_cast<int>(std::max<int64_t>(0, gr.index_of(c.root)));
      x.index = static_cast<int>(gr.index_of(me)), x.members = static_cast<int>(gr.count);
      x.p = dptr(r);
      x.count = elems(r);
      bool blocks = c.kind == CollKind::Allgather || c.kind == CollKind::ReduceScatter || c.kind == CollKind::Alltoall;
      if (blocks) x.count /= gr.count;
      if (c.kind == CollKind::Alltoall) {
        x.in = c.into.cnt ? dptr(r) : dstage + stage_off[s];
        x.p = c.into.cnt ? dptr(c.into) : dptr(r);
      }
      return o.stream->collective(x, dev_diags);
    }
    default: return dev_diags.fail("not a transfer");
  }
}

// What a stalled streamed run waits on: the group that did not complete, with its steps.
std::string Executor::Impl::stream_report(uint32_t lv, const std::string& why) const {
  std::string out = "rank " + std::to_string(me) + ": " + why + "; it waits in transfer group " + std::to_string(lv) + " of " +
                    std::to_string(o.order->groups);
  int shown = 0;
  if (lv < level_xfer.size())
    for (StepId s : level_xfer[lv]) {
      if (shown++ == 4) break;
      out += waits_on(s);
    }
  return out;
}

}  // namespace sg::exec
