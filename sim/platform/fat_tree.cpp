// The `fat-tree` platform kind: SimGrid's fat tree (FatTreeZone), written with SimGrid's
// parameters or as a leaf-spine tree. Its spec keys and their parsing, its links and d-mod-k
// routes, its part of describe(); the zone is fat_tree_simgrid.cpp.
#include <cmath>
#include <stdexcept>

#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

// The parts the table names (sim/platform/kinds.cpp), declared with the table's types: a
// definition below that does not match them does not compile.
ParseFn fat_tree_parse;
DescribeFn fat_tree_describe;

namespace {

// Fat tree (FatTreeZone): the node and link structure SimGrid builds, and its d-mod-k routing.
struct FtNode {
  int64_t id = 0;  // SimGrid's id (hosts 0…H-1, switches counting down from 2H-1), used in names
  uint32_t level = 0, position = 0;
  std::vector<uint32_t> label;
  std::vector<int32_t> children, parents;  // FtLink indices per port, -1: none
};
struct FtLink {
  uint32_t up_node = 0, down_node = 0;  // node indices
  uint32_t up_link = 0, down_link = 0;  // Platform link ids
};
struct FatTreeRouting final : Routing {
  uint32_t levels = 0;
  std::vector<uint32_t> down, up, nports;  // num_children_per_node_, num_parents_per_node_, num_port_lower_level_
  std::vector<FtNode> nodes;               // hosts first, then switches level by level
  std::vector<FtLink> ftlinks;
  std::vector<uint32_t> loopback;  // per host

  bool is_in_sub_tree(const FtNode& root, const FtNode& node) const {
    if (root.level <= node.level) return false;
    for (uint32_t i = 0; i < node.level; i++)
      if (root.label[i] != node.label[i]) return false;
    for (uint32_t i = root.level; i < levels; i++)
      if (root.label[i] != node.label[i]) return false;
    return true;
  }

  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    if (a == b) {
      ids.push_back(loopback[a]);
      return;
    }
    const FtNode& source = nodes[a];
    const FtNode& destination = nodes[b];
    const FtNode* current = &source;
    while (!is_in_sub_tree(*current, destination)) {  // up, d-mod-k
      uint64_t d = destination.position;
      for (uint32_t i = 0; i < current->level; i++) d /= up[i];
      uint64_t k = static_cast<uint64_t>(up[current->level]) * nports[current->level];
      d = d % k;
      const FtLink& l = ftlinks[static_cast<size_t>(current->parents[d])];
      ids.push_back(l.up_link);
      current = &nodes[l.up_node];
    }
    // Down. As in SimGrid, the inner loop goes on over the new node's ports after a step down.
    size_t guard = 0;
    while (current != &destination) {
      if (current->level == 0 || ++guard > 4 * (levels + 1))
        throw std::logic_error("fat-tree: no route down from " + std::to_string(current->id));
      uint32_t d = source.position % nports[current->level - 1];
      for (uint32_t i = d * down[current->level - 1]; i < current->children.size(); i++) {
        if (i % down[current->level - 1] == destination.label[current->level - 1]) {
          const FtLink& l = ftlinks[static_cast<size_t>(current->children[i])];
          ids.push_back(l.down_link);
          current = &nodes[l.down_node];
        }
      }
    }
  }
};

// build(): the keys, the sizes and the normalised spec, then the links and the routes.
class FatTreeBuilder final : public Builder {
 public:
  using Builder::Builder;
  bool build();
};

bool FatTreeBuilder::build() {
  if (!check_keys(
          {"levels", "down", "up", "links", "leaves", "per_leaf", "oversub", "bw", "lat", "speed", "loopback", "loopback_lat", "model"},
          false))
    return false;
  auto& ft = p_.fat_tree;
  bool general = has("levels") || has("down") || has("up") || has("links");
  bool short_form = has("leaves") || has("per_leaf") || has("oversub");
  if (general && short_form)
    return fail("give either levels/down/up/links (SimGrid's fat tree) or leaves/per_leaf/oversub (a leaf-spine tree), not both");
  Parts sized;
  if (general) {
    if (!has("down")) return fail("down= is required with levels/up/links (children per node, bottom level first, e.g. down=8x4)");
    if (!list("down", ft.down)) return false;
    uint64_t levels = ft.down.size();
    bool given = false;
    if (!count("levels", levels, given)) return false;
    if (levels != ft.down.size()) return fail_key("levels", "down= has " + std::to_string(ft.down.size()) + " entries");
    ft.up.assign(levels, 1);
    ft.links.assign(levels, 1);
    if (has("up") && !list("up", ft.up)) return false;
    if (has("links") && !list("links", ft.links)) return false;
    if (ft.up.size() != levels) return fail_key("up", "needs " + std::to_string(levels) + " entries, one per level");
    if (ft.links.size() != levels) return fail_key("links", "needs " + std::to_string(levels) + " entries, one per level");
    sized = {{"levels", std::to_string(levels)}, {"down", join_list(ft.down)}, {"up", join_list(ft.up)}, {"links", join_list(ft.links)}};
  } else {
    uint64_t per_leaf = 16, leaves = 0;
    bool g1 = false, g2 = false;
    if (!count("per_leaf", per_leaf, g1) || !count("leaves", leaves, g2)) return false;
    if (!g2) leaves = cdiv(std::max<uint32_t>(p_.ranks, 1), per_leaf);
    double oversub = 1;
    std::string why;
    if (has("oversub")) {
      double v = 0;
      std::string unit;
      if (!split_number(s_.given.at("oversub"), v, unit, why)) return fail_key("oversub", why);
      if (!unit.empty() || v <= 0) return fail_key("oversub", "a positive number (hosts per leaf / spine switches)");
      oversub = v;
    }
    double spines_d = static_cast<double>(per_leaf) / oversub;
    uint64_t spines = static_cast<uint64_t>(std::llround(spines_d));
    if (spines < 1 || std::fabs(spines_d - static_cast<double>(spines)) > 1e-9 * spines_d)
      return fail_key("oversub", "per_leaf / oversub = " + std::to_string(per_leaf) + " / " + fmt_num(oversub) +
                                     " must be a whole number of spine switches");
    if (leaves > kMaxHosts || spines > kMaxHosts) return fail("too many switches");
    ft.down = {static_cast<uint32_t>(per_leaf), static_cast<uint32_t>(leaves)};
    ft.up = {1, static_cast<uint32_t>(spines)};
    ft.links = {1, 1};
    sized = {{"leaves", std::to_string(leaves)}, {"per_leaf", std::to_string(per_leaf)}};
    if (has("oversub")) sized.emplace_back("oversub", s_.given.at("oversub"));
  }
  if (!bw("bw", "100Gbps", ft.bw) || !time("lat", "1us", ft.lat)) return false;
  if (!common(1e12, ft.bw)) return false;
  uint64_t hosts = 1;
  for (uint32_t d : ft.down) {
    hosts *= d;
    if (hosts > kMaxHosts) return fail("too many hosts");
  }
  if (!enough_hosts(hosts)) return false;
  sized.emplace_back("bw", given_or("bw", "100Gbps"));
  sized.emplace_back("lat", given_or("lat", "1us"));
  normalise(sized);

  // FatTreeZone's construction, step by step.
  auto r = std::make_shared<detail::FatTreeRouting>();
  const uint32_t L = static_cast<uint32_t>(ft.down.size());
  r->levels = L;
  r->down = ft.down;
  r->up = ft.up;
  r->nports = ft.links;
  const uint64_t H = hosts;
  std::vector<uint64_t> nbl(L + 1);
  nbl[0] = H;
  uint64_t total = H;
  for (uint32_t i = 0; i < L; i++) {
    uint64_t n = 1;
    for (uint32_t j = 0; j <= i; j++) n *= ft.up[j];
    for (uint32_t j = i + 1; j < L; j++) n *= ft.down[j];
    nbl[i + 1] = n;
    total += n;
    if (total > 4 * kMaxHosts) return fail("too many switches");
  }
  {
    uint64_t nlinks = H;  // loopbacks
    for (uint32_t i = 0; i < L; i++) nlinks += 2 * nbl[i] * ft.up[i] * ft.links[i];
    if (!not_too_many_links(nlinks)) return false;
  }
  r->nodes.resize(total);
  r->loopback.resize(H);
  for (uint32_t h = 0; h < H; h++) {
    r->loopback[h] = add_loopback(h);  // created in the leaf callback, before the tree's links
    auto& n = r->nodes[h];
    n.id = h;
    n.level = 0;
    n.position = h;
    n.parents.assign(static_cast<size_t>(ft.up[0]) * ft.links[0], -1);
    n.label.assign(L, 0);
  }
  {
    int64_t k = 2 * static_cast<int64_t>(H);
    size_t idx = H;
    for (uint32_t i = 0; i < L; i++)
      for (uint64_t j = 0; j < nbl[i + 1]; j++) {
        k--;
        auto& n = r->nodes[idx++];
        n.id = static_cast<int32_t>(k);
        n.level = i + 1;
        n.position = static_cast<uint32_t>(j);
        n.children.assign(static_cast<size_t>(ft.down[i]) * ft.links[i], -1);
        if (i != L - 1) n.parents.assign(static_cast<size_t>(ft.up[i + 1]) * ft.links[i + 1], -1);
        n.label.assign(L, 0);
      }
  }
  {  // generate_labels
    size_t k = 0;
    std::vector<uint32_t> max_label(L), current(L);
    for (uint32_t i = 0; i <= L; i++) {
      std::fill(current.begin(), current.end(), 0);
      for (uint32_t j = 0; j < L; j++) max_label[j] = j + 1 > i ? ft.down[j] : ft.up[j];
      for (uint64_t j = 0; j < nbl[i]; j++) {
        r->nodes[k].label = current;
        bool remainder = true;
        uint32_t pos = 0;
        while (remainder && pos < L) {
          ++current[pos];
          if (current[pos] >= max_label[pos]) {
            current[pos] = 0;
            remainder = true;
            ++pos;
          } else {
            pos = 0;
            remainder = false;
          }
        }
        k++;
      }
    }
  }
  {  // connect_node_to_parents, level by level
    uint64_t unique_id = 0;
    std::vector<uint64_t> level_start(L + 2, 0);
    for (uint32_t i = 0; i <= L; i++) level_start[i + 1] = level_start[i] + nbl[i];
    auto related = [&](const detail::FtNode& parent, const detail::FtNode& child) {
      if (parent.level != child.level + 1) return false;
      for (uint32_t i = 0; i < L; i++)
        if (parent.label[i] != child.label[i] && i + 1 != parent.level) return false;
      return true;
    };
    for (uint32_t lvl = 0; lvl < L; lvl++)
      for (uint64_t c = level_start[lvl]; c < level_start[lvl + 1]; c++) {
        auto& child = r->nodes[c];
        for (uint64_t pi = level_start[lvl + 1]; pi < level_start[lvl + 2]; pi++) {
          auto& parent = r->nodes[pi];
          if (!related(parent, child)) continue;
          for (uint32_t j = 0; j < ft.links[lvl]; j++) {
            uint32_t parent_port = child.label[lvl] + j * ft.down[lvl];
            uint32_t child_port = parent.label[lvl] + j * ft.up[lvl];
            std::string name = "link_from_" + std::to_string(child.id);
            name += '_';
            name += std::to_string(parent.id);
            name += '_';
            name += std::to_string(unique_id++);
            detail::FtLink l;
            l.up_node = static_cast<uint32_t>(pi);
            l.down_node = static_cast<uint32_t>(c);
            l.up_link = add_duplex(name, ft.bw, ft.lat);
            l.down_link = l.up_link + 1;
            int32_t li = static_cast<int32_t>(r->ftlinks.size());
            r->ftlinks.push_back(l);
            parent.children.at(parent_port) = li;
            child.parents.at(child_port) = li;
          }
        }
      }
  }
  p_.routing = r;
  return true;
}

}  // namespace

bool fat_tree_parse(const std::string& name, Spec& s, Platform& p, PlatformReport& rep) { return FatTreeBuilder(name, s, p, rep).build(); }

void fat_tree_describe(const Platform& p, std::string& s) { describe_hops(s, p.fat_tree.bw, p.fat_tree.lat); }

}  // namespace sg::sim::detail
