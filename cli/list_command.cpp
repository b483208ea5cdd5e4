// `stepgraph list`: the schedule library, one line each (or JSON).
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/dsl/library.hpp"
#include "core/dsl/session.hpp"

namespace sg::cli {

int cmd_list(bool json) {
  nlohmann::json arr = nlohmann::json::array();
  size_t width = 0;
  for (const auto& e : library()) width = std::max(width, e.name.size());
  for (const auto& e : library()) {
    Session s;
    const Program* p = s.load_library(e.name);
    std::string desc = p ? one_line_description(p->header, e.name) : "";
    if (json) {
      arr.push_back({{"name", e.name}, {"path", e.path}, {"description", desc}});
    } else {
      std::cout << e.name << std::string(width + 2 - e.name.size(), ' ') << desc << "\n";
    }
  }
  if (json) std::cout << arr.dump(2) << "\n";
  return 0;
}

}  // namespace sg::cli
