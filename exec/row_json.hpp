// A measured row of `stepgraph exec` as JSON (what `exec --json` prints for it): the one writer
// of exec's results, given what the row alone does not say (the job's size, where the buffers
// live, which comparisons ran).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "exec/exec_point.hpp"

namespace sg::exec {

struct RowContext {
  int size = 1;                  // ranks in the job
  std::string device;            // --device as given (cpu, cuda, auto)
  std::string transport;         // the transport used
  bool device_buffers = false;   // buffers on a device: say how its calls were ordered
  bool device_sync = false;      // --device-sync
  bool compared_native = false;  // --compare native ran MPI's own collective
  bool predicted = false;        // --predict asked the simulator
  std::string sweep_param;       // "" when nothing is swept
};

nlohmann::json row_json(const RowContext& x, const PointRow& r);

// The row's bus bandwidth factor (nccl-tests' convention for its postcondition, over its group's
// ranks, or the job's `size`), and its name in `name`: the JSON's busbw and the table's.
double row_bus_factor(const PointRow& r, int size, std::string& name);

}  // namespace sg::exec
