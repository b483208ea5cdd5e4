#!/usr/bin/env bash
# The GPU checks and benchmarks in one command, for the lent GPU machine (the library's `device`
# tool), which has CUDA, cuBLAS, NCCL and PyTorch but no package registry. Run bench/gpu_bundle.sh
# here first, then:
#
#   device run, carry [".gpu"], timeout_s 600:  bash bench/gpu_run.sh [quick]
#
# It first says what MPI the machine has of its own (the GPU image ships Open MPI 4.1.6 with PMIx 5
# under /usr): the bundle's Open MPI (this build's, Debian's 4.1 with PMIx 4) is unpacked under
# /tmp and pointed at by OPAL_* / PMIX_* variables and its own launcher, so it never loads the
# machine's plugins and nothing of the machine's is moved or overwritten. Then:
#   1. bench_gpu: reduction bandwidth / cudaMemcpy D2D, attention tile / cuBLAS GEMMs;
#   2. the card's own attention: PyTorch's SDPA on the same shapes (bench/sdpa_anchor.py, with the
#      machine's python3 that has a CUDA PyTorch);
#   3. ring attention and the all-reduce timed at issue 30's sizes (no check: the reference is a CPU one),
#      staged through the host and over CUDA IPC;
#   4. exec on the GPU, checked: ring_allreduce (4 ranks sharing the GPU, against MPI's own),
#      attention in the kernels' order and in Megatron's layouts (bench/megatron_layout_attention.sched),
#      zigzag ring attention forward and backward with the warp kernels and the cuBLAS tile,
#      forward and backward with cuDNN's fused tiles (STEPGRAPH_ATTN=cudnn),
#      streams against --device-sync; CUDA IPC between the ranks; NCCL on one rank;
#   5. test_cuda: reductions, fill, attention tiles (warp and cuBLAS), exec --device cuda --check.
# The measurements come first: the budget cuts from the end.
# Everything goes to $OUT/gpu_run.log; the tables are gathered at the end. Each step has its own
# timeout and the whole run a budget (GPU_RUN_BUDGET, default 480 s), so a hang costs that step,
# and what does not fit is skipped, said so. `quick` skips 3 and measures small sizes; `timed` runs 3 only.
set -uo pipefail
cd "$(dirname "$0")/.."
here=$PWD
out=${OUT:-/tmp/stepgraph_gpu_out}
mkdir -p "$out"
exec > >(tee "$out/gpu_run.log") 2>&1
t0=$SECONDS
budget=${GPU_RUN_BUDGET:-480}
step() { printf '\n== [%4ds] %s\n' $((SECONDS - t0)) "$*"; }
run() {  # run SECONDS CMD...: a step's command under its own timeout (capped by the budget), its exit code shown
  local limit=$1 left=$((budget - (SECONDS - t0)))
  shift
  if [ "$left" -lt 10 ]; then echo "-- skipped (the run's budget of ${budget} s is spent): $*"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  echo "-- exit $rc$([ $rc = 124 ] && echo ' (timed out)')"
}

step "machine"
nvidia-smi -L 2>&1 || echo "nvidia-smi: not found"
grep PRETTY_NAME /etc/os-release 2>/dev/null
ldd --version 2>&1 | head -1
[ -f .gpu/bundle.tar.xz ] || { echo "gpu_run: no .gpu/bundle.tar.xz (run bash bench/gpu_bundle.sh here, and carry .gpu)"; exit 2; }

step "bundle"
b=/tmp/stepgraph_bundle
rm -rf "$b" && mkdir -p "$b" && tar -C "$b" -xJf .gpu/bundle.tar.xz || exit 2
echo "built from commit $(cat "$b/COMMIT"), source $(cat "$b/SOURCE_DIR")"
mkdir -p build/tests build/bench
cp "$b/build/stepgraph" build/ && cp "$b/build/tests/test_cuda" build/tests/ && cp "$b/build/bench/bench_gpu" build/bench/
# The tests find the binary and the schedules at the paths of the build that made them.
src=$(cat "$b/SOURCE_DIR")
if [ "$src" != "$here" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$here" "$src"; fi
# The machine's own MPI, if any, is left as it is: the bundle's Open MPI reads its plugins,
# help texts and settings from the bundle (OPAL_*/PMIX_* install-directory variables, which both
# libraries honour), and its launcher is called by path, so the machine's plugins (built against
# another PMIx: "undefined symbol: PMIx_Info_create") are never loaded.
echo "this machine's MPI: $(command -v mpiexec || echo none)$(command -v ompi_info >/dev/null && ompi_info --version 2>/dev/null | head -1 | sed 's/^/, /')"
r=$b/root
ompi=$r/usr/lib/x86_64-linux-gnu/openmpi
pmix=$r/usr/lib/x86_64-linux-gnu/pmix2
export OPAL_PREFIX=$r/usr OPAL_EXEC_PREFIX=$r/usr OPAL_BINDIR=$r/usr/bin OPAL_LIBDIR=$ompi/lib \
  OPAL_PKGLIBDIR=$ompi/lib/openmpi3 OPAL_DATADIR=$r/usr/share OPAL_PKGDATADIR=$r/usr/share/openmpi \
  OPAL_SYSCONFDIR=$r/etc/openmpi OMPI_MCA_mca_base_component_path=$ompi/lib/openmpi3 \
  OMPI_MCA_mca_base_param_files=$r/etc/openmpi/openmpi-mca-params.conf
export PMIX_PREFIX=$pmix PMIX_EXEC_PREFIX=$pmix PMIX_LIBDIR=$pmix/lib PMIX_PKGLIBDIR=$pmix/lib/pmix \
  PMIX_DATAROOTDIR=$pmix/share PMIX_DATADIR=$pmix/share PMIX_PKGDATADIR=$pmix/share/pmix \
  PMIX_SYSCONFDIR=$pmix/share PMIX_MCA_mca_base_component_path=$pmix/lib/pmix
mkdir -p "$b/bin" && ln -sf "$r/usr/bin/orterun" "$b/bin/mpiexec" && ln -sf "$r/usr/bin/orterun" "$b/bin/mpirun"
# CUDA's own libraries from this machine: cuBLAS and NCCL beside the toolkit or in Python's wheels.
libs="$b/lib"
for name in libcudart.so.13 libcublas.so.13 libnccl.so.2; do
  d=$(find /usr/local/cuda/ /usr/local/cuda/lib64/ /usr/local/cuda/targets/x86_64-linux/lib/ /opt /usr/local/lib /usr/lib -name "$name" -print -quit 2>/dev/null)
  if [ -n "$d" ]; then libs="$libs:$(dirname "$d")"; echo "$name: $d"; else echo "$name: not found"; fi
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$b/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mca_base_component_show_load_errors=0
for f in build/stepgraph build/tests/test_cuda build/bench/bench_gpu; do
  missing=$(ldd "$f" | grep 'not found')
  [ -n "$missing" ] && echo "$f: $missing"
done
run 30 mpiexec -n 2 build/stepgraph env --json | head -20
run 30 build/stepgraph env

q=${1:-}
if [ "$q" != timed ]; then
step "1. bench_gpu: reductions against a device copy, tiles against cuBLAS"
run 120 build/bench/bench_gpu $([ "$q" = quick ] && echo --quick)

step "2. the card's own attention: PyTorch's scaled_dot_product_attention, same shapes"
py=
# PyTorch's venv is wherever the image put it: the usual places, then any bin/python3 near the top.
for c in python3 /usr/bin/python3 /usr/local/bin/python3 /opt/*/bin/python3 /opt/*/*/bin/python3 /root/*/bin/python3 /venv*/bin/python3 \
  /workspace/*/bin/python3 $(timeout 20 find / -maxdepth 5 -path /proc -prune -o -path '*/bin/python3' -print 2>/dev/null); do
  command -v "$c" >/dev/null 2>&1 || continue
  if timeout 60 "$c" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then py=$c; break; fi
done
if [ -n "$py" ]; then
  echo "python with CUDA PyTorch: $py"
  run 120 "$py" bench/sdpa_anchor.py $([ "$q" = quick ] && echo --quick)
else
  echo "no python3 with a CUDA PyTorch found: the SDPA anchor is not measured"
fi
fi

E="run 60 mpiexec -n 4 build/stepgraph exec"
if [ "$q" != quick ]; then
  # The warp-per-row reference tile runs at ~1 TFLOP/s (10 s an iteration at this size): the timed
  # rows use the cuBLAS tiles; the reference is timed at the checked size above.
  step "3. timed at the issue's sizes (seq 32K, 32 heads, dim 128; ring all-reduce 256 MiB): TFLOP/s in the model count"
  T="--set seq=32768 --set heads=32 --set dim=128 --iters 3 --warmup 1"
  STEPGRAPH_ATTN=gemm run 60 mpiexec -n 1 build/stepgraph exec zigzag_ring_attention --device cuda $T
  STEPGRAPH_ATTN=gemm $E zigzag_ring_attention --device cuda $T
  # cuDNN's fused forward tile (exec/cuda/attention_cudnn.cpp), first run on a GPU here.
  STEPGRAPH_ATTN=cudnn run 60 mpiexec -n 1 build/stepgraph exec zigzag_ring_attention --device cuda $T
  STEPGRAPH_ATTN=cudnn $E zigzag_ring_attention --device cuda $T
  # The backward at this size took over 60 s on the H200 (d5fc9e1; 46 TFLOP/s on the H100): 150 s.
  STEPGRAPH_ATTN=gemm run 150 mpiexec -n 4 build/stepgraph exec zigzag_ring_attention_bwd --device cuda $T
  # cuDNN's backward tile (first run on a GPU here).
  STEPGRAPH_ATTN=cudnn run 150 mpiexec -n 4 build/stepgraph exec zigzag_ring_attention_bwd --device cuda $T
  $E ring_allreduce --device cuda --set size=256MiB --iters 10 --warmup 3
  # CUDA IPC between the 4 ranks (exec/executor/executor_ipc.cpp), first run on a GPU here: against the
  # staged row above and bench_gpu's D2D copy (issue 30: >= 50 % of what a D2D copy allows).
  $E ring_allreduce --device cuda --transport ipc --set size=256MiB --iters 10 --warmup 3
  STEPGRAPH_ATTN=gemm $E zigzag_ring_attention --device cuda --transport ipc $T
fi


[ "$q" = timed ] && { step "done (timed only)"; exit 0; }
step "4. exec on the GPU, checked"
$E ring_allreduce --device cuda --check --compare native --sweep size=1MiB,16MiB,256MiB --iters 10 --warmup 3
$E ring_allreduce --device cuda --check --dtype bf16 --set size=64MiB --iters 10 --warmup 3
$E ring_allreduce --device cuda --transport ipc --check --compare native --sweep size=1MiB,16MiB,256MiB --iters 10 --warmup 3
A="--set seq=4096 --set heads=8 --set dim=128 --check --iters 3 --warmup 1"
$E zigzag_ring_attention --device cuda $A
$E zigzag_ring_attention --device cuda $A --device-sync
STEPGRAPH_ATTN=gemm $E zigzag_ring_attention --device cuda $A
# Megatron's layouts (sbhd q, fused sbh2d kv, O without its lse): items relaid around each tile.
STEPGRAPH_ATTN=gemm $E bench/megatron_layout_attention.sched --device cuda $A
STEPGRAPH_ATTN=cudnn $E zigzag_ring_attention --device cuda $A
STEPGRAPH_ATTN=cudnn $E bench/megatron_layout_attention.sched --device cuda $A
$E zigzag_ring_attention_bwd --device cuda $A
$E zigzag_ring_attention_bwd --device cuda --transport ipc $A
STEPGRAPH_ATTN=cudnn $E zigzag_ring_attention_bwd --device cuda $A
STEPGRAPH_ATTN=gemm $E zigzag_ring_attention_bwd --device cuda $A
$E ulysses_ring_attention_bwd --device cuda --set seq=4096 --set heads=8 --set dim=64 --check --iters 2 --warmup 1
run 60 mpiexec -n 1 build/stepgraph exec ring_allreduce --device cuda --transport nccl --check --set size=64MiB --iters 10
run 60 mpiexec -n 1 build/stepgraph exec zigzag_ring_attention --device cuda --transport nccl --set seq=4096 --set heads=8 --set dim=128 --check --iters 2

step "5. test_cuda: reductions, fill, attention tiles, exec --device cuda --check"
run 150 build/tests/test_cuda --durations yes

step "tables (card $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), commit $(cut -c1-7 "$b/COMMIT"), $(date -u +%F))"
grep -E '^(\| |# bench_gpu|# PyTorch|## part|# attention)' "$out/gpu_run.log" | grep -v '^| shape |' || true
grep -E 'TFLOP/s|busbw|max_abs_err|exit [1-9]' "$out/gpu_run.log" | grep -v '^#' | tail -40 || true
step "done"
