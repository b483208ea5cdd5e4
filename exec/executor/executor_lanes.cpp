// Lanes on the dataflow path (ExecOptions::lanes): device work is asynchronous, local work on
// lane 0 and the copies around MPI on lane 1, ordered by marks; a transfer waits at a gate until
// the host has seen the marks it needs (the reasoning is beside the lane members in
// executor_impl.hpp). to_lane, the lane switch, is inline in executor_impl.hpp.
#include <algorithm>
#include <array>
#include <deque>
#include <string>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

// Lane 0 from now on, after lane 1's mark m (m < 0: none).
bool Executor::Impl::local_after(int m) {
  if (!to_lane(0)) return false;
  if (m <= lane0_waited) return true;
  lane0_waited = m;
  return dev_ok(dev->wait_mark(m, dev_diags), "a device wait", nullptr);
}

int Executor::Impl::new_mark() {
  int id = -1;
  if (dev_ok(dev->mark(id, dev_diags), "a device mark", nullptr) && id >= 0 && (cur_lane == 0 || cur_lane == 1))
    unseen[static_cast<size_t>(cur_lane)].push_back(id);
  return id;
}

// Whether the device reached a mark since the last call (a lane reaches its marks in order).
bool Executor::Impl::device_moved() {
  bool moved = false;
  for (std::deque<int>& q : unseen)
    while (!q.empty() && dev->mark_reached(q.front())) q.pop_front(), moved = true;
  return moved;
}

// The newest marks per lane that s's dependencies (and a wait's handles) left behind.
std::array<int, 2> Executor::Impl::needs(StepId s) const {
  std::array<int, 2> n{-1, -1};
  auto add = [&](StepId d) { n[0] = std::max(n[0], dm[d][0]), n[1] = std::max(n[1], dm[d][1]); };
  for (StepId d : g.deps(s)) add(d);
  if (g.kind(s) == StepKind::Wait)
    for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) add(*h);
  return n;
}

// With lanes: a transfer waits at a gate for the marks its dependencies left.
void Executor::Impl::enter_gate(StepId s) {
  std::array<int, 2> n = needs(s);
  dm[s] = n;
  gated.push_back(Gate{s, n[0], n[1], has_prep(s)});
}

bool Executor::Impl::reached(const Gate& gt) const {
  return (gt.m0 < 0 || dev->mark_reached(gt.m0)) && (gt.m1 < 0 || dev->mark_reached(gt.m1));
}

// Lets the device run; enqueues the copies down whose steps' marks are reached; issues the
// steps whose marks (their copy down's included) are reached, in gate order (MPI matches
// on-block transfers in the order they start, as on the synchronous path). True when it did
// anything.
bool Executor::Impl::open_gates() {
  if (!dev->progress(dev_diags)) return dev_ok(false, "device work", nullptr, kNoStep);
  bool any = false;
  // A copy down goes on lane 1 only once the host has seen the local work it reads finished,
  // so lane 1 never waits on the device for lane 0: a received block's copy up is never queued
  // behind a tile that runs meanwhile (the copies down may go in any order: they write
  // disjoint mirrors, or the same bytes).
  for (Gate& gt : gated) {
    if (!gt.prep || !reached(gt)) continue;
    gt.prep = false;
    cur_step = gt.s;
    if (!to_lane(1) || !prepare(gt.s)) return false;
    gt.m0 = -1;
    gt.m1 = new_mark();
    dm[gt.s][1] = std::max(dm[gt.s][1], gt.m1);
    any = true;
  }
  while (!gated.empty() && !failed()) {
    const Gate gt = gated.front();
    if (gt.prep || !reached(gt)) break;
    gated.pop_front();
    passed[gt.s] = 1;
    issue(gt.s);
    any = true;
  }
  return any;
}

}  // namespace sg::exec
