// Platforms named after the hardware people own (`dgx-h100:nodes=4`, docs/sim.md, "Presets"):
// each a `nodes` platform with the machine's own numbers (GPUs and NICs per node, NVLink and NIC
// bandwidth, the GPUs' dense BF16 rate) and what NCCL's model reads off it (the GPU generation,
// NCCL's own NVLink count and per-link bandwidth, the GPU–NIC PCIe path, the host CPU), every
// number from a datasheet or NCCL's source, cited in presets.cpp. Any key of `nodes` overrides
// it (`dgx-h100:nodes=2,nic=200Gbps,nics=4`).
#pragma once
#include <string>
#include <vector>

#include "core/graph/nccl_tuning.hpp"

namespace sg::sim::detail {

struct Preset {
  const char* name;               // "dgx-h100"
  std::vector<const char*> also;  // other names ("hgx-h100")
  const char* gpus;               // per node (an NVLink domain: 72 for an NVL72 rack)
  const char* nvlink;             // per GPU, per direction
  const char* nic;                // per NIC
  const char* speed;              // per GPU, dense BF16 tensor rate
  const char* transport;          // "ib" or "roce"
  NcclHardware hw;                // NCCL's view (its gpus_per_node is set from gpus)
  const char* source;             // where the numbers come from (docs/sim.md lists them)
};

const std::vector<Preset>& presets();
// The preset named `name` (lowercase), or null.
const Preset* find_preset(const std::string& name);

}  // namespace sg::sim::detail
