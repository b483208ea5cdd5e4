// A measured nccl-tests table predicted by the simulator (see nccl_tests_predict.hpp).
#include "cli/nccl_tests_predict.hpp"

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/sim_command.hpp"
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

}  // namespace

int load_nccl_table(Session& ses, const std::string& path, const std::string& ranks, const std::string& collective, LoadedTable& out) {
  out.path = path;
  Diagnostics unread;
  out.file = ses.sources.load(path, unread);
  if (!out.file) return fail("--nccl-tests: " + unread.messages());
  if (!read_nccl_tests(ses.sources, out.file, out.table, ses.diags)) {
    std::cerr << ses.diags.render(ses.sources);
    return 2;
  }
  if (!collective.empty()) {
    if (!out.table.collective.empty() && out.table.collective != collective)
      return fail("--nccl-collective " + collective + ", but " + path + " says " + out.table.collective);
    out.table.collective = collective;
  }
  if (!ranks.empty()) {
    std::vector<uint32_t> ns;
    if (Diagnostics diags; !parse_rank_list(ranks, ns, diags) || ns.size() != 1)
      return fail("--nccl-tests takes one -n (the table's rank count), got '" + ranks + "'");
    out.n = ns[0];
  } else {
    out.n = out.table.ranks;
    if (out.n == 0) return fail("--nccl-tests: " + path + " lists no ranks (no \"# Rank …\" lines): give -n");
  }
  return 0;
}

int predict_nccl_table(Session& ses, const SimOpts& o, const LoadedTable& t, std::vector<sim::PointResult>& results,
                       std::vector<char>& host_bound) {
  std::string target;
  std::filesystem::path tmp;
  if (!o.targets.empty()) {
    target = o.targets[0];
  } else {
    const TestColl* coll = nullptr;
    for (const TestColl& c : kColls)
      if (t.table.collective == c.nccl) coll = &c;
    if (!coll) {
      Loc at = t.table.collective_loc.valid() ? t.table.collective_loc : Loc{t.file, 1, 1};
      ses.diags.error(at, t.table.collective.empty()
                              ? "no \"# Collective test starting: …\" line says which collective this is: give --nccl-collective "
                                "(or a TARGET to compare)"
                              : "nccl-tests' " + t.table.collective +
                                    " has no collective step to simulate (all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                    "alltoall): give a TARGET to compare");
      std::cerr << ses.diags.render(ses.sources);
      return 2;
    }
    tmp = std::filesystem::temp_directory_path() / ("stepgraph_nccl_tests_" + std::to_string(getpid()) + ".sched");
    if (Diagnostics diags; !write_output_file(tmp.string(), schedule_text(*coll), diags)) return fail(diags.messages());
    target = tmp.string();
  }
  // The platform, once, with a located error (every row would fail on it), and its host's time
  // to issue a call (NcclCalibration::host_s; 0 off GPU nodes, where no NCCL runs).
  const std::string spec = o.platform.empty() ? std::string(sim::default_platform_spec()) : o.platform;
  sim::Platform platform;
  if (size_t from = ses.diags.all().size(); !sim::parse_platform(spec, t.n, platform, ses.sources, ses.diags)) {
    if (!tmp.empty()) std::filesystem::remove(tmp);
    sim::PlatformError e = sim::platform_error(ses, from);
    if (e.located.empty()) return fail("bad --platform '" + spec + "': " + e.message);
    std::cerr << e.located;
    return 2;
  }
  const double host = platform.kind == sim::PlatformKind::Nodes ? platform.nodes.nccl.host_s : 0.0;
  // One point per row, at the row's size, on the platform, through the sim's own pipeline.
  SimOpts so = o;
  so.targets = {target};
  so.ranks = std::to_string(t.n);
  so.nccl_tests.clear();
  std::string sizes;
  for (const NcclTestsRow& r : t.table.rows) {  // appended: "," + std::to_string draws GCC 12's false -Wrestrict
    if (!sizes.empty()) sizes += ',';
    sizes += std::to_string(r.size);
  }
  so.sweep = "size=" + sizes;
  so.quiet = true;
  PointPlan plan;
  int rc = plan_sim(so, plan);
  if (rc == 0) {
    results.assign(plan.points.size(), sim::PointResult{});
    for (size_t i = 0; i < plan.points.size(); ++i) results[i] = run_point(so, plan, i);
    // nccl-tests issues its calls back to back and times the run: a call the GPU finishes before
    // the host has issued the next one takes the host's time (NcclCalibration::host_s).
    host_bound.assign(results.size(), 0);
    for (size_t i = 0; i < results.size(); ++i) {
      sim::PointResult& p = results[i];
      if (!p.completed || !p.error.empty() || p.time_s >= host) continue;
      if (p.time_s > 0) p.busbw *= p.time_s / host, p.algbw *= p.time_s / host;
      p.time_s = host;
      host_bound[i] = 1;
    }
  }
  if (!tmp.empty()) std::filesystem::remove(tmp);
  return rc;
}

int measured_half(const NcclTestsRow& r) {
  for (int h = 0; h < 2; ++h)
    if (r.has[h] && r.time_us[h] > 0) return h;
  return -1;
}

ErrorSummary summarise_errors(const std::vector<double>& ratios) {
  ErrorSummary a;
  a.rows = ratios.size();
  if (ratios.empty()) return a;
  double l = 0, m = 0;
  for (double r : ratios) l += std::log(r), m += std::fabs(r - 1);
  a.any = true;
  a.geomean = std::exp(l / static_cast<double>(ratios.size())) - 1;
  a.mean_abs = m / static_cast<double>(ratios.size());
  return a;
}

}  // namespace sg::cli
