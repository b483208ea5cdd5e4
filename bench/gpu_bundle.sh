#!/usr/bin/env bash
# Packs what the GPU checks need into .gpu/bundle.tar.xz, for the lent GPU machine (the library's
# `device` tool): that machine has CUDA, cuBLAS and NCCL but not Debian's Open MPI, SimGrid or Z3,
# and reaches no package registry. The bundle holds this build's stepgraph, test_cuda and
# bench_gpu at their build-tree paths, every shared library they and Open MPI's launcher need
# except glibc, libstdc++, the CUDA driver, cuBLAS and NCCL (the GPU machine has its own; NCCL alone
# is 218 MB), and Open MPI's and PMIx's plugin trees at their absolute paths. bench/gpu_run.sh
# unpacks it there and runs the checks and benchmarks.
#
#   bash bench/gpu_bundle.sh          # here, after a CUDA build in build/
#   device run, carry [".gpu"]:  bash bench/gpu_run.sh
#
# .gpu/ is ignored by git: the bundle travels only as a carried path.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
[ -f build/CMakeCache.txt ] || { echo "gpu_bundle: no build/ here (bash run.sh first)" >&2; exit 2; }
grep -q '^STEPGRAPH_WITH_CUDA:BOOL=ON' build/CMakeCache.txt || { echo "gpu_bundle: build/ has no CUDA (STEPGRAPH_WITH_CUDA=OFF)" >&2; exit 2; }
nice cmake --build build -j2 --target stepgraph test_cuda bench_gpu >/dev/null

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/tests" "$stage/build/bench" "$stage/lib" "$stage/root"
cp build/stepgraph "$stage/build/"
cp build/tests/test_cuda "$stage/build/tests/"
cp build/bench/bench_gpu "$stage/build/bench/"

ompi=/usr/lib/x86_64-linux-gnu/openmpi
pmix=/usr/lib/x86_64-linux-gnu/pmix2
launcher=$(readlink -f "$(command -v orterun || command -v mpiexec)")
# Shared libraries: the binaries', the launcher's and every plugin's, resolved here.
skip='/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libnccl)\.so|ld-linux'
{
  for f in build/stepgraph build/tests/test_cuda build/bench/bench_gpu "$launcher" $(find "$ompi/lib/openmpi3" "$pmix" -name '*.so'); do
    ldd "$f" | awk '$3 ~ /^\// {print $3}'
  done
} | sort -u | grep -v -E "$skip" | while read -r l; do cp -L "$l" "$stage/lib/"; done
# Open MPI and PMIx look for their plugins, help texts and settings at the paths they were built
# with: those trees keep their absolute paths (gpu_run.sh copies them in without overwriting).
mkdir -p "$stage/root/usr/bin" "$stage/root/usr/lib/x86_64-linux-gnu" "$stage/root/usr/share" "$stage/root/etc"
cp "$launcher" "$stage/root/usr/bin/orterun"
cp -a "$ompi" "$stage/root/usr/lib/x86_64-linux-gnu/"
cp -a "$pmix" "$stage/root/usr/lib/x86_64-linux-gnu/"
for d in /usr/share/openmpi /usr/share/pmix /etc/openmpi /etc/pmix; do [ -e "$d" ] && cp -aL "$d" "$stage/root${d%/*}/"; done
git -C "$root" rev-parse HEAD >"$stage/COMMIT"
# The tests run the binary and read schedules at the paths of this build (gpu_run.sh links them).
sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt >"$stage/SOURCE_DIR"

mkdir -p .gpu
tar -C "$stage" -cJf .gpu/bundle.tar.xz .
echo "gpu_bundle: .gpu/bundle.tar.xz, $(du -h .gpu/bundle.tar.xz | cut -f1), commit $(cut -c1-7 "$stage/COMMIT")"
