// Attention items in the layouts people declare (exec/attention/attention_layout.hpp): a buffer's
// `shape [...] layout LETTERS` read in its role, and every element moved to the place the
// kernels' layout [2][batch][heads][rows][width] gives it, and back. The positions here are
// computed by the test from the letters alone (row-major over the declared extents), not by the
// code under test.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "core/graph/layout.hpp"
#include "exec/attention/attention_layout.hpp"

namespace {

using namespace sg;
using namespace sg::exec;

BufferInfo declared(const std::vector<uint64_t>& shape, const std::string& layout) {
  BufferInfo b;
  b.name = std::string(1, 'X');  // (GCC 12 -Wrestrict misfires on assigning a literal here)
  b.shape = shape;
  b.layout = layout;
  b.shape_loc = Loc{1, 7, 12};  // where a refusal points: the layout, else the shape
  b.layout_loc = Loc{1, 7, 30};
  return b;
}

// Where element (p, b, h, s, d) of an item sits in a chunk laid out as `letters` over the
// extents `ext` (one per letter, 2d not fused): row-major.
uint64_t place(const std::string& letters, const std::map<char, uint64_t>& ext, const std::map<char, uint64_t>& at) {
  uint64_t off = 0;
  for (char c : letters) off = off * ext.at(c) + at.at(c);
  return off;
}

struct Case {
  std::string letters;          // as declared
  std::vector<uint64_t> shape;  // the declared extents (2d may be fused)
  AttnRole role;
  uint64_t known_dim;
};

// Reads the layout, then checks every element lands where the kernels expect it, and back.
void moves_every_element(const Case& c, uint32_t B, uint32_t H, uint32_t S, uint32_t D) {
  INFO("layout " << c.letters);
  BufferInfo b = declared(c.shape, c.letters);
  ItemDims dims;
  ItemLayout L;
  Diagnostics diags;
  REQUIRE(read_item_layout(b, c.role, c.known_dim, dims, L, diags));
  CHECK(diags.all().empty());
  CHECK(dims == ItemDims{B, H, S, D});
  const bool two = c.role == AttnRole::KV || c.role == AttnRole::DKV;
  const uint32_t parts = two ? 2 : 1;
  const uint32_t width = L.width, kernel_width = c.role == AttnRole::O ? D + 1 : D;
  CHECK(L.lse == (c.role == AttnRole::O && width == D + 1));
  std::string letters = c.letters;
  std::map<char, uint64_t> ext{{'2', 2}, {'b', B}, {'h', H}, {'s', S}, {'d', width}};
  uint64_t chunk_elems = uint64_t{parts} * B * H * S * width;
  std::vector<float> chunk(chunk_elems), kernel(uint64_t{parts} * B * H * S * kernel_width, -1.0f);
  auto code = [](uint32_t p, uint32_t bi, uint32_t h, uint32_t s, uint32_t d) {
    return static_cast<float>((((p * 8 + bi) * 8 + h) * 64 + s) * 32 + d);
  };
  for (uint32_t p = 0; p < parts; ++p)
    for (uint32_t bi = 0; bi < B; ++bi)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t s = 0; s < S; ++s)
          for (uint32_t d = 0; d < width; ++d)
            chunk[place(letters, ext, {{'2', p}, {'b', bi}, {'h', h}, {'s', s}, {'d', d}})] = code(p, bi, h, s, d);
  TileShape t{B, H, S, S, D};
  relayout_host(relayout_blocks(t, L, parts, 4, kernel_width, true), reinterpret_cast<unsigned char*>(kernel.data()),
                reinterpret_cast<const unsigned char*>(chunk.data()));
  uint64_t wrong = 0;
  for (uint32_t p = 0; p < parts; ++p)
    for (uint32_t bi = 0; bi < B; ++bi)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t s = 0; s < S; ++s)
          for (uint32_t d = 0; d < kernel_width; ++d) {
            float got = kernel[((((uint64_t{p} * B + bi) * H + h) * S + s) * kernel_width) + d];
            float want = d < width ? code(p, bi, h, s, d) : -1.0f;  // an O without lse leaves the kernels' lse alone
            wrong += got != want;
          }
  CHECK(wrong == 0);
  std::vector<float> back(chunk_elems, -2.0f);
  relayout_host(relayout_blocks(t, L, parts, 4, kernel_width, false), reinterpret_cast<unsigned char*>(back.data()),
                reinterpret_cast<const unsigned char*>(kernel.data()));
  CHECK(back == chunk);
}

}  // namespace

TEST_CASE("q, kv and O items in the layouts people use land where the kernels read them", "[attention][layout]") {
  const uint32_t B = 2, H = 3, S = 5, D = 4;
  // q: flash-attn's bshd, Megatron's sbhd, the kernels' own bhsd, batch left out (shd).
  moves_every_element({"bshd", {B, S, H, D}, AttnRole::Q, 0}, B, H, S, D);
  moves_every_element({"sbhd", {S, B, H, D}, AttnRole::Q, 0}, B, H, S, D);
  moves_every_element({"bhsd", {B, H, S, D}, AttnRole::Q, 0}, B, H, S, D);
  moves_every_element({"shd", {S, H, D}, AttnRole::Q, 0}, 1, H, S, D);
  // kv: flash-attn's packed bs2hd, TransformerEngine's bsh2d, the 2 first, Megatron's fused
  // [s, b, h, 2·d] (sbh2d with 2d as one extent).
  moves_every_element({"bs2hd", {B, S, 2, H, D}, AttnRole::KV, 0}, B, H, S, D);
  moves_every_element({"bsh2d", {B, S, H, 2, D}, AttnRole::KV, 0}, B, H, S, D);
  moves_every_element({"2bhsd", {2, B, H, S, D}, AttnRole::KV, 0}, B, H, S, D);
  moves_every_element({"sbh2d", {S, B, H, 2 * D}, AttnRole::KV, 0}, B, H, S, D);
  moves_every_element({"sh2d", {S, H, 2 * D}, AttnRole::DKV, 0}, 1, H, S, D);
  // O: rows of dim (exec keeps the lse beside) or dim + 1 (the lse last), told apart by dim.
  moves_every_element({"bshd", {B, S, H, D}, AttnRole::O, D}, B, H, S, D);
  moves_every_element({"sbhd", {S, B, H, D + 1}, AttnRole::O, D}, B, H, S, D);
}

TEST_CASE("a layout the kernels already use is read in place; one that is not is relaid", "[attention][layout]") {
  ItemDims d;
  ItemLayout L;
  Diagnostics err;
  REQUIRE(read_item_layout(declared({3, 5, 4}, "hsd"), AttnRole::Q, 0, d, L, err));
  CHECK(L.kernel);
  REQUIRE(read_item_layout(declared({3, 5, 4}, ""), AttnRole::Q, 0, d, L, err));  // no layout: the kernels' order
  CHECK(L.kernel);
  REQUIRE(read_item_layout(declared({1, 5, 3, 4}, "bshd"), AttnRole::Q, 0, d, L, err));  // batch 1: one plane per head
  CHECK(!L.kernel);
  REQUIRE(read_item_layout(declared({5, 1, 4}, "shd"), AttnRole::Q, 0, d, L, err));  // one head: rows follow rows
  CHECK(L.kernel);
  REQUIRE(read_item_layout(declared({3, 5, 4}, "hsd"), AttnRole::O, 4, d, L, err));  // O without its lse is never in place
  CHECK(!L.kernel);
  CHECK(!L.lse);
}

TEST_CASE("layouts that cannot be read are refused with the reason", "[attention][layout]") {
  // The letters themselves (elaborate reports these at the layout).
  CHECK(layout_problem("bshd", 4).empty());
  CHECK(layout_problem("sbh2d", 4).empty());  // 2d fused
  CHECK(layout_problem("bsxd", 4).find("layout letter 'x' is none of") != std::string::npos);
  CHECK(layout_problem("bssd", 4) == "layout letter 's' appears twice");
  CHECK(layout_problem("bhd", 3).find("at least the rows (s)") != std::string::npos);
  CHECK(layout_problem("bsdh", 4).find("ends in d") != std::string::npos);
  CHECK(layout_problem("bshd", 3).find("has 4 letters but the shape 3 extents") != std::string::npos);
  // What a letter means for the buffer's role (exec reports these at the layout).
  ItemDims d;
  ItemLayout L;
  // Each refusal is one error at the buffer's layout declaration.
  auto refusal = [&](const BufferInfo& b, AttnRole r, uint64_t known_dim) {
    Diagnostics diags;
    CHECK(!read_item_layout(b, r, known_dim, d, L, diags));
    REQUIRE(diags.all().size() == 1);
    CHECK(diags.all()[0].loc.line == 7);
    CHECK(diags.all()[0].loc.col == 30);
    return diags.all()[0].message;
  };
  std::string err;
  err = refusal(declared({2, 5, 3, 4}, "2shd"), AttnRole::Q, 0);
  CHECK(err.find("has a 2, which only kv and dkv items have") != std::string::npos);
  err = refusal(declared({5, 3, 4}, "shd"), AttnRole::KV, 0);
  CHECK(err.find("has no 2 (K then V)") != std::string::npos);
  err = refusal(declared({5, 3, 3, 4}, "s2hd"), AttnRole::KV, 0);
  CHECK(err.find("has a 2-axis of 3") != std::string::npos);
  err = refusal(declared({5, 3, 7}, "sh2d"), AttnRole::KV, 0);
  CHECK(err.find("has a last extent of 7, not 2·dim") != std::string::npos);
  err = refusal(declared({5, 3, 12}, "shd"), AttnRole::Bundle, 0);
  CHECK(err.find("exec's own row format") != std::string::npos);
  err = refusal(declared({5, 3, 4}, "shd"), AttnRole::O, 0);
  CHECK(err.find("nothing else says dim") != std::string::npos);
  err = refusal(declared({5, 3, 7}, "shd"), AttnRole::O, 4);
  CHECK(err.find("has rows of 7, neither dim = 4 nor dim + 1") != std::string::npos);
}
