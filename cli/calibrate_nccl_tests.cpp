// `stepgraph calibrate --nccl-tests FILE[:COLLECTIVE]… --platform PRESET [-o FILE]`: NCCL's costs on a platform
// fitted to a user's own nccl-tests output (docs/sim.md, "Calibration"). The first table is the
// fit's: its even rows (sizes 0, 2, 4, … in the file's order) are fitted (sim/nccl_fit.hpp), its
// odd rows and every other table are held out, each reported before and after (the geometric-mean
// error and the mean |error| below 1 MiB and from 1 MiB up). The platform file written is the
// given platform with the fitted keys (nccl_launch, nccl_lat, nccl_bw, nccl_host), what was measured as
// comments: `sim --platform @FILE` and `exec --predict @FILE` take it.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/nccl_tests_predict.hpp"
#include "cli/shared.hpp"
#include "core/base/format.hpp"
#include "core/io/output_file.hpp"
#include "sim/nccl_fit.hpp"
#include "sim/point.hpp"

namespace sg::cli {

using sim::NcclCalibration;
using sim::Platform;
using sim::PlatformKind;

namespace {

// The row's measured time: out of place, else in place (nccl-tests may print N/A in one half).
bool measured_us(const NcclTestsRow& r, double& us) {
  int h = measured_half(r);
  if (h >= 0) us = r.time_us[h];
  return h >= 0;
}

// `t` with only its rows of that parity (−1: all of them) that have a measured time.
LoadedTable subset(const LoadedTable& t, int parity) {
  LoadedTable s = t;
  s.table.rows.clear();
  for (size_t i = 0; i < t.table.rows.size(); ++i) {
    double us = 0;
    if ((parity < 0 || static_cast<int>(i % 2) == parity) && measured_us(t.table.rows[i], us)) s.table.rows.push_back(t.table.rows[i]);
  }
  return s;
}

std::string with_calibration(const std::string& spec, const NcclCalibration& k) {
  return spec + ",nccl_launch=" + fmt("%.3f", k.launch_s * 1e6) + "us,nccl_lat=" + fmt("%.4f", k.lat) + ",nccl_bw=" + fmt("%.4f", k.bw);
}

// `spec` without its key `key` (",key=value"), and whether it had one.
std::string without_key(const std::string& spec, const std::string& key, bool& had) {
  size_t at = spec.find("," + key + "=");
  had = at != std::string::npos;
  if (!had) return spec;
  size_t end = spec.find(',', at + 1);
  return spec.substr(0, at) + (end == std::string::npos ? "" : spec.substr(end));
}

// Every row of `t` predicted with `so`: predicted / measured, split at 1 MiB. Non-zero where the
// points cannot be planned (the error printed); 0 with an error in `diags` where a row does not
// simulate (its message the rendered, located diagnostic where there is one).
int ratios(Session& ses, const SimOpts& so, const LoadedTable& t, std::vector<double>& small, std::vector<double>& large,
           std::vector<double>* times_s, Diagnostics& diags) {
  std::vector<sim::PointResult> res;
  std::vector<char> host_bound;
  if (int rc = predict_nccl_table(ses, so, t, res, host_bound)) return rc;
  for (size_t i = 0; i < t.table.rows.size(); ++i) {
    const sim::PointResult& p = res[i];
    if (!p.completed || !p.error.empty()) {
      diags.fail(p.diag.empty() ? (p.error.empty() ? "the simulation did not complete" : p.error) : p.diag);
      return 0;
    }
    double us = 0;
    measured_us(t.table.rows[i], us);
    double r = p.time_s * 1e6 / us;
    (small_row(t.table.rows[i]) ? small : large).push_back(r);
    if (times_s) times_s->push_back(p.time_s);
  }
  return 0;
}

// A failure of the fit or of a prediction (the errors in `diags`): a rendered diagnostic as it is,
// else one line.
int report(const std::string& what, const Diagnostics& diags) {
  const std::string text = diags.messages();
  if (text.find(": error:") != std::string::npos) {
    std::cerr << text;
    return 2;
  }
  return fail(what + text);
}

// FILE or FILE:COLLECTIVE (for a table whose header does not say it): the path and the collective.
void split_table_arg(const std::string& arg, std::string& path, std::string& collective) {
  path = arg;
  collective.clear();
  size_t colon = arg.rfind(':');
  if (colon == std::string::npos || std::filesystem::exists(arg)) return;
  std::string c = arg.substr(colon + 1);
  for (const char* known : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"})
    if (c == known) {
      path = arg.substr(0, colon);
      collective = c;
    }
}

std::string cell(const ErrorSummary& a) { return a.any ? fmt("%+.1f%%", 100 * a.geomean) + " / " + fmt("%.1f%%", 100 * a.mean_abs) : "-"; }
nlohmann::json cell_json(const ErrorSummary& a) {
  return a.any ? nlohmann::json{{"rows", a.rows}, {"geomean_error", a.geomean}, {"mean_abs_error", a.mean_abs}} : nlohmann::json(nullptr);
}

}  // namespace

int cmd_calibrate_nccl_tests(const CalibrateOpts& o) {
  if (o.platform.empty())
    return fail("calibrate --nccl-tests needs --platform: the machine the tables were measured on (a preset such as dgx-h100:nodes=2)");
  if (o.model != "analytic" && o.model != "simgrid") return fail("--model is analytic or simgrid, got '" + o.model + "'");
  Session ses;
  std::vector<LoadedTable> tables(o.nccl_tests.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    std::string path, collective;
    split_table_arg(o.nccl_tests[i], path, collective);
    if (int rc = load_nccl_table(ses, path, o.ranks, collective, tables[i])) return rc;
  }
  // The platform: a `nodes` kind (a preset), without a calibration of its own.
  Platform p;
  if (size_t from = ses.diags.all().size(); !sim::parse_platform(o.platform, tables[0].n, p, ses.sources, ses.diags)) {
    sim::PlatformError e = sim::platform_error(ses, from);
    if (e.located.empty()) return fail("bad --platform '" + o.platform + "': " + e.message);
    std::cerr << e.located;
    return 2;
  }
  if (p.kind != PlatformKind::Nodes)
    return fail("calibrate --nccl-tests fits NCCL's costs on GPU nodes: --platform must be a preset or a nodes: platform, not " +
                p.spec.substr(0, p.spec.find(':')));
  if (!(p.nodes.nccl == NcclCalibration{}) || p.spec.find("nccl_") != std::string::npos)
    return fail(
        "--platform already holds a calibration (nccl_launch, nccl_lat or nccl_bw): calibrate fits them; give the platform without");
  const std::string base = p.spec;  // normalised: every key resolved, so the file says the whole machine
  // The host's floor: fitted with the rest unless the platform gives it (then kept); the fit's
  // own predictions are the calls without it (nccl_host=0s), the fit applies it.
  bool host_given = false;
  const std::string base_no_host = without_key(base, "nccl_host", host_given);
  sim::HostFloor host;
  host.fit = !host_given;
  host.host_s = p.nodes.nccl.host_s;

  SimOpts so;
  so.platform = base;
  so.model = o.model;
  so.quiet = true;

  // The fit: the first table's even rows.
  LoadedTable fit_rows = subset(tables[0], 0);
  if (fit_rows.table.rows.size() < 3)
    return fail(o.nccl_tests[0] + " has " + std::to_string(fit_rows.table.rows.size()) +
                " rows to fit (its even rows with a time): calibrate needs 6 rows at least");
  std::vector<double> measured;
  for (const NcclTestsRow& r : fit_rows.table.rows) {
    double us = 0;
    measured_us(r, us);
    measured.push_back(us * 1e-6);
    host.may_bound.push_back(small_row(r) ? 1 : 0);
  }
  int plan_rc = 0;
  sim::PredictFn predict = [&](const NcclCalibration& k, std::vector<double>& t, Diagnostics& d) {
    SimOpts s = so;
    s.platform = with_calibration(base_no_host, k) + ",nccl_host=0s";
    std::vector<double> small, large;
    t.clear();
    const uint64_t errors = d.error_count();
    plan_rc = ratios(ses, s, fit_rows, small, large, &t, d);
    if (plan_rc && d.error_count() == errors) d.fail("planning failed");
    return plan_rc == 0 && d.error_count() == errors;
  };
  sim::NcclFit fit;
  Diagnostics fit_diags;
  if (!sim::fit_nccl_calibration(measured, predict, fit, fit_diags, &host))
    return plan_rc ? plan_rc : report(tables[0].path + ": ", fit_diags);
  const std::string calibrated = with_calibration(base_no_host, fit.k) + ",nccl_host=" + fmt("%.3f", host.host_s * 1e6) + "us";
  const std::string host_said = host_given                          ? "as given"
                                : !host.kept                        ? "fitted"
                                : host.host_s < p.nodes.nccl.host_s ? "lowered under the fastest call: no row is bounded by it"
                                                                    : "kept: no row is bounded by it";

  // Held out: the first table's odd rows, every other table whole; before and after.
  struct Held {
    std::string file, collective, rows;
    ErrorSummary before[2], after[2];  // [below 1 MiB, from 1 MiB]
  };
  std::vector<Held> held;
  for (size_t i = 0; i < tables.size(); ++i) {
    LoadedTable t = subset(tables[i], i == 0 ? 1 : -1);
    Held h;
    h.file = tables[i].path;
    h.collective = tables[i].table.collective;
    h.rows = i == 0 ? "odd rows" : "all rows";
    for (int after = 0; after < 2; ++after) {
      SimOpts s = so;
      s.platform = after ? calibrated : base;
      std::vector<double> small, large;
      Diagnostics diags;
      if (int rc = ratios(ses, s, t, small, large, nullptr, diags)) return rc;
      if (diags.has_errors()) return report(tables[i].path + ": ", diags);
      ErrorSummary* into = after ? h.after : h.before;
      into[0] = summarise_errors(small);
      into[1] = summarise_errors(large);
    }
    held.push_back(h);
  }

  // The platform file.
  std::string file = "# stepgraph calibrate --nccl-tests (stepgraph " + std::string(STEPGRAPH_VERSION) + "): NCCL's costs on " + base +
                     "\n# fitted to the even rows of " + tables[0].path + " (" + tables[0].table.collective + ", " +
                     std::to_string(tables[0].n) + " ranks, engine " + o.model + "); held out, geometric-mean / mean |error|:\n";
  for (const Held& h : held)
    file += "#   " + h.file + " (" + h.rows + "): below 1 MiB " + cell(h.after[0]) + ", from 1 MiB " + cell(h.after[1]) + "\n";
  file += "# Use: stepgraph sim --platform @FILE …  (nodes= says the node count: edit it for another)\n" + calibrated + "\n";
  if (Diagnostics diags; !write_output_file(o.output, file, diags)) return fail(diags.messages());

  if (o.json) {
    nlohmann::json j = {{"platform", base},
                        {"calibrated", calibrated},
                        {"output", o.output},
                        {"engine", o.model},
                        {"fitted",
                         {{"nccl_launch_us", fit.k.launch_s * 1e6},
                          {"nccl_lat", fit.k.lat},
                          {"nccl_bw", fit.k.bw},
                          {"nccl_host_us", host.host_s * 1e6},
                          {"nccl_host", host_said},
                          {"file", tables[0].path},
                          {"rows", measured.size()},
                          {"rms_log_error_before", fit.start_rms_log},
                          {"rms_log_error_after", fit.rms_log},
                          {"simulations", fit.simulations}}},
                        {"held_out", nlohmann::json::array()}};
    for (const Held& h : held)
      j["held_out"].push_back({{"file", h.file},
                               {"collective", h.collective},
                               {"rows", h.rows},
                               {"before", {{"below_1MiB", cell_json(h.before[0])}, {"from_1MiB", cell_json(h.before[1])}}},
                               {"after", {{"below_1MiB", cell_json(h.after[0])}, {"from_1MiB", cell_json(h.after[1])}}}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "calibrate --nccl-tests on " << base << " (engine " << o.model << ")\n"
            << "  fitted to the even rows of " << tables[0].path << " (" << tables[0].table.collective << ", " << tables[0].n << " ranks, "
            << measured.size() << " sizes; " << fit.simulations << " simulations of them):\n"
            << "    nccl_launch " << fmt("%.3f", fit.k.launch_s * 1e6) << " us, nccl_lat " << fmt("%.4f", fit.k.lat) << ", nccl_bw "
            << fmt("%.4f", fit.k.bw) << ", nccl_host " << fmt("%.3f", host.host_s * 1e6) << " us (" << host_said << ")\n"
            << "    (rms of ln(predicted/measured) " << fmt("%.3f", fit.start_rms_log) << " -> " << fmt("%.3f", fit.rms_log) << ")\n"
            << "  held out (geometric-mean error / mean |error|; before: NCCL's model as shipped):\n";
  std::printf("    %-52s %-9s %-22s %-22s %-22s %-22s\n", "table", "rows", "before, below 1 MiB", "before, from 1 MiB",
              "after, below 1 MiB", "after, from 1 MiB");
  for (const Held& h : held) {
    std::string name = h.file.size() > 52 ? "…" + h.file.substr(h.file.size() - 51) : h.file;
    std::printf("    %-52s %-9s %-22s %-22s %-22s %-22s\n", name.c_str(), h.rows.c_str(), cell(h.before[0]).c_str(),
                cell(h.before[1]).c_str(), cell(h.after[0]).c_str(), cell(h.after[1]).c_str());
  }
  std::cout << "  wrote " << o.output << ": stepgraph sim --platform @" << o.output << " …\n";
  return 0;
}

}  // namespace sg::cli
