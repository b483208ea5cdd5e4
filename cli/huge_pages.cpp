// Transparent huge pages for the CLI's own process (docs/sim.md, "Speed and memory").
//
// A big run's arrays are touched page by page as they grow: the ring all-reduce at N = 4,096 is
// 3 GiB of step graph and runtime state, 920 K minor page faults in 4 KiB pages, 7.5 s of system
// time out of 29 s on the development machine, and more in TLB misses. glibc (2.35 and later) asks
// the kernel for transparent huge pages on its heap and its mmapped chunks when the tunable
// glibc.malloc.hugetlb=1 is set, but reads tunables only when a process starts; so the command
// starts itself once more with it set (same pid, same arguments and environment, plus the
// tunable). Measured: 16 K faults instead of 920 K, 20.9 s instead of 29.2 s end to end.
// STEPGRAPH_HUGE_PAGES=0 turns it off; it is skipped where the kernel's THP mode is "never".
#include "cli/huge_pages.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <unistd.h>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

namespace sg::cli {

namespace {

bool thp_possible() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  if (!std::getline(f, mode)) return false;
  return mode.find("[never]") == std::string::npos;
}

bool glibc_has_hugetlb_tunable() {
#if defined(__GLIBC__)
  int major = 0, minor = 0;
  const char* v = gnu_get_libc_version();
  if (std::sscanf(v, "%d.%d", &major, &minor) != 2) return false;
  return major > 2 || (major == 2 && minor >= 35);
#else
  return false;
#endif
}

}  // namespace

void restart_with_huge_pages(char** argv) {
  const char* off = std::getenv("STEPGRAPH_HUGE_PAGES");
  if (off && std::strcmp(off, "0") == 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::string t = tunables ? tunables : "";
  // Set already (by this restart or by the user, who then decides): nothing to do. So the
  // restart happens once: the restarted process finds the tunable in its environment.
  if (t.find("glibc.malloc.hugetlb") != std::string::npos) return;
  if (!glibc_has_hugetlb_tunable() || !thp_possible()) return;
  t = t.empty() ? "glibc.malloc.hugetlb=1" : t + ":glibc.malloc.hugetlb=1";
  // And the heap's top is not given back: a huge page given back is zeroed whole when touched
  // again (train_step at N = 8,192, whose graph-building frees and regrows large blocks: 15.5 s
  // instead of 17.6 s, the kernel zeroing pages 42 % of the time before; the same peak). (Setting
  // it fixes glibc's mmap threshold at its 128 KiB default: larger blocks are still mapped and
  // given back one by one.)
  if (t.find("glibc.malloc.trim_threshold") == std::string::npos) t += ":glibc.malloc.trim_threshold=17179869184";
  if (setenv("GLIBC_TUNABLES", t.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not restarted (no /proc, say): run as we are, without the tunable in the environment.
  if (tunables) setenv("GLIBC_TUNABLES", tunables, 1);
  else unsetenv("GLIBC_TUNABLES");
}

std::string huge_pages_state() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  if (t && std::strstr(t, "glibc.malloc.hugetlb=1"))
    return "huge pages: on (glibc.malloc.hugetlb=1; STEPGRAPH_HUGE_PAGES=0 turns them off)";
  const char* off = std::getenv("STEPGRAPH_HUGE_PAGES");
  if (off && std::strcmp(off, "0") == 0) return "huge pages: off (STEPGRAPH_HUGE_PAGES=0)";
  if (!glibc_has_hugetlb_tunable()) return "huge pages: off (this C library has no glibc.malloc.hugetlb tunable)";
  if (!thp_possible()) return "huge pages: off (the kernel's transparent huge pages are off)";
  return std::string("huge pages: off (") + (t ? "GLIBC_TUNABLES is set: " + std::string(t) : std::string("not restarted")) + ")";
}

}  // namespace sg::cli
