// MPI match queues: the messages of one source, tag and communicator into one destination (named
// apart from the executor's device lanes, exec/executor/executor_lanes.cpp).
//
// Where no wildcard receive at the destination can take a queue's messages, MPI's order fixes the
// matching: the k-th receive of the queue (in program order, which is posting order for `on`-block
// steps) takes the k-th send (non-overtaking). Both verify engines use it: Z3 to keep such a
// receive to its one candidate, the explicit engine to decide that a pending operation can never
// be matched (the second of two sends into a queue with one receive: the receive takes the first).
#pragma once
#include <map>
#include <utility>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg {

// The local-view sends to and receives at each (destination, communicator), each in step order
// (program order per rank): where MPI matches.
using P2PEnds = std::map<std::pair<uint32_t, uint32_t>, std::pair<std::vector<StepId>, std::vector<StepId>>>;
P2PEnds p2p_ends(const StepGraph& g);

// queue_partners(g)[s] for a local-view send or receive s: the one operation it can ever match,
// or kNoStep if its queue has no k-th operation on the other side; kQueueContested where a wildcard
// receive is involved (a wildcard receive, or an operation of a queue one could take from). Other
// steps: kNoStep.
constexpr StepId kQueueContested = 0xfffffffeu;
std::vector<StepId> queue_partners(const StepGraph& g);

}  // namespace sg
