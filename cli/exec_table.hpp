// `stepgraph exec`'s printouts (cli/exec_table.cpp), on rank 0, from the rows of every point.
#pragma once
#include <cstdint>
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
};

void print_exec_json(const ExecTable& x, const std::vector<exec::PointRow>& rows);
void print_exec_text(const ExecTable& x, const std::vector<exec::PointRow>& rows, uint64_t total_wrong);

}  // namespace sg::cli
