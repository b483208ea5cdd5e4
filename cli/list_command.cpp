// `stepgraph list`: the schedule library, one line each (or JSON).
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/api.hpp"
#include "cli/commands.hpp"

namespace sg::cli {

int cmd_list(bool json) {
  std::vector<api::LibraryEntry> entries = api::list();
  if (json) {
    std::cout << api::to_json(entries).dump(2) << "\n";
    return 0;
  }
  size_t width = 0;
  for (const auto& e : entries) width = std::max(width, e.name.size());
  for (const auto& e : entries) std::cout << e.name << std::string(width + 2 - e.name.size(), ' ') << e.description << "\n";
  return 0;
}

}  // namespace sg::cli
