// How a step graph's sends complete: the one policy that verify, sim and exec apply to a graph
// whose connections are FIFOs (an MSCCL program: StepGraph::connection_slots > 0), instead of a
// rule of their own in each command.
//
// A FIFO connection holds `slots` messages; a send completes once its message is in it, without
// its receiver. So verify checks the bounded semantics with that many slots, sim sends eagerly
// under --protocol auto (the slots are not timed; verify checks them), and exec copies each
// message (its buffered sends) and refuses a transport whose sends complete only with their
// receive (--transport nccl).
#pragma once
#include <cstdint>
#include <vector>

#include "core/graph/step_graph.hpp"
#include "core/interp/interpret.hpp"

namespace sg {

struct SendPolicy {
  uint32_t slots = 0;  // messages a connection holds: --slots when given, else the program's; 0 when neither says
  bool fifo() const { return slots > 0; }
  // The semantics verify checks when the user does not choose: bounded for FIFO connections,
  // else both rendezvous and eager.
  std::vector<SendMode> default_modes() const;
  // The slots a connection has under the bounded semantics (1 when nobody said).
  uint32_t bounded_slots() const { return slots > 0 ? slots : 1; }
};

// The policy for g, with `asked` slots from the command line (0: the program's own).
SendPolicy send_policy(const StepGraph& g, uint32_t asked = 0);

}  // namespace sg
