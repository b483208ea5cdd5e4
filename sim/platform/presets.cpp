// The presets' numbers (see presets.hpp). Datasheets give bandwidths both ways; a platform's
// links are per direction, so NVLink's "900 GB/s" is 450 GB/s here. NCCL's model does not read
// the datasheet's NVLink figure but its own per-link constant times the links (topo.h:17-35,
// NCCL v2.30.7): A100 12 × 20, H100/H200 18 × 20.6, B200 18 × 40.1 GB/s; and the GPU–NIC path
// as PCIe width × speed / 80 (topo.cc:545-557): Gen4 x16 24 GB/s, Gen5 x16 48 GB/s. The host CPU
// matters to NCCL's model (AMD: a 2 µs network overhead and another LL cap across nodes).
#include "sim/platform/presets.hpp"

#include <algorithm>

namespace sg::sim::detail {

namespace {

NcclHardware hardware(int arch, double nvlink_per_gpu, double nic_GBps, double pcie_GBps, bool amd, const char* gpu) {
  NcclHardware h;
  h.arch = arch;
  h.nvlink_per_gpu = nvlink_per_gpu;
  h.nic_GBps = nic_GBps;
  h.pcie_GBps = pcie_GBps;
  h.amd_cpu = amd;
  h.name = gpu;
  return h;
}

}  // namespace

const std::vector<Preset>& presets() {
  // clang-format off
  static const std::vector<Preset> table = {
      // NVIDIA DGX A100 User Guide and datasheet: 8 A100 SXM4, 6 NVSwitch (NVLink 3: 12 links,
      // 600 GB/s both ways per GPU), 8 single-port ConnectX-6 HDR 200 Gb/s for compute, PCIe
      // Gen4, 2 AMD EPYC 7742. A100 dense BF16: 312 TFLOPS (A100 datasheet).
      {"dgx-a100", {"hgx-a100"}, "8", "300GBps", "200Gbps", "312Tf", "ib",
       hardware(1, 12 * 20.0, 25.0, 24.0, true, "A100"),
       "DGX A100 datasheet; A100 datasheet; NCCL topo.h SM80_NVLINK_BW 20"},
      // NVIDIA DGX H100 datasheet and User Guide: 8 H100 SXM5, 4 NVSwitch (NVLink 4: 18 links,
      // 900 GB/s both ways), 8 ConnectX-7 400 Gb/s NDR behind PCIe Gen5, 2 Intel Xeon Platinum
      // 8480C. H100 SXM dense BF16: 989 TFLOPS (H100 datasheet: 1,979 with sparsity).
      {"dgx-h100", {"hgx-h100"}, "8", "450GBps", "400Gbps", "989Tf", "ib",
       hardware(2, 18 * 20.6, 50.0, 48.0, false, "H100"),
       "DGX H100 datasheet; H100 datasheet; NCCL topo.h SM90_NVLINK_BW 20.6"},
      // NVIDIA DGX H200 datasheet: the DGX H100 board with H200 SXM (141 GB HBM3e); the same
      // NVLink, NICs and CPUs, the same dense BF16 rate (H200 datasheet). NCCL's model does not
      // see memory: an H200 node is an H100 node to it.
      {"dgx-h200", {"hgx-h200"}, "8", "450GBps", "400Gbps", "989Tf", "ib",
       hardware(2, 18 * 20.6, 50.0, 48.0, false, "H200"),
       "DGX H200 datasheet; H200 datasheet; NCCL topo.h SM90_NVLINK_BW 20.6"},
      // NVIDIA DGX B200 datasheet: 8 B200 (NVLink 5: 18 links, 1.8 TB/s both ways), 8 single-port
      // ConnectX-7 400 Gb/s, PCIe Gen5, 2 Intel Xeon Platinum 8570. B200 dense BF16: 2.25 PFLOPS
      // (HGX B200: 36 PFLOPS FP16/BF16 for 8 GPUs with sparsity).
      {"dgx-b200", {"hgx-b200"}, "8", "900GBps", "400Gbps", "2250Tf", "ib",
       hardware(3, 18 * 40.1, 50.0, 48.0, false, "B200"),
       "DGX B200 datasheet; HGX B200 specifications; NCCL topo.h SM100_NVLINK_BW 40.1"},
      // NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain (NVLink 5, 1.8 TB/s both ways
      // per GPU; 130 TB/s for the rack), 36 Grace CPUs (Arm), one ConnectX-7 400 Gb/s per GPU for
      // the compute fabric; 360 PFLOPS FP16/BF16 with sparsity for the rack, 2.5 PFLOPS dense per
      // GPU. A node of this platform is a rack: NCCL fuses a multi-node NVLink clique into one
      // topology (topo.cc:1887-1935), so inside it the GPUs are one "node" to the model.
      {"gb200-nvl72", {"nvl72"}, "72", "900GBps", "400Gbps", "2500Tf", "ib",
       hardware(3, 18 * 40.1, 50.0, 48.0, false, "GB200"),
       "GB200 NVL72 product page; NCCL topo.h SM100_NVLINK_BW 40.1, topo.cc MNNVL"},
  };
  // clang-format on
  return table;
}

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : presets()) {
    if (name == p.name) return &p;
    if (std::find_if(p.also.begin(), p.also.end(), [&](const char* a) { return name == a; }) != p.also.end()) return &p;
  }
  return nullptr;
}

}  // namespace sg::sim::detail
