// The table of platform kinds: the one place that lists them. parse_platform, kind_name,
// Platform::describe, Platform::host_name (sim/platform.cpp) and build_simgrid
// (sim/simgrid_platform.cpp) find a kind's parts here. Adding a kind (docs/sim.md, "Adding a
// platform kind"): its PlatformKind value, sim/platform/<kind>.cpp, sim/platform/<kind>_simgrid.cpp,
// and here the declaration of its parts and its line of the table.
#include "sim/platform/kind.hpp"
#include "sim/platform/presets.hpp"

namespace sg::sim::detail {

// Each kind's parts: defined in sim/platform/<kind>.cpp, the zone in sim/platform/<kind>_simgrid.cpp.
ParseFn star_parse;
DescribeFn star_describe;
ZoneFn star_zone;
ParseFn fat_tree_parse;
DescribeFn fat_tree_describe;
ZoneFn fat_tree_zone;
ParseFn torus_parse;
DescribeFn torus_describe;
ZoneFn torus_zone;
ParseFn dragonfly_parse;
DescribeFn dragonfly_describe;
ZoneFn dragonfly_zone;
ParseFn nodes_parse;
DescribeFn nodes_describe;
HostNameFn nodes_host_name;
ZoneFn nodes_zone;
ParseWholeFn xml_parse;
DescribeFn xml_describe;
HostNameFn xml_host_name;
ZoneFn xml_zone;

#ifdef STEPGRAPH_HAVE_SIMGRID
#define ZONE(f) f
#else
#define ZONE(f) nullptr  // a build without SimGrid compiles no zone builder
#endif

namespace {

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const Preset& p : presets()) {
    out.emplace_back(p.name);
    for (const char* a : p.also) out.emplace_back(a);
  }
  return out;
}

}  // namespace

const std::vector<Kind>& kinds() {
  // In PlatformKind's order, which is also the order "unknown platform" lists them in.
  static const std::vector<Kind> table = {
      {.kind = PlatformKind::Star, .name = "star", .parse = star_parse, .describe = star_describe, .zone = ZONE(star_zone)},
      {.kind = PlatformKind::FatTree,
       .name = "fat-tree",
       .also = {"fattree", "fat_tree"},
       .parse = fat_tree_parse,
       .describe = fat_tree_describe,
       .zone = ZONE(fat_tree_zone)},
      {.kind = PlatformKind::Torus, .name = "torus", .parse = torus_parse, .describe = torus_describe, .zone = ZONE(torus_zone)},
      {.kind = PlatformKind::Dragonfly,
       .name = "dragonfly",
       .parse = dragonfly_parse,
       .describe = dragonfly_describe,
       .zone = ZONE(dragonfly_zone)},
      {.kind = PlatformKind::Nodes,
       .name = "nodes",
       .also = preset_names(),  // dgx-h100 and the others (sim/platform/presets.hpp)
       .listed_as = "nodes (or a preset: dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72)",
       .parse = nodes_parse,
       .describe = nodes_describe,
       .host_name = nodes_host_name,
       .zone = ZONE(nodes_zone)},
      {.kind = PlatformKind::Xml,
       .name = "xml",
       .listed_as = "a SimGrid .xml file",
       .parse_whole = xml_parse,
       .describe = xml_describe,
       .host_name = xml_host_name,
       .zone = ZONE(xml_zone)},
  };
  return table;
}

#undef ZONE

const Kind* find_kind(PlatformKind k) {
  for (const Kind& kind : kinds())
    if (kind.kind == k) return &kind;
  return nullptr;
}

}  // namespace sg::sim::detail

namespace sg::sim {

const char* kind_name(PlatformKind k) {
  const detail::Kind* kind = detail::find_kind(k);
  return kind ? kind->name : "?";
}

}  // namespace sg::sim
