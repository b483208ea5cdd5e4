// `stepgraph calibrate`: under mpiexec, ping-pong per pair class (same node, other node), an α-β
// fit, and a platform file for `sim --platform @FILE` and `exec --predict @FILE`.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/shared.hpp"

#ifdef STEPGRAPH_HAVE_MPI
#include <mpi.h>

#include "core/io/output_file.hpp"
#include "exec/mpi/calibrate.hpp"
#include "exec/mpi/mpi_world.hpp"
#endif

namespace sg::cli {

#ifndef STEPGRAPH_HAVE_MPI
int cmd_calibrate(const CalibrateOpts&) { return fail("this stepgraph was built without MPI: calibrate needs it"); }
#else
int cmd_calibrate(const CalibrateOpts& o) {
  std::vector<uint64_t> sizes;
  Diagnostics diags;
  if (!parse_geometric(o.sizes, true, sizes, diags)) return fail("bad --sizes '" + o.sizes + "': " + diags.messages());
  if (exec::LauncherCheck job = exec::check_launcher(-1); !job.ok) return exec::report_refusal(job);
  int me = 0, n = 1;
  if (exec::join_mpi_job(me, n, false) != 0) return 2;
  exec::Calibration c;
  bool ok = exec::calibrate(MPI_COMM_WORLD, sizes, o.iters, c, diags);
  int rc = 0;
  if (me == 0) {
    if (!ok) {
      rc = fail(diags.messages());
    } else {
      std::string spec = exec::calibration_platform(c);
      if (o.json) {
        nlohmann::json j = {{"nodes", c.nodes},
                            {"ranks_per_node", c.per_node},
                            {"platform", spec},
                            {"gamma_ns_per_byte", c.gamma_s_per_byte * 1e9},
                            {"classes", nlohmann::json::array()}};
        for (const auto& k : c.classes) {
          nlohmann::json pts = nlohmann::json::array();
          for (const auto& p : k.points) pts.push_back({{"bytes", p.bytes}, {"one_way_us", p.one_way_s * 1e6}});
          j["classes"].push_back({{"class", k.name},
                                  {"ranks", {k.a, k.b}},
                                  {"alpha_us", k.alpha_s * 1e6},
                                  {"bw_GBps", k.bw_Bps / 1e9},
                                  {"max_rel_err", k.max_rel_err},
                                  {"points", pts}});
        }
        std::cout << j.dump(2) << "\n";
      } else {
        std::printf("calibrate: %d node%s, up to %d ranks per node; one-way time = half the fastest of %d round trips\n", c.nodes,
                    c.nodes == 1 ? "" : "s", c.per_node, o.iters);
        std::printf("  reduction (float sum) on rank 0's core: %.4f ns per byte (%.2f GB/s)\n", c.gamma_s_per_byte * 1e9,
                    c.gamma_s_per_byte > 0 ? 1e-9 / c.gamma_s_per_byte : 0.0);
        for (const auto& k : c.classes) {
          std::printf("\n  %s (ranks %d and %d): alpha %.3f us, bandwidth %.3f GB/s (fit within %.0f%% at every size)\n", k.name.c_str(),
                      k.a, k.b, k.alpha_s * 1e6, k.bw_Bps / 1e9, k.max_rel_err * 100);
          std::printf("  %12s %12s %12s\n", "bytes", "measured us", "fit us");
          for (const auto& p : k.points)
            std::printf("  %12llu %12.3f %12.3f\n", static_cast<unsigned long long>(p.bytes), p.one_way_s * 1e6,
                        (k.alpha_s + static_cast<double>(p.bytes) / k.bw_Bps) * 1e6);
        }
      }
      OutputFile out;
      if (!out.open(o.output, diags)) {
        rc = fail(diags.messages());
      } else {
        std::ostream& f = out.stream();
        f << "# written by stepgraph calibrate: " << c.nodes << " node(s), " << c.per_node << " ranks per node\n";
        for (const auto& k : c.classes)
          f << "# " << k.name << ": alpha " << k.alpha_s * 1e6 << " us, bandwidth " << k.bw_Bps / 1e9 << " GB/s\n";
        // Not part of the platform: the reduction speed, read by `exec --predict @FILE` (sim --gamma).
        f << "# gamma=" << c.gamma_s_per_byte * 1e9 << "ns\n";
        f << spec << "\n";
        if (!out.close(diags)) rc = fail(diags.messages());
        else if (!o.json)
          std::printf("\nplatform %s\nwritten to %s: use it as `stepgraph sim … --platform @%s` or `exec … --predict @%s`\n", spec.c_str(),
                      o.output.c_str(), o.output.c_str(), o.output.c_str());
      }
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
#endif

}  // namespace sg::cli
