// `stepgraph sim --nccl-tests FILE [TARGET] [--platform …]`: every size of a measured nccl-tests
// table (core/io/nccl_tests.hpp) simulated on the platform, the time beside the measured one, and
// the error: per row (predicted − measured) / measured, and over the rows below 1 MiB and from
// 1 MiB up the geometric mean of predicted / measured, as a signed error (exp(mean ln r) − 1: a
// bias, −62 % when every prediction is 0.38 of the measurement), and the mean of |error| (which
// errors of both signs cannot cancel). Without a TARGET the table's own
// collective is simulated as one collective step over every rank, expanded as the platform's
// library would run it (NCCL's choice on a GPU platform); with one, that schedule at each size.
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/shared.hpp"
#include "cli/sim_command.hpp"
#include "core/base/format.hpp"
#include "core/base/sizes.hpp"
#include "core/io/nccl_tests.hpp"
#include "core/io/output_file.hpp"

namespace sg::cli {

namespace {

// The language's collective for nccl-tests' name, and its statement and postcondition over every
// rank; nccl-tests' size is the library's `size` for each (the vector, the gathered buffer, the
// message, the whole send buffer).
struct TestColl {
  const char* nccl;  // all_reduce
  const char* init;  // contrib / owned
  const char* expect;
  const char* statement;
};
const TestColl kColls[] = {
    {"all_reduce", "contrib", "allreduce(data)", "allreduce data;"},
    {"all_gather", "owned", "allgather(data)", "allgather data;"},
    {"reduce_scatter", "contrib", "reduce_scatter(data)", "reduce_scatter data;"},
    {"broadcast", "contrib", "broadcast(data, 0)", "bcast data root 0;"},
    {"reduce", "contrib", "reduce(data, 0)", "reduce data root 0;"},
    {"alltoall", "contrib", "alltoall(data, dst)", "alltoall data into dst;"},
};

std::string schedule_text(const TestColl& c) {
  return std::string("# One ") + c.nccl + " over every rank, as nccl-tests runs it.\nschedule nccl_tests_" + c.nccl +
         "(size = 1MiB) {\n  buffer data[N] bytes size / N;\n  buffer dst[N] bytes size / N;\n  init data " + c.init +
         ";\n  init dst contrib;\n  expect " + c.expect + ";\n  " + c.statement + "\n}\n";
}

struct Agg {
  bool any = false;
  double geomean = 0, mean_abs = 0;  // exp(mean ln r) − 1, mean |r − 1|
};
Agg aggregate(const std::vector<double>& ratios) {
  Agg a;
  if (ratios.empty()) return a;
  double l = 0, m = 0;
  for (double r : ratios) l += std::log(r), m += std::fabs(r - 1);
  a.any = true;
  a.geomean = std::exp(l / static_cast<double>(ratios.size())) - 1;
  a.mean_abs = m / static_cast<double>(ratios.size());
  return a;
}

}  // namespace

int cmd_sim_nccl_tests(const SimOpts& o) {
  Session ses;
  std::string err;
  uint32_t file = ses.sources.load(o.nccl_tests, err);
  if (!file) return fail("--nccl-tests: " + err);
  NcclTestsFile table;
  if (!read_nccl_tests(ses.sources, file, table, ses.diags)) {
    std::cerr << ses.diags.render(ses.sources);
    return 2;
  }
  if (o.targets.size() > 1) return fail("--nccl-tests compares one schedule with the table (or, with none, the table's own collective)");
  // N: -n, else the table's ranks.
  uint32_t n = 0;
  if (!o.ranks.empty()) {
    std::vector<uint32_t> ns;
    if (!parse_rank_list(o.ranks, ns, err) || ns.size() != 1)
      return fail("--nccl-tests takes one -n (the table's rank count), got '" + o.ranks + "'");
    n = ns[0];
  } else {
    n = table.ranks;
    if (n == 0) return fail("--nccl-tests: " + o.nccl_tests + " lists no ranks (no \"# Rank …\" lines): give -n");
  }
  // The schedule: the user's, or the table's collective as one step.
  std::string target;
  std::filesystem::path tmp;
  if (!o.targets.empty()) {
    target = o.targets[0];
  } else {
    if (!o.nccl_collective.empty()) {
      if (!table.collective.empty() && table.collective != o.nccl_collective)
        return fail("--nccl-collective " + o.nccl_collective + ", but " + o.nccl_tests + " says " + table.collective);
      table.collective = o.nccl_collective;
    }
    const TestColl* coll = nullptr;
    for (const TestColl& c : kColls)
      if (table.collective == c.nccl) coll = &c;
    if (!coll) {
      Loc at = table.collective_loc.valid() ? table.collective_loc : Loc{file, 1, 1};
      ses.diags.error(at, table.collective.empty()
                              ? "no \"# Collective test starting: …\" line says which collective this is: give --nccl-collective "
                                "(or a TARGET to compare)"
                              : "nccl-tests' " + table.collective +
                                    " has no collective step to simulate (all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                    "alltoall): "
                                    "give a TARGET to compare");
      std::cerr << ses.diags.render(ses.sources);
      return 2;
    }
    tmp = std::filesystem::temp_directory_path() / ("stepgraph_nccl_tests_" + std::to_string(getpid()) + ".sched");
    if (!write_output_file(tmp.string(), schedule_text(*coll), err)) return fail(err);
    target = tmp.string();
  }
  // One point per row, at the row's size, on the platform, through the sim's own pipeline.
  SimOpts so = o;
  so.targets = {target};
  so.ranks = std::to_string(n);
  so.nccl_tests.clear();
  so.sweep.clear();
  std::string sizes;
  for (const NcclTestsRow& r : table.rows) {  // appended: "," + std::to_string draws GCC 12's false -Wrestrict
    if (!sizes.empty()) sizes += ',';
    sizes += std::to_string(r.size);
  }
  so.sweep = "size=" + sizes;
  so.quiet = true;
  PointPlan plan;
  if (int rc = plan_sim(so, plan)) {
    if (!tmp.empty()) std::filesystem::remove(tmp);
    return rc;
  }
  std::vector<PointResult> results(plan.points.size());
  for (size_t i = 0; i < plan.points.size(); ++i) results[i] = run_point(so, plan, i);
  if (!tmp.empty()) std::filesystem::remove(tmp);

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
    (m.size < (uint64_t{1} << 20) ? small : large).push_back(ratio);
    j["predicted_us"] = pred;
    j["predicted_busbw_GBps"] = p.world ? nlohmann::json(p.busbw) : nlohmann::json(nullptr);
    j["error"] = ratio - 1;
    std::snprintf(line, sizeof line, "%14llu %12.2f %12.2f %+8.1f%% %11.2f %11s\n", static_cast<unsigned long long>(m.size), m.time_us[0],
                  pred, 100 * (ratio - 1), m.busbw[0], p.world ? fmt("%.2f", p.busbw).c_str() : "-");
    text += line;
    rows.push_back(j);
  }
  Agg gs = aggregate(small), gl = aggregate(large);
  auto agg_json = [](const Agg& a) {
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
            << "; measured: the out-of-place time\n"
            << text;
  auto said = [](const Agg& a, size_t k, const char* where) {
    if (!a.any) return std::string("  ") + where + ": no sizes\n";
    return "  " + std::string(where) + " (" + std::to_string(k) + " sizes): geometric-mean error " + fmt("%+.1f", 100 * a.geomean) +
           "%, mean |error| " + fmt("%.1f", 100 * a.mean_abs) + "%\n";
  };
  std::cout << said(gs, small.size(), "below 1 MiB") << said(gl, large.size(), "from 1 MiB up");
  return worst;
}

}  // namespace sg::cli
