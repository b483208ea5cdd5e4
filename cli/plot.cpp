// `sim --plot out.svg`: time and bus bandwidth against the swept parameter (or N), one line per
// schedule, log axes, drawn by gnuplot (Debian's gnuplot-nox; run.sh installs it). The data and
// the script go to a temporary folder, kept when gnuplot fails so the user can see why.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <system_error>

#include "cli/sim_command.hpp"
#include "core/base/input_file.hpp"
#include "core/io/output_file.hpp"

namespace sg::cli {

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

}  // namespace

bool plot_points(const SimOpts& o, const PointPlan& plan, const std::vector<PointResult>& results, Diagnostics& diags) {
  namespace fs = std::filesystem;
  if (!have_gnuplot())
    return diags.fail("--plot needs gnuplot, which is not installed (apt-get install gnuplot-nox; `bash run.sh` installs it)");
  // x: the swept parameter, else N.
  bool by_param = !plan.param.empty();
  bool x_bytes = by_param && plan.param == "size";
  std::map<std::string, std::vector<const PointResult*>> lines;  // schedule -> its points, in order
  std::vector<std::string> order;
  for (const auto& r : results) {
    if (!r.completed || r.time_s <= 0) continue;
    if (!lines.count(r.schedule)) order.push_back(r.schedule);
    lines[r.schedule].push_back(&r);
  }
  if (lines.empty()) return diags.fail("--plot: no point finished, nothing to draw");
  fs::path dir = fs::temp_directory_path() / ("stepgraph_plot_" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return diags.fail("--plot: cannot create '" + dir.string() + "': " + ec.message());
  std::string script, time_plot, bw_plot;
  for (size_t k = 0; k < order.size(); ++k) {
    fs::path dat = dir / ("line" + std::to_string(k) + ".dat");
    std::ostringstream d;
    for (const PointResult* r : lines[order[k]]) {
      double x = by_param ? static_cast<double>(r->param_value) : r->n;
      d << x << " " << r->time_s << " " << (r->busbw > 0 ? r->busbw : 0) << "\n";
    }
    if (size_t from = diags.size(); !write_output_file(dat.string(), d.str(), diags)) {
      diags.locate_from(from, Loc{}, "--plot: ");
      return false;
    }
    std::string src = quote(dat.string());
    time_plot += (k ? ", " : "") + src + " using 1:2 with linespoints title " + quote(order[k]);
    bw_plot += (k ? ", " : "") + src + " using 1:3 with linespoints title " + quote(order[k]);
  }
  std::string ext = fs::path(o.plot).extension().string();
  // noenhanced: schedule names have underscores, which gnuplot's enhanced text would subscript.
  std::string term = ext == ".png" ? "pngcairo noenhanced size 1200,500" : "svg noenhanced size 1200,500 dynamic background rgb 'white'";
  const PointResult& first = *lines[order[0]].front();
  std::string xlabel = by_param ? (x_bytes ? "message size (bytes per rank)" : plan.param) : "ranks (N)";
  std::string platform = first.platform.substr(0, first.platform.find(" ("));  // without "(the default; …)"
  std::string sub = platform + ", " + first.model;
  script += "set terminal " + term + " font 'sans,11'\n";
  // gnuplot draws into the temporary folder and says nothing when it cannot write (exit 0 with
  // no file): the picture is copied to --plot here, where a failure is seen and said.
  fs::path drawn = dir / ("plot" + ext);
  script += "set output " + quote(drawn.string()) + "\n";
  script += "set multiplot layout 1,2 title " + quote("stepgraph sim: " + sub) + "\n";
  script += "set logscale xy\nset grid\nset key top left\nset xlabel " + quote(xlabel) + "\n";
  // Sizes and rank counts double: base-2 axes with binary prefixes (1 KiB, 1 MiB) read cleanly.
  if (x_bytes || !by_param) script += "set logscale x 2\n";
  if (x_bytes) script += "set format x '%.0b %BB'\n";
  script += "set format y '%.0s%cs'\nset ylabel 'simulated time'\n";
  script += "plot " + time_plot + "\n";
  script += "set format y '%g'\nset ylabel 'bus bandwidth (GB/s)'\nset key bottom right\n";
  script += "plot " + bw_plot + "\n";
  script += "unset multiplot\n";
  fs::path gp = dir / "plot.gp";
  if (size_t from = diags.size(); !write_output_file(gp.string(), script, diags)) {
    diags.locate_from(from, Loc{}, "--plot: ");
    return false;
  }
  std::string cmd = "gnuplot " + quote(gp.string()) + " 2>" + quote((dir / "gnuplot.err").string());
  InputFile picture;  // (why it could not be read: gnuplot's messages say more)
  if (std::system(cmd.c_str()) != 0 || !(picture = read_input_file(drawn.string())).ok || picture.text.empty())
    return diags.fail("gnuplot failed; its input and messages are in " + dir.string());
  if (size_t from = diags.size(); !write_output_file(o.plot, picture.text, diags)) {
    diags.locate_from(from, Loc{}, "--plot: ");
    return false;
  }
  fs::remove_all(dir, ec);
  return true;
}

}  // namespace sg::cli
