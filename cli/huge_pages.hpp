// Transparent huge pages for the CLI's process (cli/huge_pages.cpp says why and what it gains).
#pragma once
#include <string>

namespace sg::cli {

// Starts this command again (execv of /proc/self/exe, same arguments) with glibc's tunable
// glibc.malloc.hugetlb=1 set, once; returns (and the command runs as it is) where that is not
// possible, not useful, or STEPGRAPH_HUGE_PAGES=0.
void restart_with_huge_pages(char** argv);
// One line for `stepgraph env`: whether this process runs with them, and if not why.
std::string huge_pages_state();

}  // namespace sg::cli
