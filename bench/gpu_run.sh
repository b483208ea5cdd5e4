#!/usr/bin/env bash
# The GPU checks and benchmarks of issue 10 in one command, for the lent GPU machine (the
# library's `device` tool), which has CUDA, cuBLAS and NCCL but neither Open MPI nor a package
# registry. Run bench/gpu_bundle.sh here first, then:
#
#   device run, carry [".gpu"], timeout_s 600:  bash bench/gpu_run.sh [quick]
#
# It unpacks the bundle (this build's binaries, Open MPI and the libraries they need), then:
#   1. test_cuda: reductions, fill, attention tiles (warp and cuBLAS), exec --device cuda --check;
#   2. bench_gpu: reduction bandwidth / cudaMemcpy D2D, attention tile / cuBLAS GEMMs;
#   3. exec on the GPU, checked: ring_allreduce (4 ranks sharing the GPU, against MPI's own),
#      zigzag ring attention forward and backward with the warp kernels and the cuBLAS tile,
#      streams against --device-sync; NCCL on one rank;
#   4. the same ring attention timed at a larger size (no check: the reference is a CPU one).
# Everything goes to $OUT/gpu_run.log (and the terminal); each step has its own timeout, so a
# hang costs that step, not the call. `quick` runs 1 to 3 only.
set -uo pipefail
cd "$(dirname "$0")/.."
here=$PWD
out=${OUT:-/tmp/stepgraph_gpu_out}
mkdir -p "$out"
exec > >(tee "$out/gpu_run.log") 2>&1
t0=$SECONDS
step() { printf '\n== [%4ds] %s\n' $((SECONDS - t0)) "$*"; }
run() {  # run SECONDS CMD...: a step's command under its own timeout, its exit code shown
  local limit=$1
  shift
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
# Open MPI's and PMIx's trees at their built-in paths, never overwriting what is there.
[ -d /usr/lib/x86_64-linux-gnu/openmpi ] && echo "note: this machine has an Open MPI tree of its own; the bundle's files do not replace it"
cp -rn "$b/root/." / 2>/dev/null || cp -r --update=none "$b/root/." /
mkdir -p "$b/bin" && ln -sf /usr/bin/orterun "$b/bin/mpiexec"
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

step "1. test_cuda"
run 240 build/tests/test_cuda --durations yes

step "2. bench_gpu"
run 240 build/bench/bench_gpu

step "3. exec on the GPU, checked"
E="run 120 mpiexec -n 4 build/stepgraph exec"
$E ring_allreduce --device cuda --check --compare native --sweep size=1MiB,16MiB,256MiB --iters 10 --warmup 3
$E ring_allreduce --device cuda --check --dtype bf16 --set size=64MiB --iters 10 --warmup 3
A="--set seq=4096 --set heads=8 --set dim=128 --check --iters 3 --warmup 1"
$E zigzag_ring_attention --device cuda $A
$E zigzag_ring_attention --device cuda $A --device-sync
STEPGRAPH_ATTN=gemm $E zigzag_ring_attention --device cuda $A
$E zigzag_ring_attention_bwd --device cuda $A
$E ulysses_ring_attention_bwd --device cuda --set seq=4096 --set heads=8 --set dim=64 --check --iters 2 --warmup 1
run 120 mpiexec -n 1 build/stepgraph exec ring_allreduce --device cuda --transport nccl --check --set size=64MiB --iters 10
run 120 mpiexec -n 1 build/stepgraph exec zigzag_ring_attention --device cuda --transport nccl --set seq=4096 --set heads=8 --set dim=128 --check --iters 2

[ "${1:-}" = quick ] && { step "done (quick)"; exit 0; }
step "4. ring attention timed, 4 ranks sharing the GPU (streams, --device-sync, cuBLAS tiles): TFLOP/s in the model count"
T="--set seq=32768 --set heads=32 --set dim=128 --iters 5 --warmup 2"
$E zigzag_ring_attention --device cuda $T
$E zigzag_ring_attention --device cuda $T --device-sync
STEPGRAPH_ATTN=gemm $E zigzag_ring_attention --device cuda $T
$E zigzag_ring_attention_bwd --device cuda $T
STEPGRAPH_ATTN=gemm $E zigzag_ring_attention_bwd --device cuda $T
step "done"
