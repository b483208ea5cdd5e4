// The stream order: how one rank's program is laid onto two in-order device streams (compute and
// communication) for a transport whose transfers are stream-ordered and may block the stream
// until the peer takes part, as NCCL's are (exec --transport nccl).
//
// NCCL matches point-to-point transfers between two ranks by the order they are issued in, and a
// group of transfers (ncclGroupStart/End) can block until every peer has issued its side: there
// is no buffered send and no wildcard. So every rank issues its transfers in one global order of
// *groups*: a message (a send and its receive) or a collective instance (its members) is one node
// and gets a group number, the same on every rank that takes part; a node's group is greater
// than every group it waits on to complete, and a node that depends only on the start of a
// nonblocking transfer (MPI's isend; recv; wait exchange) may share its group. Local work (copy,
// reduce, compute, wait) gets the level of the last group it needs. A rank then issues, for
// L = 0, 1, …: group L's transfers, then its local work of level L in program order, and waits
// only on what each item depends on (events between the streams). Groups issued in one global
// order cannot deadlock: the earliest unfinished group has every member issued (by induction).
//
// The pass runs on the whole schedule (every rank's program), because a node's group depends on
// every rank that takes part in it, and returns one rank's part, indexed like that rank's own
// graph (only_rank), whose steps are the whole graph's steps of that rank in the same order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

struct StreamOrder {
  uint32_t groups = 0;  // groups are numbered 1 .. groups; local work has a level 0 .. groups
  // Per step of the rank's program (the k-th step of the rank in the whole graph):
  std::vector<uint32_t> level;  // transfers and collectives: their group; local work: its level
  std::vector<uint64_t> key;    // transfers and collectives: the order within the group, the
                                // same on both sides of a message and on every member
  std::vector<uint64_t> bytes;  // a send or receive: the message's bytes (the send's range)
  std::vector<uint32_t> stmt;   // the step's statement (to confirm the rank graph is the same program)
  std::vector<uint8_t> kind;    // its StepKind (likewise)
};

// True when the step is a transfer or collective (one of a group) in the stream order.
bool stream_transfer(StepKind k);

// What local work that depends on nonblocking transfer h must also wait for: h's own
// dependencies, looking through further nonblocking transfers (the prune pass drops a direct
// a -> s when s -> h -> a, and a local step does not wait for h itself). Filled into `out`.
const std::vector<StepId>& nonblocking_deps_through(const StepGraph& g, StepId h, std::vector<StepId>& out);

// The stream order of rank `rank`'s program in `full` (every rank, matched). False with errors in
// `diags` (file:line:col) when the schedule cannot be issued that way: a receive from any source
// or with any tag that the match pass could not resolve, an unmatched transfer, or transfers that
// wait on each other's completion (they would need a buffered send).
bool stream_order(const StepGraph& full, uint32_t rank, StreamOrder& out, Diagnostics& diags);

// Rank `rank`'s order as text, group by group and level by level (`stepgraph compile --format
// stream`): `g` is the whole graph the order was computed on, or that rank's own graph.
std::string stream_order_text(const StepGraph& g, uint32_t rank, const StreamOrder& o);

}  // namespace sg
