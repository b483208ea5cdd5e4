// A measured nccl-tests table (core/io/nccl_tests.hpp) predicted by the simulator: each row's size
// simulated on a platform, as `sim --nccl-tests` prints it and `calibrate --nccl-tests` fits it.
// Without a TARGET the table's own collective is simulated as one collective step over every
// rank, expanded as the platform's library would run it (NCCL's choice on a GPU platform).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/io/nccl_tests.hpp"
#include "sim/point.hpp"

namespace sg::cli {

// One table as read: its file in `ses`, its rows, its rank count (the header's, else `ranks`).
struct LoadedTable {
  std::string path;
  uint32_t file = 0;
  NcclTestsFile table;
  uint32_t n = 0;
};

// Reads `path` into `out` (the collective: the header's, or `collective` where given; they must
// agree), with the rank count from -n (`ranks`, "" for none) or the header. Non-zero exit code
// (2) with the diagnostic printed where the file is unreadable or malformed or says no ranks.
int load_nccl_table(Session& ses, const std::string& path, const std::string& ranks, const std::string& collective, LoadedTable& out);

// Predicts every row of `t` with the sim's own options `o` (its platform, model and TARGET; a
// TARGET of none: the table's collective). `results` holds one point per row in row order. A
// non-zero exit code where the points cannot be planned (the error printed), or the table's
// collective has no step (a located error).
// nccl-tests times calls issued back to back, so a row takes at least the host's time to issue
// one (the platform's nccl_host, NcclCalibration::host_s): a row the simulated call is faster
// than is that time instead (its busbw scaled to match), marked in `host_bound`. A bad platform:
// its located error printed, exit code 2.
int predict_nccl_table(Session& ses, const SimOpts& o, const LoadedTable& t, std::vector<sim::PointResult>& results,
                       std::vector<char>& host_bound);

// The half of a row whose time counts as measured: 0 out of place, else 1 in place (nccl-tests
// prints N/A in a half it did not run), -1 where neither has a time.
int measured_half(const NcclTestsRow& r);

// The split every report of a table makes (the accuracy benchmark's, issue 29's targets): calls
// below 1 MiB, where latencies and the host's floor decide, and from 1 MiB up. Calibration lets
// the host's floor bound only the first.
inline bool small_row(const NcclTestsRow& r) { return r.size < (uint64_t{1} << 20); }

// Over a set of rows, predicted / measured as the benchmark reports it: the geometric mean as a
// signed error (exp(mean ln r) − 1: a bias) and the mean |r − 1|.
struct ErrorSummary {
  bool any = false;
  size_t rows = 0;
  double geomean = 0, mean_abs = 0;
};
ErrorSummary summarise_errors(const std::vector<double>& ratios);

}  // namespace sg::cli
