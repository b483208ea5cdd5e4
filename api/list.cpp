// The schedule library as data (`stepgraph list`).
#include "api/api.hpp"
#include "core/dsl/library.hpp"

namespace sg::api {

std::vector<LibraryEntry> list() {
  std::vector<LibraryEntry> out;
  for (const auto& e : library()) {
    Session s;
    const Program* p = s.load_library(e.name);
    out.push_back({e.name, e.path, p ? one_line_description(p->header, e.name) : ""});
  }
  return out;
}

nlohmann::json to_json(const std::vector<LibraryEntry>& entries) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& e : entries) arr.push_back({{"name", e.name}, {"path", e.path}, {"description", e.description}});
  return arr;
}

}  // namespace sg::api
