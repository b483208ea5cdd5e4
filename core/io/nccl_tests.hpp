// nccl-tests' output as the tool prints it (NVIDIA/nccl-tests src/util.cu and common.cu, v2.19.6):
// header lines that start with '#' (the version, "Collective test starting: all_reduce_perf",
// one "Rank R … on HOST device D [BUS] NAME" line per rank), then one row per size: size count
// type redop root, and time algbw busbw #wrong for the out-of-place and the in-place run (a half
// may read N/A, or be absent); NCCL's own lines in the same output are skipped. Read into numbers so that `sim --nccl-tests` can put the simulated
// time beside the measured one; a malformed file is refused with the line and column at fault.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/dsl/source.hpp"

namespace sg {

struct NcclTestsRow {
  uint64_t size = 0;   // bytes, as nccl-tests prints them: the whole buffer for all-gather and reduce-scatter
  uint64_t count = 0;  // elements per rank
  std::string type, redop;
  int64_t root = -1;
  // [0] out of place, [1] in place; `has` false where the half is N/A or missing.
  bool has[2] = {false, false};
  double time_us[2] = {0, 0}, algbw[2] = {0, 0}, busbw[2] = {0, 0};
  Loc loc;  // the row
};

struct NcclTestsFile {
  std::string collective;  // all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, … ("" when no header says)
  Loc collective_loc;
  std::string version;       // nccl-tests' "2.19.6", or ""
  std::string nccl_version;  // NCCL's own "NCCL version 2.26.6+cuda12.8" line, or ""
  uint32_t ranks = 0;        // "Rank" lines (0 when the header lists none)
  uint32_t hosts = 0;        // distinct hosts among them
  std::string device;        // the first rank's device name ("NVIDIA H100 80GB HBM3")
  std::vector<NcclTestsRow> rows;
};

// Reads file `file` of `sm`. False, with located errors in `diags`, for a row that is not one
// (a number that is not one, too few columns) or a file with no rows at all.
bool read_nccl_tests(const SourceManager& sm, uint32_t file, NcclTestsFile& out, Diagnostics& diags);

}  // namespace sg
