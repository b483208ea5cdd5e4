// `stepgraph exec`'s printouts (cli/exec_table.cpp), on rank 0, from the rows of every point.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "exec/exec_point.hpp"

namespace sg::cli {

struct ExecTable {
  const ExecOpts& o;
  int size = 1;         // ranks in the job
  bool device = false;  // buffers on a device (the header says which, and how)
  std::string transport, transport_why, device_note;
  std::string sweep_param;  // "" when nothing is swept
  std::string check_line;   // what the check before the run found (cli/precheck.hpp)
  nlohmann::json check = nullptr;
};

// Rank 0's printer: each row as soon as it is measured (and flushed, so a job killed mid-sweep
// keeps the rows before), the notes at the end.
class ExecPrinter {
 public:
  explicit ExecPrinter(const ExecTable& x);
  void row(const exec::PointRow& r);
  void end(uint64_t total_wrong);

 private:
  void json_row(const exec::PointRow& r);
  void text_header(const exec::PointRow& first);
  void text_row(const exec::PointRow& r);
  const ExecTable& x_;
  int rows_ = 0;
  bool shaped_ = false, lead_ = false;
  std::string words_;  // the attention rows' direction, mask and input type so far
  std::vector<exec::PointRow> seen_;
};

}  // namespace sg::cli
