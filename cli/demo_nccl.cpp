// The tour's NCCL tables (part of step 9, cli/demo.cpp): a real nccl-tests table shipped in
// bench/nccl_accuracy/tables, predicted row by row on the preset as shipped, then `calibrate
// --nccl-tests` fitted on half of it with the same machine's all-gather held out.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/nccl_tests_predict.hpp"
#include "cli/shared.hpp"

namespace sg::cli {

namespace {

// The shipped tables: beside the sources this binary was built from, else beside the binary
// (build/stepgraph: ../bench/…); "" where neither has them (an installed binary).
std::string tables_dir() {
  std::error_code ec;
  for (const std::filesystem::path& p :
       {std::filesystem::path(STEPGRAPH_SOURCE_DIR) / "bench/nccl_accuracy/tables",
        std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "bench/nccl_accuracy/tables"})
    if (std::filesystem::exists(p / "h100_8gpu_1node_allreduce_together-ring.txt", ec)) return p.string();
  return "";
}

}  // namespace

int demo_nccl_tables(int rc) {
  const std::string dir = tables_dir();
  if (dir.empty()) {
    std::cout << "\n   (the shipped nccl-tests tables are not beside this binary: bench/nccl_accuracy/tables)\n";
    return rc;
  }
  const std::string ar = dir + "/h100_8gpu_1node_allreduce_together-ring.txt", ag = dir + "/h100_8gpu_1node_allgather_together-ring.txt";
  std::cout << "\n   A real machine: nccl-tests' all_gather_perf on 8 H100s with NCCL_ALGO=Ring (together.ai, shipped in\n"
               "   bench/nccl_accuracy/tables, no constant chosen from it), predicted on dgx-h100:nodes=1 as shipped\n"
               "   (`sim --nccl-tests FILE`), every fourth size:\n\n";
  setenv("NCCL_ALGO", "Ring", 1);
  Session ses;
  LoadedTable t;
  SimOpts so;
  so.platform = "dgx-h100:nodes=1";
  so.model = "analytic";
  std::vector<sim::PointResult> res;
  std::vector<char> host_bound;
  if (load_nccl_table(ses, ag, "", "", t) || predict_nccl_table(ses, so, t, res, host_bound)) {
    unsetenv("NCCL_ALGO");
    return 2;
  }
  std::printf("   %12s %12s %12s %8s\n", "size (B)", "measured us", "predicted us", "error");
  std::vector<double> small, large;
  for (size_t i = 0; i < res.size() && i < t.table.rows.size(); ++i) {
    double m = t.table.rows[i].time_us[0], p = res[i].time_s * 1e6;
    (small_row(t.table.rows[i]) ? small : large).push_back(p / m);
    if (i % 4 == 2)
      std::printf("   %12llu %12.2f %12.2f %+7.1f%%\n", static_cast<unsigned long long>(t.table.rows[i].size), m, p, 100 * (p / m - 1));
  }
  ErrorSummary s = summarise_errors(small), l = summarise_errors(large);
  std::printf("   geometric-mean error: %+.1f%% below 1 MiB, %+.1f%% from 1 MiB up (rows the host bounds: its 36 us a call)\n",
              100 * s.geomean, 100 * l.geomean);
  std::cout << "\n   `calibrate --nccl-tests` fits NCCL's launch, latency and bandwidth factors and the host's floor to the\n"
               "   even rows of the same machine's all-reduce and holds out its odd rows and the all-gather above, which\n"
               "   it never saw:\n\n";
  std::cout.flush();
  CalibrateOpts co;
  co.nccl_tests = {ar, ag};
  co.platform = "dgx-h100:nodes=1";
  co.output = (std::filesystem::temp_directory_path() / "stepgraph_demo_calibration.platform").string();
  int c = cmd_calibrate_nccl_tests(co);  // (the file stays, for the user to try)
  unsetenv("NCCL_ALGO");
  return std::max(rc, c);
}

}  // namespace sg::cli
