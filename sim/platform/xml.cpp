// The xml platform kind: a SimGrid platform file, written as its path (then ",model=…"). Its
// recognition and parsing, its route table (filled from SimGrid's answers: set_table_routes), its
// host names and its part of describe(); loading the file into SimGrid is xml_simgrid.cpp.
#include <algorithm>
#include <stdexcept>

#include "core/base/input_file.hpp"
#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

// The parts the table names (sim/platform/kinds.cpp), declared with the table's types: a
// definition below that does not match them does not compile.
ParseWholeFn xml_parse;
DescribeFn xml_describe;
HostNameFn xml_host_name;

namespace {

// Xml: one route per ordered pair, as SimGrid answered.
struct TableRouting final : Routing {
  uint32_t hosts = 0;
  std::vector<uint64_t> offsets;  // hosts * hosts + 1
  std::vector<uint32_t> ids;
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& out) const override {
    uint64_t r = static_cast<uint64_t>(a) * hosts + b;
    out.insert(out.end(), ids.begin() + static_cast<std::ptrdiff_t>(offsets[r]), ids.begin() + static_cast<std::ptrdiff_t>(offsets[r + 1]));
  }
};

}  // namespace

std::optional<bool> xml_parse(const std::string& spec, size_t base, Platform& p, PlatformReport& rep) {
  // An XML file: the spec is the path, or the path then ",model=…".
  std::string lower = spec;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t xml_end = std::string::npos;
  if (lower.ends_with(".xml")) xml_end = spec.size();
  else if (size_t x = lower.find(".xml,"); x != std::string::npos) xml_end = x + 4;
  if (xml_end == std::string::npos) return std::nullopt;
  p.xml = trim(spec.substr(0, xml_end));
  Spec s;
  if (xml_end < spec.size() && !split_items(spec.substr(xml_end + 1), s, p.xml, rep, base + xml_end + 1)) return false;
  for (auto& [k, v] : s.items)
    if (k != "model") {
      const auto& [offset, length] = s.key_at[k];
      return rep.error_at(offset, length,
                          p.xml + ": an XML platform takes only model= (its hosts, links and speeds come from the file), not '" + k + "'");
    }
  Builder b(p.xml, s, p, rep);
  if (!b.model()) return false;
  // Read here, in both engines: a FIFO or a device is refused before SimGrid would read it for
  // ever, and the numbers are checked before SimGrid aborts on them.
  InputFile in = read_input_file(p.xml);
  if (!in.ok) return rep.error("platform file: " + in.error);
  if (!check_xml_numbers(p.xml, in.text, rep)) return false;
  p.spec = p.xml + ",model=" + model_name(p.model);
  p.speed = 0;
  return true;
}

void xml_describe(const Platform& p, std::string& s) {
  s += " hosts";
  s += " from ";
  s += p.xml;
}

std::string xml_host_name(const Platform& p, uint32_t h) { return h < p.host_names.size() ? p.host_names[h] : std::string(); }

}  // namespace sg::sim::detail

namespace sg::sim {

void set_table_routes(Platform& p, std::vector<LinkInfo> links, const std::vector<std::vector<XmlRoute>>& routes) {
  auto r = std::make_shared<detail::TableRouting>();
  const uint32_t n = static_cast<uint32_t>(routes.size());
  r->hosts = n;
  r->offsets.reserve(static_cast<size_t>(n) * n + 1);
  r->offsets.push_back(0);
  for (uint32_t a = 0; a < n; a++) {
    if (routes[a].size() != n) throw std::invalid_argument("set_table_routes: the route table is not square");
    for (uint32_t b = 0; b < n; b++) {
      for (uint32_t id : routes[a][b].links) {
        if (id >= links.size()) throw std::invalid_argument("set_table_routes: link id out of range");
        r->ids.push_back(id);
      }
      r->offsets.push_back(r->ids.size());
    }
  }
  p.links = std::move(links);
  p.hosts = n;
  p.routing = r;
}

}  // namespace sg::sim
