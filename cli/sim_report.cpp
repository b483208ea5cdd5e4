// `stepgraph sim`'s report of its points: JSON, CSV, a gnuplot plot (cli/plot.cpp), one point
// in full (time, bandwidths, overlap, critical path by statement, busiest links, a deadlock's
// waiting ranks) or many as a table.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "cli/shared.hpp"
#include "cli/sim_command.hpp"
#include "core/base/format.hpp"
#include "core/base/sizes.hpp"
#include "core/io/output_file.hpp"

namespace sg::cli {

namespace {

// Sizes in sim's printouts carry two decimals.
std::string human_bytes2(double b) { return human_bytes(b, 2); }

// "RCCL picks it for 1.00 MiB to 64.00 MiB (minBytes, maxBytes)": an MSCCL file's window.
std::string window_line(const PointResult& r) {
  std::string hi = r.window_max > 0 ? human_bytes2(static_cast<double>(r.window_max)) : std::string("any size");
  return "the runtime picks it for " + human_bytes2(static_cast<double>(r.window_min)) + " to " + hi + " (minBytes, maxBytes)";
}

// With several targets: at each N and swept value, which target is fastest and by how much over
// the next (a window the fastest is outside of is said, since the runtime would not pick it there).
void print_ranking(const std::vector<PointResult>& results, const std::vector<std::string>& labels, const std::string& param) {
  std::map<std::pair<uint32_t, uint64_t>, std::vector<size_t>> at;
  // A program with a defect is not ranked: its time is not one a sound run would have.
  auto defect = [&](const PointResult& r) { return r.check.is_object() && r.check.value("state", "") == "defect"; };
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].completed && !defect(results[i])) at[{results[i].n, results[i].param_value}].push_back(i);
  bool header = false;
  for (auto& [key, rs] : at) {
    if (rs.size() < 2) continue;
    std::sort(rs.begin(), rs.end(), [&](size_t a, size_t b) { return results[a].time_s < results[b].time_s; });
    if (!header) std::cout << "fastest:\n", header = true;
    const PointResult& w = results[rs[0]];
    std::string v = param.empty() ? "" : param == "size" ? human_bytes2(static_cast<double>(key.second)) : std::to_string(key.second);
    bool outside =
        w.window_min >= 0 && param == "size" &&
        (static_cast<int64_t>(key.second) < w.window_min || (w.window_max > 0 && static_cast<int64_t>(key.second) > w.window_max));
    // Within 0.5%: a tie (the two digits of a ratio would say "1.00x faster").
    double ratio = results[rs[1]].time_s / w.time_s;
    std::cout << "  N = " << key.first << (v.empty() ? "" : ", " + param + " " + v) << ": " << labels[rs[0]]
              << (ratio < 1.005 ? ", as fast as " : ", " + fmt("%.2f", ratio) + "x faster than ") << labels[rs[1]]
              << (ratio < 1.005 ? " (within 0.5%)" : "") << (outside ? " (outside its window: the runtime would not pick it)" : "") << "\n";
  }
}

}  // namespace

int report_points(const SimOpts& o, const PointPlan& plan, const std::vector<PointResult>& results) {
  int rc = 0;
  for (const auto& r : results) {
    if (r.unsupported) rc = std::max(rc, 2);
    else rc = std::max(rc, r.status);
  }
  if (o.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& r : results) {
      if (r.unsupported && o.quiet) continue;
      nlohmann::json j;
      sim::to_json(j, r);
      all.push_back(j);
    }
    std::cout << (all.size() == 1 ? all[0].dump(2) : all.dump(2)) << "\n";
  }
  if (!o.csv.empty()) {
    OutputFile file;
    std::ostream* os = &std::cout;
    Diagnostics diags;
    if (o.csv != "-") {
      if (!file.open(o.csv, diags)) return std::max(rc, fail("--csv: " + diags.messages()));
      os = &file.stream();
    }
    *os << "schedule,ranks," << (plan.param.empty() ? "" : plan.param + ",")
        << "size_bytes,time_s,algbw_GBps,busbw_GBps,messages,bytes,completed,wall_s\n";
    // Empty where a value means nothing: no time for a run that never finished, no size or
    // bandwidths for a schedule that is not one collective over every rank.
    for (const auto& r : results) {
      bool bw = r.completed && r.world;
      *os << r.schedule << "," << r.n << "," << (plan.param.empty() ? "" : std::to_string(r.param_value) + ",")
          << (r.world ? std::to_string(r.size_bytes) : "") << "," << (r.completed ? fmt("%.9g", r.time_s) : "") << ","
          << (bw ? fmt("%.6g", r.algbw) : "") << "," << (bw ? fmt("%.6g", r.busbw) : "") << "," << r.messages << "," << r.bytes << ","
          << (r.completed ? 1 : 0) << "," << fmt("%.3f", r.wall_s) << "\n";
    }
    if (o.csv != "-" && !file.close(diags)) return std::max(rc, fail("--csv: " + diags.messages()));
  }
  if (!o.plot.empty()) {
    Diagnostics diags;
    if (!plot_points(o, plan, results, diags)) return std::max(rc, fail(diags.messages()));
  }
  if (o.json || o.csv == "-") {
    std::set<std::string> shown;  // a bad --platform fails every point alike: its error once
    for (const auto& r : results)
      if (!r.diag.empty() && shown.insert(r.diag).second) std::cerr << r.diag;
    return rc;
  }
  // Text: one point in full, many as a table.
  std::string folded_warnings;
  if (results.size() == 1) {
    const PointResult& r = results[0];
    std::cerr << r.warnings << r.diag;
    std::string head = "sim " + r.schedule + " N = " + std::to_string(r.n);
    if (!r.param.empty()) head += ", " + r.param + " = " + std::to_string(r.param_value);
    if (r.status == 2 || (!r.error.empty() && r.platform.empty())) {
      std::cout << head << ": " << r.error << "\n";
      return rc;
    }
    // The header says the engine and the network model, always, and what the check found.
    std::cout << head << " on " << r.platform << "; engine " << r.model << ", network model " << r.network_model << "\n";
    if (!r.params.empty()) std::cout << "  parameters: " << r.params << "\n";
    if (!r.check_line.empty())
      std::cout << "  " << r.check_line
                << (r.check.is_object() && r.check.value("state", "") == "defect" ? " (simulated anyway: --allow-defects)" : "") << "\n";
    if (!r.engine_note.empty()) std::cout << "  engine: " << r.engine_note << "\n";
    if (!r.wire.empty()) std::cout << "  " << r.wire << "\n";
    if (r.window_min >= 0) std::cout << "  " << window_line(r) << "\n";
    if (!r.error.empty()) {
      std::cout << "  error: " << r.error << "\n";
      return rc;
    }
    if (!r.completed) {  // no time, no bandwidth: it never finished
      std::cout << "  did not finish: " << with_commas(r.messages) << " messages were sent before every rank stopped\n" << r.text;
    } else {
      std::cout << "  time " << human_time(r.time_s);
      if (r.world && r.size_bytes)
        std::cout << "   algbw " << fmt("%.2f", r.algbw) << " GB/s   busbw " << fmt("%.2f", r.busbw) << " GB/s   (size "
                  << human_bytes2(static_cast<double>(r.size_bytes)) << ", bus factor " << r.factor_name << ")";
      if (r.model_flops > 0)
        std::cout << "   " << fmt("%.1f", r.tflops) << " TFLOP/s of attention (" << fmt("%.1f", r.model_flops / 1e12)
                  << " TFLOP in FlashAttention's count), MFU " << fmt("%.1f", 100 * r.mfu) << "% of the platform's peak";
      std::cout << "\n  " << with_commas(r.messages) << " messages, " << human_bytes2(static_cast<double>(r.bytes)) << "; slowest rank "
                << r.slowest_rank << " (done at " << human_time(r.slowest_s) << ")\n";
      // The overlap, from the critical path's own segments: what of the slowest rank's
      // communication the path waited for, and what ran beside it.
      if (r.compute_s > 0) {
        double off = std::max(0.0, r.comm_s - r.exposed_s);
        std::cout << "  the critical path spends " << human_time(r.cp_local_s) << " on local work, " << human_time(r.cp_comm_s)
                  << " waiting for messages and " << human_time(r.cp_sync_s) << " in waits and collectives\n"
                  << "  rank " << r.slowest_rank << " computes " << human_time(r.compute_s) << " and has messages in flight for "
                  << human_time(r.comm_s) << " (" << human_time(r.overlap_s) << " of it while computing); " << human_time(r.exposed_s)
                  << " of its messages' time is on the critical path, " << human_time(off) << " ("
                  << fmt("%.0f", r.comm_s > 0 ? 100 * off / r.comm_s : 0) << "%) is hidden\n";
      }
      // The step time on that rank, in parts that add up to it (where it computes at all: a
      // collective's time is all communication).
      if (r.compute_s > 0 && r.time_s > 0) {
        auto part = [&](double x) { return human_time(x) + " (" + fmt("%.0f", 100 * x / r.time_s) + "%)"; };
        std::cout << "  step time on rank " << r.slowest_rank << ": compute " << part(r.compute_s) << ", exposed communication "
                  << part(r.exposed_total_s) << ", idle " << part(r.idle_s)
                  << " (waiting with nothing of its own moving: other ranks' work, a pipeline's bubble)\n";
        if (!r.breakdown_text.empty()) std::cout << "  exposed communication, by statement:\n" << r.breakdown_text;
      }
      std::cout << "  critical path, by statement:\n" << r.text;
      if (!r.links_json.empty()) {
        std::cout << "  busiest links:";
        for (const auto& l : r.links_json)
          std::cout << "  " << l.at("link").get<std::string>() << " " << human_bytes2(static_cast<double>(l.at("bytes").get<uint64_t>()))
                    << " (" << fmt("%.0f", 100 * l.at("busy").get<double>()) << "% busy)";
        std::cout << "\n";
      }
    }
    if (!r.world && !r.expansions.empty())
      std::cout << (r.memo.empty()
                        ? "  not one collective over every rank: no algbw or busbw; its collectives, each timed from its first member's "
                          "start to its last member's end:\n"
                        : "  not one collective over every rank: no algbw or busbw; its collectives, each costed alone:\n");
    for (const auto& e : r.expansions) std::cout << "  collective: " << e << "\n";
    if (!r.memo.empty()) std::cout << "  collectives costed once per shape: " << r.memo << "\n";
    if (!r.symmetry.empty()) std::cout << "  symmetry: " << r.symmetry << "\n";
    std::cout << "  simulated in " << fmt("%.3f", r.wall_s) << " s (" << with_commas(r.events) << " events)";
    if (!r.trace_file.empty()) std::cout << "; trace: " << r.trace_file << " (open it in https://ui.perfetto.dev)";
    std::cout << "\n";
    return rc;
  }
  // Targets named alike (MSCCL files often are) go by the target as written.
  std::vector<std::string> labels(results.size());
  for (size_t i = 0; i < results.size() && i < plan.points.size(); ++i) {
    size_t t = plan.points[i].target;
    bool alike = std::count(plan.names.begin(), plan.names.end(), plan.names[t]) > 1;
    labels[i] = alike ? plan.targets[t].substr(plan.targets[t].rfind('/') + 1) : plan.names[t];
  }
  std::printf("%-28s %7s %12s %12s %11s %11s %12s %9s\n", "schedule", "N", plan.param.empty() ? "size" : plan.param.c_str(), "time",
              "algbw GB/s", "busbw GB/s", "messages", "wall s");
  for (size_t i = 0; i < results.size(); ++i) {
    const PointResult& r = results[i];
    if (r.unsupported && o.quiet) continue;
    std::string v = plan.param.empty()     ? (r.world ? human_bytes2(static_cast<double>(r.size_bytes)) : std::string("-"))
                    : plan.param == "size" ? human_bytes2(static_cast<double>(r.param_value))
                                           : std::to_string(r.param_value);
    if (r.status == 2 || (!r.error.empty() && r.platform.empty())) {
      std::printf("%-28s %7u %12s  %s\n", labels[i].c_str(), r.n, v.c_str(), r.error.c_str());
      continue;
    }
    bool bw = r.completed && r.world;
    std::printf("%-28s %7u %12s %12s %11s %11s %12s %9.3f%s\n", labels[i].c_str(), r.n, v.c_str(),
                r.completed ? human_time(r.time_s).c_str() : "deadlock", bw ? fmt("%.2f", r.algbw).c_str() : "-",
                bw ? fmt("%.2f", r.busbw).c_str() : "-", with_commas(r.messages).c_str(), r.wall_s,
                !r.error.empty() ? ("  " + r.error).c_str() : "");
  }
  if (!results.empty())
    std::cout << "platform: " << (o.platform.empty() ? std::string(sim::default_platform_spec()) + " (the default)" : o.platform)
              << "; engine: " << o.model << "; network model: " << (results[0].network_model.empty() ? "ideal" : results[0].network_model)
              << "\n";
  // What the check before the run found, once per target and line.
  std::set<std::pair<std::string, std::string>> checks;
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i].check_line.empty() && checks.insert({labels[i], results[i].check_line}).second)
      std::cout << labels[i] << ": " << results[i].check_line << "\n";
  // Each program's protocol and window, once; then, with several targets, the fastest at each point.
  std::set<std::string> said;
  for (size_t i = 0; i < results.size(); ++i) {
    const PointResult& r = results[i];
    if (said.count(labels[i]) || (r.wire.empty() && r.window_min < 0)) continue;
    said.insert(labels[i]);
    std::cout << labels[i] << ": " << (r.wire.empty() ? "" : r.wire + (r.window_min >= 0 ? "; " : ""))
              << (r.window_min >= 0 ? window_line(r) : "") << "\n";
  }
  if (plan.targets.size() > 1) print_ranking(results, labels, plan.param);
  for (const auto& r : results)
    if (!r.completed && r.error.empty()) std::cout << r.schedule << " N = " << r.n << " did not finish:\n" << r.text;
  std::set<std::string> shown;  // a bad --platform fails every point alike: its error once
  for (const auto& r : results) {
    if (r.unsupported && o.quiet) continue;
    if (shown.insert(r.diag).second) std::cerr << r.diag;
  }
  return rc;
}

}  // namespace sg::cli
