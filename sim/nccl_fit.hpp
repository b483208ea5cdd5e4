// The fit behind `stepgraph calibrate --nccl-tests` (docs/sim.md, "Calibration"): the parameters
// of a platform's NcclCalibration (the call's launch overhead, a factor on NCCL's latencies, a
// factor on its bus bandwidth, and the host's floor) that bring simulated times closest to measured ones,
// in the sense of the summed squared log ratio (so that a 1 KiB row weighs what a 1 GiB row does,
// and the fit aims at the geometric-mean error the accuracy benchmark reports).
//
// The simulation is a black box here (a callback), but nearly linear in the parameters: a call
// pays the launch once on its critical path, the latencies scale with `lat`, the streaming time
// with 1/bw where NCCL's cap binds (the links' own rate takes over where it does not). So the fit
// is Gauss-Newton on (launch, lat, 1/bw) with the launch's derivative taken as 1 and the other two
// by finite differences, bounds held by trying each set of parameters at their bound, and a step
// halved while it does not improve: a handful of simulations, where a general optimiser would
// need hundreds. A weak pull towards lat = bw = 1 (nccl_fit.cpp, kPrior) settles what the rows
// cannot tell apart.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "sim/platform.hpp"

namespace sg::sim {

// Predicts every measured row under calibration `k` (seconds, all > 0); false with an error in
// `diags` stops the fit.
using PredictFn = std::function<bool(const NcclCalibration& k, std::vector<double>& predicted_s, Diagnostics& diags)>;

// The host's floor (NcclCalibration::host_s): a row is max(host, the simulated call), as
// nccl-tests times calls issued back to back. The callback then predicts the calls without it.
// `fit`: the host too, profiled out (for each set of the other three, the host that fits the
// rows best, which costs no simulation: the calls do not depend on it); else `host_s` as given
// (0: no floor).
struct HostFloor {
  bool fit = false;
  double host_s = 0;
  bool kept = false;  // out: the rows could not tell the host (none bounded by it): host_s kept, or lowered below every call
  // The rows the host may bound (nccl-tests' small calls, below 1 MiB: a larger call is the
  // GPU's, and a slow one is no host's doing); empty: every row.
  std::vector<char> may_bound;
};

struct NcclFit {
  NcclCalibration k;                // the best found
  std::vector<double> predicted_s;  // under k
  double rms_log = 0;               // sqrt(mean (ln predicted / measured)^2) under k
  double start_rms_log = 0;         // the same under NCCL's model as is (k = {})
  int simulations = 0;              // calls of the callback
  int iterations = 0;
};

// Fits `measured_s` (> 0 each, one per row the callback predicts). False with an error in `diags`
// where the callback fails or a row is not positive.
bool fit_nccl_calibration(const std::vector<double>& measured_s, const PredictFn& predict, NcclFit& out, Diagnostics& diags,
                          HostFloor* host = nullptr);

// The host that best fits `measured_s` as max(host, call_s) in the summed squared log ratio, in
// [0, kMaxLaunch], bounding none of the rows `may_bound` excludes; `start` where the rows cannot
// tell (no row bounded at the best): lowered to just under the fastest call if `start` would bound
// one, and `tells` false.
double best_host_floor(const std::vector<double>& measured_s, const std::vector<double>& call_s, double start, bool& tells,
                       const std::vector<char>& may_bound = {});

// Bounds of the fit (and of the platform keys): launch 0 to 1 ms, the factors 0.01 to 100.
constexpr double kMaxLaunch = 1e-3, kMinFactor = 0.01, kMaxFactor = 100;

}  // namespace sg::sim
