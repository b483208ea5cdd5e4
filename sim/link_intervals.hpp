// The link tracks of a simulation's trace: when each link of the platform carried which message.
// Computed after the run from what the runtime recorded (each message's transfer start and
// arrival, Runtime::transfer_starts and arrival_times) and the platform's routes, so both engines
// get the same tracks and neither has to know about traces.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/io/trace.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

// At most this many (message, link) crossings go into a trace's link tracks (24 bytes each here,
// two counter samples each in the file); past it the tracks hold the messages that began to move
// before the first one left out, and the trace says so.
constexpr size_t kMaxLinkCrossings = size_t{1} << 20;

// Per link that carried data (in the platform's order), every message that crossed it, from its
// transfer's start to its arrival: the time it was the network's business, which in the analytic
// engine includes waiting behind the sending NIC's earlier messages. `note` is set when the
// tracks are partial (capped) or missing (no routes, nothing recorded), and cleared otherwise.
std::vector<TraceLink> link_intervals(const StepGraph& g, const Platform& p, const std::vector<uint32_t>& map,
                                      std::span<const double> transfer_starts, std::span<const double> arrivals, size_t max_crossings,
                                      std::string& note);

// What write_chrome_trace needs from a run simulated with SimOptions::trace: views of r's
// per-step times (r must outlive the result) and the link tracks.
TraceRun trace_run(const StepGraph& g, const Platform& p, const SimOptions& o, const SimResult& r,
                   size_t max_crossings = kMaxLinkCrossings);

}  // namespace sg::sim
