// The `torus` platform kind: SimGrid's torus (TorusZone). Its spec keys (and the bare AxBxC
// dimensions) and their parsing, its sizing from the rank count, its links and dimension-order
// routes, its part of describe(); the zone is torus_simgrid.cpp.
#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

// The parts the table names (sim/platform/kinds.cpp), declared with the table's types: a
// definition below that does not match them does not compile.
ParseFn torus_parse;
DescribeFn torus_describe;

namespace {

// Torus (TorusZone::get_local_route): host i owns links i*(1+2D) (loopback), then per dimension
// j the link to its neighbour +1 in j: up at +1+2j, down at +2+2j.
struct TorusRouting final : Routing {
  std::vector<uint64_t> dims, prefix;  // prefix[j] = dims[0] * … * dims[j-1]
  uint64_t stride() const { return 1 + 2 * dims.size(); }
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& ids) const override {
    if (a == b) {
      ids.push_back(static_cast<uint32_t>(a * stride()));
      return;
    }
    const size_t dsize = dims.size();
    uint64_t current = a;
    while (current != b) {
      uint64_t next = 0, link = 0;
      uint64_t dim_product = 1;
      for (size_t j = 0; j < dsize; j++) {
        const uint64_t cur_dim = dims[j];
        if ((current / dim_product) % cur_dim != (b / dim_product) % cur_dim) {
          // The direction is decided from the source's coordinate, as SimGrid does.
          const uint64_t my = (a / prefix[j]) % cur_dim, target = (b / prefix[j]) % cur_dim;
          if ((target > my && target <= my + cur_dim / 2) || (my > cur_dim / 2 && (my + cur_dim / 2) % cur_dim >= target)) {
            next = (current / dim_product) % cur_dim == cur_dim - 1 ? current + dim_product - dim_product * cur_dim : current + dim_product;
            link = current * stride() + 1 + 2 * j;  // the current node's link, up
          } else {
            next = (current / dim_product) % cur_dim == 0 ? current - dim_product + dim_product * cur_dim : current - dim_product;
            link = next * stride() + 2 + 2 * j;  // the next node's link, down
          }
          break;
        }
        dim_product *= cur_dim;
      }
      ids.push_back(static_cast<uint32_t>(link));
      current = next;
    }
  }
};

// The torus dimensions sized for n hosts: the smallest largest dimension, then the fewest hosts;
// three dimensions, largest first, 1s dropped.
std::vector<uint32_t> torus_dims_for(uint64_t n) {
  uint64_t best_a = 0, best_b = 0, best_c = 0, best_prod = 0;
  for (uint64_t a = 1;; a++) {
    if (a * a * a < n) continue;
    for (uint64_t b = 1; b <= a; b++)
      for (uint64_t c = 1; c <= b; c++) {
        uint64_t p = a * b * c;
        if (p >= n && (best_prod == 0 || p < best_prod)) {
          best_prod = p;
          best_a = a, best_b = b, best_c = c;
        }
      }
    break;
  }
  std::vector<uint32_t> d;
  for (uint64_t v : {best_a, best_b, best_c})
    if (v > 1) d.push_back(static_cast<uint32_t>(v));
  if (d.empty()) d.push_back(1);
  return d;
}

// build(): the keys, the sizes and the normalised spec, then the links and the routes.
class TorusBuilder final : public Builder {
 public:
  using Builder::Builder;
  bool build();
};

bool TorusBuilder::build() {
  if (!check_keys({"dims", "bw", "lat", "speed", "loopback", "loopback_lat", "model"}, true)) return false;
  auto& t = p_.torus;
  std::string dims_text;
  for (auto& [k, v] : s_.items)
    if (v.empty()) {
      if (!dims_text.empty() || has("dims")) return fail_at_key(k, "the dimensions are given twice ('" + k + "')");
      dims_text = k;
    }
  if (has("dims")) {
    dims_text = s_.given.at("dims");
    s_.key_at[dims_text] = s_.at.at("dims");  // an error about the dimensions points at dims='s value
  }
  if (!dims_text.empty()) {
    std::string why;
    if (!parse_list(dims_text, t.dims, why)) return fail_at_key(dims_text, "dimensions " + why);
  } else {
    t.dims = torus_dims_for(std::max<uint32_t>(p_.ranks, 1));
  }
  uint64_t hosts = 1;
  for (uint32_t d : t.dims) {
    hosts *= d;
    if (hosts > kMaxHosts) return fail("too many hosts");
  }
  if (!bw("bw", "100Gbps", t.bw) || !time("lat", "1us", t.lat)) return false;
  if (!common(1e12, t.bw) || !enough_hosts(hosts) || !not_too_many_links(hosts * (1 + 2 * t.dims.size()))) return false;
  normalise({{"", join_list(t.dims)}, {"bw", given_or("bw", "100Gbps")}, {"lat", given_or("lat", "1us")}});
  auto r = std::make_shared<detail::TorusRouting>();
  r->dims.assign(t.dims.begin(), t.dims.end());
  uint64_t prefix = 1;
  for (uint32_t d : t.dims) {
    r->prefix.push_back(prefix);
    prefix *= d;
  }
  const size_t D = t.dims.size();
  for (uint64_t i = 0; i < hosts; i++) {
    add_loopback(static_cast<uint32_t>(i));
    uint64_t dim_product = 1;
    for (size_t j = 0; j < D; j++) {
      uint64_t cur = t.dims[j];
      uint64_t neighbour = (i / dim_product) % cur == cur - 1 ? i - (cur - 1) * dim_product : i + dim_product;
      std::string name = "torus_link_from_" + std::to_string(i);
      name += "_to_";
      name += std::to_string(neighbour);
      add_duplex(name, t.bw, t.lat);
      dim_product *= cur;
    }
  }
  p_.routing = r;
  return true;
}

}  // namespace

bool torus_parse(const std::string& name, Spec& s, Platform& p, PlatformReport& rep) { return TorusBuilder(name, s, p, rep).build(); }

void torus_describe(const Platform& p, std::string& s) { describe_hops(s, p.torus.bw, p.torus.lat); }

}  // namespace sg::sim::detail
