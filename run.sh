#!/usr/bin/env bash
# stepgraph's one entry point for a fresh Debian machine.
#   bash run.sh          install what is missing, build, run the main job (stepgraph demo)
#   bash run.sh test     install what is missing, build, run every test (what CI runs)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

PKGS=(cmake g++ make pkg-config libsimgrid-dev libz3-dev libcli11-dev catch2 libopenmpi-dev openmpi-bin
      nlohmann-json3-dev gnuplot-nox
      python3-dev pybind11-dev python3-torch)  # `import stepgraph` and stepgraph.torch (CPU, gloo)
# `run.sh test` also builds the executor against MPICH and runs its tests under Hydra. Open MPI
# stays the default MPI (Debian's alternatives rank it 50, MPICH 40).
# It also fuzzes the two front ends (the language, MSCCL XML) and the platform parser for a minute
# each (fuzz/run.sh): clang and its libFuzzer runtime.
[ "${1:-demo}" = test ] && PKGS+=(mpich libmpich-dev clang-14 libclang-rt-14-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run.sh: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi

BUILD=${STEPGRAPH_BUILD_DIR:-build}
JOBS=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$JOBS"

# OpenMPI as root on a small machine (the exec tests run real processes under mpiexec).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

case "${1:-demo}" in
  test)
    ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS"
    # The same exec tests against MPICH 4.0, under its launcher (Hydra): the executor, the
    # launcher check and the tests' own launching must hold under any MPI. Only what exec needs
    # is built (no SimGrid, Z3, CUDA or benchmarks).
    cmake -S . -B "$BUILD-mpich" -DCMAKE_BUILD_TYPE=Release -DMPI_C_COMPILER=/usr/bin/mpicc.mpich \
      -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich -DSTEPGRAPH_WITH_CUDA=OFF \
      -DSTEPGRAPH_WITH_SIMGRID=OFF -DSTEPGRAPH_WITH_Z3=OFF -DSTEPGRAPH_BUILD_BENCH=OFF >/dev/null
    cmake --build "$BUILD-mpich" -j "$JOBS" --target stepgraph test_exec test_exec_attention
    ctest --test-dir "$BUILD-mpich" --output-on-failure -j "$JOBS" -R '^test_exec'
    # Every saved fuzz reproducer, then 30 s of fuzzing per harness (CI stays under 40 minutes), in a clang + sanitizer build
    # of core and the platform layer only (docs/fuzzing.md).
    STEPGRAPH_FUZZ_BUILD_DIR="$BUILD-fuzz" FUZZ_JOBS="$JOBS" bash fuzz/run.sh 30
    ;;
  demo) "$BUILD/stepgraph" demo ;;
  *) echo "usage: bash run.sh [test]" >&2; exit 2 ;;
esac
