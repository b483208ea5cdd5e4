// The tour's second half (`stepgraph demo`, steps 12 on): the same graphs run for real under
// mpiexec, each step a child process of this one (mpiexec starts its own ranks).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/shared.hpp"
#include "core/io/output_file.hpp"

#ifdef STEPGRAPH_HAVE_MPI
#include "exec/mpi/mpi_world.hpp"
#endif

namespace sg::cli {

int demo_python(int rc, const std::string& mpi, const std::string& tmp);

int demo_exec(int rc) {
  namespace fs = std::filesystem;
  std::string tmp = fs::temp_directory_path().string();
  // Execution: real processes under mpiexec, the same graphs on real buffers.
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) {
    std::cout << "\n12. exec: skipped (mpiexec is not installed)\n";
    return rc;
  }
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string mpi = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout 120 mpiexec ";
  auto run = [&](const std::string& cmd) {
    std::cout.flush();
    int st = std::system(cmd.c_str());
    if (st != 0) std::cout << "   (exit status " << st << ")\n";
  };
  std::cout << "\n12. execute for real: `mpiexec -n 4 stepgraph exec ring_allreduce --sweep size=1KiB..1MiB --check\n"
               "    --compare native` (4 processes, real buffers, every element checked against the postcondition,\n"
               "    timed next to MPI_Allreduce; speed = MPI's time / ours)\n\n";
  run(mpi + "-n 4 '" + self + "' exec ring_allreduce --sweep size=1KiB..1MiB --check --compare native --iters 10 --warmup 2");
  std::cout << "\n13. the training step for real: `mpiexec -n 4 stepgraph exec dp_bucketed_step --check`, its gradient\n"
               "    all-reduces running while the backward pass computes (real flops)\n\n";
  run(mpi + "-n 4 '" + self + "' exec dp_bucketed_step --set size=4MiB --set flops=50M --check --iters 3 --warmup 1");
  std::cout << "\n    Megatron-LM's tensor-parallel forward on an mp = 2 x dp = 2 grid: per layer a GEMM, then an all-reduce in\n"
               "    each mp group; `--compare native` runs MPI_Allreduce on the same groups (one call per group) and the bus\n"
               "    factor uses the group's size\n\n";
  run(mpi + "-n 4 '" + self +
      "' exec tp_allreduce_forward --set mp=2 --set layers=2 --set size=1MiB --set flops=20M --check --compare native --iters 3 "
      "--warmup 1");
  std::cout << "\n14. ring attention for real: `mpiexec -n 4 stepgraph exec zigzag_ring_attention_bwd --sweep seq=512,1024\n"
               "    --set heads=4 --set dim=64 --check`: real backward tiles on bf16 q, k, v, every gradient compared with\n"
               "    full attention computed on one rank from the same inputs; TFLOP/s in FlashAttention's count\n\n";
  run(mpi + "-n 4 '" + self +
      "' exec zigzag_ring_attention_bwd --sweep seq=512,1024 --set heads=4 --set dim=64 --check --iters 3 --warmup 1");
  std::string declared = tmp + "/stepgraph_demo_declared_attention.sched";
  if (Diagnostics diags;
      !write_output_file(declared,
                         "# Ring attention written by hand in Megatron's sequence-major layouts (kv fused as [s, h, 2*d], O\n"
                         "# without its lse): the shapes, layouts and input type come from the declarations.\n"
                         "schedule ring(seq = 512, heads = 2, dim = 32) {\n  let blk = seq / N;\n"
                         "  buffer Q[N] shape [blk, heads, dim] layout shd dtype bf16;\n"
                         "  buffer KV[N] shape [blk, heads, 2 * dim] layout sh2d dtype bf16;\n"
                         "  buffer O[N] shape [blk, heads, dim] layout shd dtype f32;\n"
                         "  buffer cur[2] shape [blk, heads, 2 * dim] layout sh2d dtype bf16;\n"
                         "  init Q owned;\n  init KV owned;\n  expect attention(Q, KV, O, causal);\n"
                         "  for r in 0 .. N { copy KV[r] into cur[0] at r; }\n  for s in 0 .. N {\n    for r in 0 .. N {\n"
                         "      let j = (r - s) % N;\n      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }\n"
                         "      if j < r { compute attn(Q[r], cur[s % 2]) into O[r] mask full at r; }\n"
                         "      if j == r { compute attn(Q[r], cur[s % 2]) into O[r] mask causal at r; }\n    }\n  }\n}\n",
                         diags))
    return std::max(rc, fail(diags.messages()));
  std::cout << "\n    A ring attention written by hand in Megatron's layouts: `buffer Q[N] shape [blk, heads, dim] layout shd\n"
               "    dtype bf16`, kv fused as `shape [blk, heads, 2 * dim] layout sh2d`, O without its lse (exec keeps it)\n\n";
  run(mpi + "-n 4 '" + self + "' exec " + declared + " --check --iters 1 --warmup 0 | grep -v '^#  '");
  std::string apart = tmp + "/stepgraph_demo_kv_apart.sched";
  if (Diagnostics diags;
      !write_output_file(apart,
                         "# flash-attn's layout (bshd) with K and V as two buffers, rotated in two double buffers.\n"
                         "schedule ring_kv(seq = 512, heads = 2, dim = 32, batch = 2) {\n  let blk = seq / N;\n"
                         "  buffer Q[N] shape [batch, blk, heads, dim] layout bshd dtype bf16;\n"
                         "  buffer K[N] shape [batch, blk, heads, dim] layout bshd dtype bf16;\n"
                         "  buffer V[N] shape [batch, blk, heads, dim] layout bshd dtype bf16;\n"
                         "  buffer O[N] shape [batch, blk, heads, dim] layout bshd dtype f32;\n"
                         "  buffer ck[2] shape [batch, blk, heads, dim] layout bshd dtype bf16;\n"
                         "  buffer cv[2] shape [batch, blk, heads, dim] layout bshd dtype bf16;\n"
                         "  init Q owned;\n  init K owned;\n  init V owned;\n  expect attention(Q, K, V, O, causal);\n"
                         "  for r in 0 .. N { copy K[r] into ck[0] at r; copy V[r] into cv[0] at r; }\n"
                         "  for s in 0 .. N {\n    for r in 0 .. N {\n      let j = (r - s) % N;\n"
                         "      if s < N - 1 {\n        send ck[s % 2] from r to (r + 1) % N into ck[(s + 1) % 2];\n"
                         "        send cv[s % 2] from r to (r + 1) % N into cv[(s + 1) % 2];\n      }\n"
                         "      if j < r { compute attn(Q[r], ck[s % 2], cv[s % 2]) into O[r] mask full at r; }\n"
                         "      if j == r { compute attn(Q[r], ck[s % 2], cv[s % 2]) into O[r] mask causal at r; }\n    }\n  }\n}\n",
                         diags))
    return std::max(rc, fail(diags.messages()));
  std::cout << "\n    flash-attn's layout with K and V as two buffers: `compute attn(Q[r], ck[s % 2], cv[s % 2])`, batch 2\n\n";
  run(mpi + "-n 4 '" + self + "' exec " + apart + " --check --iters 1 --warmup 0 | grep -v '^#  '");
  std::string stall = tmp + "/stepgraph_demo_stall.sched";
  if (Diagnostics diags; !write_output_file(stall,
                                            "# Both ranks receive first: a deadlock.\n"
                                            "schedule recv_first() {\n"
                                            "  buffer a[2] bytes 8;\n"
                                            "  init a owned;\n"
                                            "  expect allgather(a);\n"
                                            "  on r in 0 .. 2 {\n"
                                            "    recv a[1 - r] from 1 - r;\n"
                                            "    send a[r] to 1 - r;\n"
                                            "  }\n"
                                            "}\n",
                                            diags))
    return std::max(rc, fail(diags.messages()));
  std::cout << "\n15. a hang becomes a report: a program whose ranks both receive first. exec checks first and refuses it\n"
               "    (verify finds the deadlock); run anyway with `--allow-defects --timeout 1`, each rank names the step\n"
               "    it waits on, its peer and the source line, and the job ends with exit 3\n\n";
  run("( " + mpi + "-n 2 '" + self + "' exec " + stall +
      "; echo \"   exit code $?\" ) 2>&1 | grep -e 'refused' -e '^   exit code' | cut -c1-160");
  // Open MPI's own abort banner is left out; the exit code is printed.
  run("( " + mpi + "-n 2 '" + self + "' exec " + stall +
      " --allow-defects --timeout 1; echo \"   exit code $?\" ) 2>&1 | grep -v -e '^---' -e '^$' -e 'warning: defect' "
      "-e 'MPI_ABORT' -e 'NOTE:' -e 'You may' -e 'exactly when' -e 'with errorcode' -e 'help message' -e 'orte_base_help'");
  std::string calib = tmp + "/stepgraph_demo.platform";
  std::cout << "\n16. calibrate, then predict: `mpiexec -n 2 stepgraph calibrate` fits latency and bandwidth from a\n"
               "    ping-pong and writes a platform file; `exec --predict @FILE` puts the simulator's time next to the\n"
               "    measured one\n\n";
  run(mpi + "-n 2 '" + self + "' calibrate --sizes 1KiB..4MiB --iters 5 -o " + calib + " | grep -v -e '^ *[0-9]' -e 'bytes  measured'");
  run(mpi + "-n 2 '" + self + "' exec ring_allreduce --sweep size=64KiB,1MiB,4MiB --predict @" + calib + " --iters 5 --warmup 1");

  std::cout << "\n17. what a launcher gave this process: `mpiexec -n 2 stepgraph env --export` (rank, world size, local rank,\n"
               "    PyTorch's master address: `eval` it in a job script before torch.distributed.init_process_group)\n\n";
  run(mpi + "-n 2 '" + self + "' env --export 2>/dev/null | sort");
  // The other MPI's launcher, where Debian has both: env reads it; exec refuses, never two one-rank runs.
  std::cout << "\n    Started by another MPI's launcher (an Open MPI build under MPICH's Hydra, or the reverse), `env` still\n"
               "    reads each rank's variables (it needs no MPI); exec, calibrate and sim would run each process alone, so\n"
               "    they refuse: rank 0 names both MPIs, every other rank says why in one line:\n\n";
#ifdef STEPGRAPH_HAVE_MPI
  std::string other = exec::linked_mpi() == "openmpi" ? "/usr/bin/mpiexec.mpich" : "/usr/bin/mpiexec.openmpi";
  if (!fs::exists(other)) other.clear();
#else
  std::string other;
#endif
  if (other.empty()) std::cout << "    (skipped: no other MPI's launcher on this machine)\n";
  else {
    run("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 " + other + " -n 2 '" + self +
        "' env 2>&1 | grep -e '^launcher' -e '^rank' | sort | uniq");
    run("( OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 " + other + " -n 2 '" + self +
        "' exec ring_allreduce --set size=1KiB --check; echo \"   exit code $?\" ) 2>&1 | grep -e 'error' -e 'exit code' | cut -c1-200");
  }

  std::cout << "\n18. the GPU path: `exec --device cuda` keeps the buffers on each rank's GPU (copies, reductions and attention\n"
               "    tiles in CUDA kernels; MPI staged through host memory or CUDA-aware); where there is no GPU it says why.\n"
               "    Device calls go on two streams, local work beside the copies around MPI, ordered by events; MPI touches\n"
               "    memory only after the events it needs (`--device-sync` makes every call wait instead).\n"
               "    `--device host-staged` runs that same path with host memory as the device, checked: it defers both\n"
               "    streams and runs them in a random interleaving, so a missing wait would show as wrong elements\n\n";
  run("( " + mpi + "-n 2 '" + self +
      "' exec ring_allreduce --set size=64KiB --device cuda --check --iters 2; echo \"   exit code $?\" ) 2>&1 "
      "| grep -e 'stepgraph: error' -e '^   exit code' -e '# device'");
  run(mpi + "-n 4 '" + self + "' exec ring_allreduce --set size=1MiB --device host-staged --check --iters 5 --warmup 1");
  std::cout << "\n    `--transport ipc`: ranks of one node map each other's device buffers once (CUDA IPC on a GPU, shared memory\n"
               "    on the stand-in); a message is a descriptor, and the receiver copies device to device from the sender's\n"
               "    buffer, never through the host\n\n";
  run(mpi + "-n 4 '" + self + "' exec ring_allreduce --set size=1MiB --device host-staged --transport ipc --check --iters 5 --warmup 1");
  std::cout << "\n    `--transport nccl`: NCCL has no buffered send and matches transfers by issue order, so every rank issues\n"
               "    them in one global order of groups computed from the whole schedule (a transfer stream beside a compute\n"
               "    stream, events between them). MPI stands in for NCCL here; a program whose blocking sends all go first\n"
               "    is refused at its line, since only buffering saves it\n\n";
  run(mpi + "-n 4 '" + self +
      "' exec zigzag_ring_attention --set seq=1024 --set heads=4 --set dim=32 --device host-staged --transport nccl "
      "--check --iters 1 --warmup 0 | grep -v '^#  '");
  std::string unsafe = tmp + "/stepgraph_demo_unsafe.sched";
  if (Diagnostics diags; !write_output_file(
          unsafe,
          "schedule unsafe_ring(size = 48KiB) {\n  buffer data[N] bytes size / N;\n  init data owned;\n  expect allgather(data);\n"
          "  on r in 0 .. N {\n    for s in 0 .. N - 1 {\n      send data[(r - s) % N] to (r + 1) % N;\n"
          "      recv data[(r - s - 1) % N] from (r - 1) % N;\n    }\n  }\n}\n",
          diags))
    return std::max(rc, fail(diags.messages()));
  run("( " + mpi + "-n 3 '" + self + "' exec " + unsafe +
      " --device host-staged --transport nccl --iters 1; echo \"   exit code $?\" ) 2>&1 "
      "| grep -v -e '^---' -e '^$' -e 'Primary job' -e 'non-zero exit' -e 'mpiexec detected' -e 'the job to be' -e 'Process name' "
      "-e 'Exit code:'");
  return demo_python(rc, mpi, tmp);
}

// Step 19: the same library from Python, and a schedule run on torch tensors (python/).
int demo_python(int rc, const std::string& mpi, const std::string& tmp) {
  namespace fs = std::filesystem;
  fs::path pkg = fs::read_symlink("/proc/self/exe").parent_path() / "python";
  if (!fs::exists(pkg / "stepgraph" / "__init__.py")) {
    std::cout << "\n19. Python: skipped (built without Debian's pybind11-dev: no " << pkg.string() << ")\n";
    return rc;
  }
  std::string script = tmp + "/stepgraph_demo_torch.py";
  if (Diagnostics diags; !write_output_file(
          script,
          "import sys\n"
          "import stepgraph\n"
          "try:\n    import torch, torch.distributed as dist, stepgraph.torch as sgt\n"
          "except ImportError:\n    print('    (no torch for this Python: apt-get install python3-torch)'); sys.exit(0)\n"
          "sgt.init_process_group()\n"
          "r, n = dist.get_rank(), dist.get_world_size()\n"
          "v = stepgraph.verify('ring_allreduce', n=n)\n"
          "g = stepgraph.compile('ring_allreduce', n=n, set={'size': '1MiB'})\n"
          "x = torch.randint(-9, 9, (250000,)).float(); ref = x.clone(); dist.all_reduce(ref)\n"
          "st = sgt.allreduce('ring_allreduce', x)\n"
          "S, D = 256, 32; torch.manual_seed(0); q, k, v_ = (torch.randn(1, 4, S, D) for _ in range(3))\n"
          "idx = torch.cat([torch.arange(a, b) for a, b in sgt.layout('zigzag_ring_attention', seq=S)[r]])\n"
          "out = sgt.attention('zigzag_ring_attention', q[:, :, idx], k[:, :, idx], v_[:, :, idx], causal=True)\n"
          "s = (q @ k.transpose(-1, -2) / D ** 0.5).masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float('-inf'))\n"
          "err = (out - (torch.softmax(s, -1) @ v_)[:, :, idx]).abs().max().item()\n"
          "if r == 0:\n"
          "    print('    stepgraph.verify: ' + v['verdicts'][0]['verdict'] + ', ' + str(v['steps']) + ' steps (the dict `verify --json` "
          "prints)')\n"
          "    s0 = g.steps_of(0)[0]\n"
          "    print(f'    stepgraph.compile: {g}; rank 0 first: {s0.kind} {s0.bytes} B to rank {s0.peer} at {s0.file}:{s0.line}')\n"
          "    print(f'    sgt.allreduce: equal to dist.all_reduce: {torch.equal(x, ref)}; {st.check}')\n"
          "    print(f'    sgt.attention (zigzag, causal, seq {S}): max |error| vs full attention {err:.1e}')\n"
          "try:\n"
          "    stepgraph.compile('ring_allreduce', n=n, set={'size': '1MiB', 'sise': '2'})\n"
          "except stepgraph.StepgraphError as e:\n"
          "    if r == 0: print('    bad input raises StepgraphError: ' + e.diagnostics[0]['message'])\n",
          diags))
    return std::max(rc, fail(diags.messages()));
  std::cout << "\n19. Python: `import stepgraph` calls the same library (results equal `--json`), and `stepgraph.torch` runs a\n"
               "    checked schedule on torch tensors inside a torch.distributed job (gloo here; docs/python.md):\n"
               "    `PYTHONPATH="
            << pkg.string() << " mpiexec -n 4 python3 script.py`\n\n";
  std::cout.flush();
  std::string cmd = "PYTHONPATH='" + pkg.string() + "' " + mpi + "-n 4 /usr/bin/python3 '" + script + "'";
  int st = std::system(cmd.c_str());
  if (st != 0) std::cout << "   (exit status " << st << ")\n";
  return rc;
}

}  // namespace sg::cli
