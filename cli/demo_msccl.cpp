// The tour's MSCCL step (`stepgraph demo`, step 11): an algorithm file as MSCCL and RCCL load
// it, written to a temporary folder, verified with its race found at the XML line, refused by
// sim, half fixed (a flag no step posts: a deadlock), then fixed.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/io/output_file.hpp"

namespace sg::cli {

namespace {

// Two GPUs gather each other's block. Thread block 1 copies the gpu's own block into o[0] while
// thread block 0 sends o[0]: nothing orders them (tests/msccl/allgather_race.xml).
const char* kRace =
    R"(<algo name="allgather_pair" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";

std::string replace_first(std::string s, const std::string& from, const std::string& to) {
  if (auto at = s.find(from); at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int demo_msccl(int rc) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::temp_directory_path() / "stepgraph-tour";
  fs::create_directories(dir, ec);
  std::string race = (dir / "allgather_pair.xml").string(), fixed = (dir / "allgather_pair_fixed.xml").string();
  std::string half = (dir / "allgather_pair_hasdep0.xml").string();
  // The fix: gpu 0's send waits for thread block 1's copy (depid/deps), which says it is waited on.
  std::string half_text = replace_first(kRace, R"(srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1")",
                                        R"(srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="0")");
  std::string text = replace_first(half_text, R"(dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>)",
                                   R"(dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
  </gpu>)");
  Diagnostics diags;
  if (!write_output_file(race, kRace, diags) || !write_output_file(fixed, text, diags) || !write_output_file(half, half_text, diags))
    return std::max(rc, fail(diags.messages()));
  std::cout << "\n11. MSCCL XML, the files msccl-tools writes and MSCCL and RCCL load: a two-GPU all-gather whose\n"
               "    thread blocks race (tb 1 copies into o[0] while tb 0 sends it), `stepgraph verify FILE.xml`\n"
               "    (-n is the file's ngpus; connections hold 2 messages with Simple, as NCCL_STEPS makes them)\n\n";
  std::cout.flush();
  VerifyOpts vo;
  vo.c.target = race;
  cmd_verify(vo);  // the race: exit 1, expected
  std::cout << "\n    `sim` checks first: it refuses to time the racy file (--allow-defects would time it anyway)\n\n";
  std::cout.flush();
  {
    SimOpts so;
    so.targets = {race};
    so.sets = {"size=1MiB"};
    so.model = "analytic";
    so.platform = "nodes:count=1,gpus=2";
    cmd_sim(so);  // refused: exit 1, expected
  }
  std::cout << "\n    half a fix: depid=\"1\" deps=\"0\" on the send, but the copy it waits for keeps hasdep=\"0\". RCCL's\n"
               "    kernel raises a thread block's progress flag only after a step with hasdep=\"1\", so on a GPU the send\n"
               "    spins for ever: a deadlock naming both lines\n\n";
  std::cout.flush();
  vo.c.target = half;
  cmd_verify(vo);  // the deadlock: exit 1, expected
  std::cout << "\n    the fix (and hasdep=\"1\" on the copy), verified, then simulated at 1 MiB:\n\n";
  std::cout.flush();
  vo.c.target = fixed;
  if (int r = cmd_verify(vo)) rc = std::max(rc, r);
  SimOpts so;
  so.targets = {fixed};
  so.sets = {"size=1MiB"};
  so.model = "analytic";
  so.platform = "nodes:count=1,gpus=2";
  std::cout << "\n";
  if (int r = cmd_sim(so)) rc = std::max(rc, r);
  // And for real, where mpiexec is: two processes, real buffers, checked and next to MPI_Allgather.
  if (std::system("command -v mpiexec >/dev/null 2>&1") == 0) {
    std::cout << "\n    run for real: `mpiexec -n 2 stepgraph exec FILE.xml --check --compare native` (every thread block's\n"
                 "    steps in order, its sends buffered as the connection buffers them)\n\n";
    std::cout.flush();
    std::string self = fs::read_symlink("/proc/self/exe").string();
    std::string cmd =
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout 120 mpiexec -n 2 '" + self +
        "' exec '" + fixed + "' --set size=1MiB --check --compare native --iters 5 --warmup 1";
    if (int st = std::system(cmd.c_str()); st != 0) std::cout << "   (exit status " << st << ")\n";
  }
  // And out: a library schedule as an MSCCL file, read back and verified.
  std::string exported = (dir / "ring_allreduce_4.xml").string();
  std::cout << "\n    and out: `stepgraph compile ring_allreduce -n 4 --set size=4KiB --format msccl -o FILE.xml` (thread\n"
               "    blocks from the schedule's chains of steps, its dependencies as depid/deps), then `verify FILE.xml`:\n\n";
  std::cout.flush();
  CompileOpts co;
  co.c.target = "ring_allreduce";
  co.c.ranks = "4";
  co.c.sets = {"size=4KiB"};
  co.format = "msccl";
  co.output = exported;
  if (int r = cmd_compile(co)) rc = std::max(rc, r);
  vo.c.target = exported;
  vo.c.sets = {"size=4096"};
  if (int r = cmd_verify(vo)) rc = std::max(rc, r);
  std::cout << "    (docs/msccl.md: every rule with its source in RCCL and msccl-tools, and the RCCL corpus table)\n";
  return rc;
}

}  // namespace sg::cli
