// Calibration: ping-pong between rank pairs of each class (two ranks on one node, two on
// different nodes), and an α-β fit of the one-way time, t(s) = α + s / bw. Collective over the
// communicator; rank 0 gets the results.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"

namespace sg::exec {

struct PingPoint {
  uint64_t bytes = 0;
  double one_way_s = 0;  // half the fastest round trip
};

struct PairClass {
  std::string name;  // "same node" / "other node"
  int a = 0, b = 0;  // the ranks measured
  std::vector<PingPoint> points;
  double alpha_s = 0;      // latency and bandwidth of t(s) = α + s / bw, fitted on relative
  double bw_Bps = 0;       // errors over every size (exec/mpi/calibrate.cpp)
  double max_rel_err = 0;  // the fit's largest relative error over the points
};

struct Calibration {
  int nodes = 1, per_node = 1;  // ranks per node (the largest)
  double gamma_s_per_byte = 0;  // a float sum reduction on this core, per byte of the vector (sim --gamma)
  std::vector<PairClass> classes;
};

// sizes: the message sizes to measure; iters: round trips per size (the fastest counts). False
// with the reason in `diags` (fewer than 2 processes).
bool calibrate(MPI_Comm comm, const std::vector<uint64_t>& sizes, int iters, Calibration& out, Diagnostics& diags);

// The platform string for `sim` from a calibration: a star for one node, `nodes:` for several.
std::string calibration_platform(const Calibration& c);

}  // namespace sg::exec
