// Chrome trace (the JSON "Trace Event Format" that Perfetto and chrome://tracing open) of a
// timed run of a step graph. Per rank a process ("rank r") with three tracks:
// - "steps", complete ("X") slices: local work (compute, copy, reduce) where it ran, waits,
//   unexpanded collectives, and each receive's completion, from its data's arrival (or its
//   posting, if later) to its end. Slices on a thread track must nest (Perfetto draws a partial
//   overlap wrongly): a slice that would overlap one without nesting (steps of a rank running at
//   once) goes on a further track, "steps (2)", and so on.
// - "sends in flight", async ("b"/"e") slices: each send from its start until its data arrived.
// - "receives in flight", async slices: each receive posted before its data came, from posting to
//   its end.
// What is in flight overlaps without nesting as a rule (a ring posts all its receives at once
// and they end one after the other), so it goes as async slices: Perfetto gives every async id a
// track and shows those of one name in one process as one track, packing overlapping slices into
// rows; thread tracks packed here would need a track per row. Async slices of one name all carry
// that name; a slice's step, description and source line are its args.
// An arrow (a flow, Perfetto's bind_id / flow_out / flow_in) joins each send's slice to its
// receive's completion. A process "links" holds a counter per platform link that carried data:
// the bytes of the messages crossing it, from each one's transfer start to its arrival.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "core/dsl/source.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

// One message on a link: [start, end] in seconds.
struct TraceLinkUse {
  double start = 0, end = 0;
  uint64_t bytes = 0;
};

// A link of the platform and the messages that crossed it.
struct TraceLink {
  std::string name;
  double bandwidth = 0;  // bytes/s (0: unknown)
  std::vector<TraceLinkUse> uses;
};

// What a timed run recorded. Times in seconds; NaN: it never happened.
struct TraceRun {
  std::span<const double> starts, ends;  // per step
  // Per send and receive, what it matched (kNoStep: nothing). Empty: the graph's own matches.
  std::span<const StepId> partners;
  // Per send, when its data began to move and when it arrived. Empty: unknown (a send's slice
  // then ends with the send).
  std::span<const double> transfer_starts, arrivals;
  // Seconds of local work a step (compute, copy, reduce, a receive's processing) takes on its
  // rank, where the engine queues such work behind the rank's earlier work: its slice is drawn
  // where it ran, that many seconds before its end. Empty: work ran from its start.
  std::function<double(StepId)> work;
  std::vector<TraceLink> links;  // the links that carried data
  std::string links_note;        // why the link tracks are partial or missing ("": they are whole)
};

void write_chrome_trace(std::ostream& os, const StepGraph& g, const SourceManager& sm, const TraceRun& run);

}  // namespace sg
