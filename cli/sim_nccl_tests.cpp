// `stepgraph sim --nccl-tests FILE [TARGET] [--platform …]`: every size of a measured nccl-tests
// table (core/io/nccl_tests.hpp) simulated on the platform, the time beside the measured one, and
// the error: per row (predicted − measured) / measured, and over the rows below 1 MiB and from
// 1 MiB up the geometric mean of predicted / measured, as a signed error (exp(mean ln r) − 1: a
// bias, −62 % when every prediction is 0.38 of the measurement), and the mean of |error| (which
// errors of both signs cannot cancel). Without a TARGET the table's own
// collective is simulated as one collective step over every rank, expanded as the platform's
// library would run it (NCCL's choice on a GPU platform); with one, that schedule at each size.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/nccl_tests_predict.hpp"
#include "cli/shared.hpp"
#include "cli/sim_command.hpp"
#include "core/base/format.hpp"

namespace sg::cli {

int cmd_sim_nccl_tests(const SimOpts& o) {
  Session ses;
  if (o.targets.size() > 1) return fail("--nccl-tests compares one schedule with the table (or, with none, the table's own collective)");
  LoadedTable t;
  if (int rc = load_nccl_table(ses, o.nccl_tests, o.ranks, o.targets.empty() ? o.nccl_collective : std::string(), t)) return rc;
  const NcclTestsFile& table = t.table;
  const uint32_t n = t.n;
  std::vector<PointResult> results;
  std::vector<char> host_bound;
  if (int rc = predict_nccl_table(ses, o, t, results, host_bound)) return rc;
  const std::string target = o.targets.empty() ? table.collective : o.targets[0];

  std::vector<double> small, large;
  nlohmann::json rows = nlohmann::json::array();
  std::string text;
  char line[256];
  std::snprintf(line, sizeof line, "%14s %12s %12s %9s %11s %11s\n", "size (B)", "measured us", "predicted us", "error", "meas. busbw",
                "pred. busbw");
  text += line;
  int worst = 0;
  for (size_t i = 0; i < table.rows.size() && i < results.size(); ++i) {
    const NcclTestsRow& m = table.rows[i];
    const PointResult& p = results[i];
    nlohmann::json j = {{"size_bytes", m.size}, {"measured_us", m.time_us[0]}, {"measured_busbw_GBps", m.busbw[0]}};
    if (!p.completed || !p.error.empty()) {
      worst = std::max(worst, p.status ? p.status : 1);
      j["error"] = p.error.empty() ? "the simulation did not complete" : p.error;
      std::snprintf(line, sizeof line, "%14llu %12.2f %12s  %s\n", static_cast<unsigned long long>(m.size), m.time_us[0], "-",
                    j["error"].get<std::string>().c_str());
      text += line;
      rows.push_back(j);
      continue;
    }
    double pred = p.time_s * 1e6, ratio = pred / m.time_us[0];
    (small_row(m) ? small : large).push_back(ratio);
    j["predicted_us"] = pred;
    j["predicted_busbw_GBps"] = p.world ? nlohmann::json(p.busbw) : nlohmann::json(nullptr);
    j["error"] = ratio - 1;
    bool host = i < host_bound.size() && host_bound[i];
    j["host_bound"] = host;
    std::snprintf(line, sizeof line, "%14llu %12.2f %12.2f %+8.1f%% %11.2f %11s%s\n", static_cast<unsigned long long>(m.size), m.time_us[0],
                  pred, 100 * (ratio - 1), m.busbw[0], p.world ? fmt("%.2f", p.busbw).c_str() : "-", host ? "  host" : "");
    text += line;
    rows.push_back(j);
  }
  ErrorSummary gs = summarise_errors(small), gl = summarise_errors(large);
  auto agg_json = [](const ErrorSummary& a) {
    return a.any ? nlohmann::json{{"geomean_error", a.geomean}, {"mean_abs_error", a.mean_abs}} : nlohmann::json(nullptr);
  };
  std::string platform = o.platform.empty() ? std::string(sim::default_platform_spec()) + " (the default)" : o.platform;
  if (o.json) {
    nlohmann::json out = {{"file", o.nccl_tests},
                          {"collective", table.collective},
                          {"ranks", n},
                          {"hosts", table.hosts},
                          {"device", table.device},
                          {"platform", platform},
                          {"engine", o.model},
                          {"schedule", results.empty() ? "" : results[0].schedule},
                          {"rows", rows},
                          {"below_1MiB", agg_json(gs)},
                          {"from_1MiB", agg_json(gl)}};
    std::cout << out.dump(2) << "\n";
    return worst;
  }
  std::cout << "sim --nccl-tests " << o.nccl_tests << ": " << (table.collective.empty() ? "?" : table.collective) << ", " << n << " ranks"
            << (table.hosts ? " on " + std::to_string(table.hosts) + " host" + (table.hosts == 1 ? "" : "s") : std::string())
            << (table.device.empty() ? "" : " (" + table.device + ")") << "\n"
            << "  predicted by " << (results.empty() ? target : results[0].schedule) << " on " << platform << ", engine " << o.model
            << "; measured: the out-of-place time"
            << (std::any_of(host_bound.begin(), host_bound.end(), [](char b) { return b != 0; })
                    ? "; host: the host's time to issue a call (nccl_host) bounds the row"
                    : "")
            << "\n"
            << text;
  auto said = [](const ErrorSummary& a, size_t k, const char* where) {
    if (!a.any) return std::string("  ") + where + ": no sizes\n";
    return "  " + std::string(where) + " (" + std::to_string(k) + " sizes): geometric-mean error " + fmt("%+.1f", 100 * a.geomean) +
           "%, mean |error| " + fmt("%.1f", 100 * a.mean_abs) + "%\n";
  };
  std::cout << said(gs, small.size(), "below 1 MiB") << said(gl, large.size(), "from 1 MiB up");
  return worst;
}

}  // namespace sg::cli
