// libFuzzer harness for the second front end: the input is an MSCCL algorithm file (the XML that
// msccl-tools writes and RCCL loads). It goes the road `stepgraph check FILE.xml` takes: the XML
// reader and RCCL's loader rules (core/msccl/xml.cpp, program.cpp), the lowering at the file's
// ngpus (core/msccl/lower.cpp) and the passes, then the interpreter and the postconditions, with
// every diagnostic rendered. The reader is hand-written and reads files nobody has checked: the
// place a malformed tag, an offset or a count out of range would crash first.
//
// The text goes through a scratch file, as a user's file would (open_target picks the front end
// by the name's .xml). Instances stay small: at most 16 gpus and 64 MiB of estimated memory (the
// interpreter's values are symbolic: the byte size does not matter), both in-place modes.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/interp/run_check.hpp"
#include "core/pipeline.hpp"

namespace {

// The file each input is written to, removed when the process exits.
struct Scratch {
  std::string path = (std::filesystem::temp_directory_path() / ("fuzz_msccl." + std::to_string(getpid()) + ".xml")).string();
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

void render_all(const sg::Session& s) { (void)s.diags.render(s.sources); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  std::ofstream(scratch.path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  sg::Session s;
  sg::Target t = sg::open_target(s, scratch.path);
  render_all(s);
  if (!t.opened() || s.diags.has_errors() || t.fixed_ranks == 0 || t.fixed_ranks > 16) return 0;
  for (int inplace = 0; inplace < 2; ++inplace) {
    s.diags.clear();
    sg::ElabOptions o;
    o.nranks = t.fixed_ranks;
    o.max_memory = uint64_t{64} << 20;
    o.max_work = 100'000;
    o.sets = {{"inplace", std::to_string(inplace)}};
    sg::CheckOutcome c = sg::run_check(s, t, o);  // what `stepgraph check` runs
    render_all(s);
    if (!c.built) continue;
    (void)sg::check_verdict(c.interp, c.ok);
    (void)c.findings.render(s.sources);
  }
  return 0;
}
