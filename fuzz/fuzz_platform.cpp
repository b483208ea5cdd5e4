// libFuzzer harness for the platform spec grammar (sim/platform.hpp, parse_platform): the input
// is a spec string (`star:bw=100Gbps,lat=1us`, `torus:4x4,…`, `nodes:…`, `x.xml,model=cm02`).
// The rank count it is parsed for is 1 + (length mod 13), so that "too few hosts" is reached
// without a binary prefix in the corpus files. A spec that parses is then used: describe(),
// host names, and the routes, bottleneck bandwidths and lone-message times between the first
// and last few hosts (the route functions of every generated kind). One property besides
// "no crash": the normalised spec (Platform::spec) parses again to the same spec and the same
// host and link counts.
//
// The contents of a SimGrid XML file are read by SimGrid (sim/platform/xml_simgrid.cpp), not by
// stepgraph, so only the spec's side of the xml kind (the path, `,model=`) is fuzzed. An input
// starting with '@' (a spec read from a file) is written to a scratch file in the temporary
// folder and read through "@FILE". Inputs holding a '/' are skipped, so that the harness opens
// files of the working folder only (never /dev/zero or a FIFO), and so are specs whose sizes
// are large (too_big).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/platform.hpp"

namespace {

// The file an '@' input is written to, removed when the process exits.
struct Scratch {
  std::string path = (std::filesystem::temp_directory_path() / ("fuzz_platform_spec." + std::to_string(getpid()))).string();
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

void use(const sg::sim::Platform& p) {
  (void)p.describe();
  if (!p.has_routes() || p.hosts == 0) return;
  std::vector<uint32_t> hosts;
  for (uint32_t h = 0; h < std::min<uint32_t>(p.hosts, 5); ++h) hosts.push_back(h);
  for (uint32_t h = std::max<uint32_t>(p.hosts, 7) - 2; h < p.hosts; ++h) hosts.push_back(h);
  std::vector<uint32_t> ids;
  for (uint32_t a : hosts) {
    (void)p.host_name(a);
    for (uint32_t b : hosts) {
      double lat = 0;
      p.route(a, b, ids, lat);
      for (uint32_t id : ids)
        if (id >= p.links.size()) {
          std::fprintf(stderr, "route %u -> %u of '%s' names link %u of %zu\n", a, b, p.spec.c_str(), id, p.links.size());
          std::abort();
        }
      (void)p.route_bw(a, b);
      (void)p.lone_message_time(a, b, 1 << 20);
    }
  }
}

// Whether the spec's counts (digit runs standing alone or in an AxBxC list: not the number of a
// bandwidth or a time), the largest one cubed, multiply to more than 2^20. Such a spec may be
// valid and still build millions of links (dragonfly:groups=200: 8 M links, 1.5 GB, 20 s under
// ASan); the library bounds that by its own limits (kMaxLinks), which are far past what a fuzzer
// should spend its executions on.
bool too_big(const std::string& spec) {
  double product = 1, largest = 1;
  for (size_t i = 0; i < spec.size();) {
    if (!std::isdigit(static_cast<unsigned char>(spec[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < spec.size() && std::isdigit(static_cast<unsigned char>(spec[j]))) ++j;
    // A count is any digit run not followed by a unit or a decimal part (100Gbps, 1.5us, 1e9):
    // after it comes the end, an 'x' (AxBxC), or punctuation, a '#' starting a spec file's
    // comment included (`@` + "torus:8x440000#…" built 3.5 M hosts, a timeout).
    char next = j == spec.size() ? ',' : spec[j];
    bool alone = next == 'x' || !(std::isalnum(static_cast<unsigned char>(next)) || next == '.');
    if (alone) {
      double v = std::stod(spec.substr(i, std::min<size_t>(j - i, 300)));
      product *= std::max(v, 1.0);
      largest = std::max(largest, v);
    }
    i = j;
  }
  return product * largest * largest > double(1 << 20);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  if (spec.find('\0') != std::string::npos) return 0;  // not a command-line string
  if (spec.find('/') != std::string::npos) return 0;   // files in the working folder only
  if (too_big(spec)) return 0;
  uint32_t nranks = 1 + static_cast<uint32_t>(size % 13);
  std::string arg = spec;
  if (!spec.empty() && spec[0] == '@') {
    static const Scratch scratch;
    std::ofstream(scratch.path, std::ios::binary) << spec.substr(1);
    arg = "@" + scratch.path;
  }
  sg::sim::Platform p;
  sg::SourceManager sm;
  sg::Diagnostics diags;
  if (!sg::sim::parse_platform(arg, nranks, p, sm, diags)) {
    (void)diags.render(sm);  // the error's place is in the text it names
    return 0;
  }
  use(p);

  sg::sim::Platform q;
  sg::SourceManager sm2;
  sg::Diagnostics diags2;
  if (!sg::sim::parse_platform(p.spec, nranks, q, sm2, diags2) || q.spec != p.spec || q.hosts != p.hosts ||
      q.links.size() != p.links.size()) {
    std::fprintf(stderr, "normalised spec does not read back\n--- input ---\n%s\n--- normalised ---\n%s\n--- again ---\n%s\n%s\n",
                 spec.c_str(), p.spec.c_str(), q.spec.c_str(), diags2.render(sm2).c_str());
    std::abort();
  }
  return 0;
}
