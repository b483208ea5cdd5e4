// nccl-tests' output, read (see nccl_tests.hpp). The columns are whitespace-separated; a data row
// is any line that does not start with '#' and is not blank. Its first five fields are size,
// count, type, redop and root; then 4 per half (time, algbw, busbw, #wrong), or "N/A" in the
// place of #wrong (-c 0), or a half missing altogether (some logs cut the in-place columns).
#include "core/io/nccl_tests.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

namespace sg {

namespace {

struct Field {
  std::string text;
  uint32_t col = 0;  // 1-based
};

std::vector<Field> fields(std::string_view line) {
  std::vector<Field> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) break;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    out.push_back({std::string(line.substr(i, j - i)), static_cast<uint32_t>(i + 1)});
    i = j;
  }
  return out;
}

bool to_u64(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 19) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

bool to_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v) && v >= 0;
}

}  // namespace

bool read_nccl_tests(const SourceManager& sm, uint32_t file, NcclTestsFile& out, Diagnostics& diags) {
  const SourceFile& f = sm.file(file);
  std::set<std::string> hosts;
  bool ok = true;
  for (uint32_t ln = 1; ln <= f.line_count(); ++ln) {
    std::string_view line = f.line(ln);
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    if (line[first] == '#') {
      std::vector<Field> h = fields(line.substr(first + 1));
      // "# nccl-tests version 2.19.6 nccl-headers=… nccl-library=…"
      if (h.size() >= 3 && h[0].text == "nccl-tests" && h[1].text == "version") out.version = h[2].text;
      // "# Collective test starting: all_reduce_perf"
      if (h.size() >= 4 && h[0].text == "Collective" && h[1].text == "test" && h[2].text == "starting:") {
        out.collective = h[3].text;
        if (out.collective.size() > 5 && out.collective.compare(out.collective.size() - 5, 5, "_perf") == 0)
          out.collective.resize(out.collective.size() - 5);
        out.collective_loc = Loc{file, ln, static_cast<uint32_t>(first + 1 + h[3].col)};
      }
      // "#  Rank  0 Group  0 Pid 1234 on HOST device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
      if (h.size() >= 9 && h[0].text == "Rank" && h[6].text == "on") {
        ++out.ranks;
        hosts.insert(h[7].text);
        if (out.device.empty()) {
          size_t bus = line.find(']');
          if (bus != std::string_view::npos) {
            std::string_view name = line.substr(bus + 1);
            size_t a = name.find_first_not_of(' ');
            if (a != std::string_view::npos) out.device = std::string(name.substr(a));
          }
        }
      }
      continue;
    }
    std::vector<Field> c = fields(line);
    // NCCL's own lines in the same output ("NCCL version 2.26.6+cuda12.8", "… NCCL INFO …"): not
    // rows, skipped (the version is kept).
    if (c[0].text == "NCCL" || line.find(" NCCL INFO ") != std::string_view::npos || line.find(" NCCL WARN ") != std::string_view::npos) {
      if (c.size() >= 3 && c[0].text == "NCCL" && c[1].text == "version") out.nccl_version = c[2].text;
      continue;
    }
    auto bad = [&](const Field& at, const std::string& msg) {
      diags.error(Loc{file, ln, at.col}, msg, static_cast<uint32_t>(std::max<size_t>(1, at.text.size())));
      ok = false;
    };
    if (c.size() < 9) {
      bad(c.back(), "not an nccl-tests row: " + std::to_string(c.size()) +
                        " columns, want size count type redop root, then time algbw busbw #wrong for the out-of-place run "
                        "(and again for the in-place one)");
      continue;
    }
    NcclTestsRow r;
    r.loc = Loc{file, ln, c[0].col};
    if (!to_u64(c[0].text, r.size)) {
      bad(c[0], "the size in bytes is not a number: '" + c[0].text + "'");
      continue;
    }
    if (!to_u64(c[1].text, r.count)) {
      bad(c[1], "the element count is not a number: '" + c[1].text + "'");
      continue;
    }
    r.type = c[2].text;
    r.redop = c[3].text;
    char* end = nullptr;
    r.root = std::strtoll(c[4].text.c_str(), &end, 10);
    if (end != c[4].text.c_str() + c[4].text.size()) {
      bad(c[4], "the root is not a number: '" + c[4].text + "'");
      continue;
    }
    // Halves of 4 fields (the last one "N/A" with -c 0).
    bool row_ok = true;
    for (int h = 0; h < 2 && row_ok; ++h) {
      size_t base = 5 + 4 * static_cast<size_t>(h);
      if (c.size() < base + 3) break;
      double v[3];
      for (int k = 0; k < 3 && row_ok; ++k) {
        const Field& fld = c[base + static_cast<size_t>(k)];
        if (!to_double(fld.text, v[k])) {
          bad(fld, std::string("the ") +
                       (k == 0   ? "time (us)"
                        : k == 1 ? "algbw (GB/s)"
                                 : "busbw (GB/s)") +
                       " of the " + (h == 0 ? "out-of-place" : "in-place") + " run is not a number: '" + fld.text + "'");
          row_ok = false;
        }
      }
      if (!row_ok) break;
      r.has[h] = true;
      r.time_us[h] = v[0];
      r.algbw[h] = v[1];
      r.busbw[h] = v[2];
    }
    if (!row_ok) continue;
    // nccl-tests prints a row of size 0 where the size divided by the ranks rounds to no element
    // (an all-to-all's smallest sizes): nothing moved, nothing to predict.
    if (r.size == 0) continue;
    if (r.time_us[0] <= 0) {
      bad(c[5], "a time of " + c[5].text + " us: nothing to compare a prediction with");
      continue;
    }
    out.rows.push_back(r);
  }
  out.hosts = static_cast<uint32_t>(hosts.size());
  if (ok && out.rows.empty()) {
    diags.error(Loc{file, 1, 1}, "no nccl-tests rows in " + f.name() + " (lines of size count type redop root time algbw busbw …)");
    ok = false;
  }
  return ok;
}

}  // namespace sg
