// The schedule library (schedules/*.sched), embedded into the binary at build time so library
// schedules can be used by name from anywhere (`stepgraph compile ring_allreduce -n 8`).
#pragma once
#include <string>
#include <vector>

namespace sg {

struct LibraryEntry {
  std::string name;  // file stem, also the schedule's name
  std::string path;  // "schedules/NAME.sched", as diagnostics print it
  std::string text;
};

// Entries sorted by name. STEPGRAPH_LIBRARY=DIR reads DIR/*.sched instead (for development).
const std::vector<LibraryEntry>& library();
const LibraryEntry* find_library(const std::string& name);

// The one-line description of a schedule from its header comment: the text after
// "NAME — " (or " - ", ": ") on the first non-empty line, else that line.
std::string one_line_description(const std::string& header, const std::string& name);

}  // namespace sg
