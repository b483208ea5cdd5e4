// Symbolic chunk values: a multiset of atoms, stored as runs. An atom is d(r, c) (rank r's
// contribution to chunk c), x(i) (item i), A(i, m, mask) (an attention tile), or Gq / Gkv
// (attention gradients); every atom carries the buffer it comes from. A run is one atom family
// over a contiguous range of one coordinate with one count, so the partial sums of a ring or
// a recursive-doubling all-reduce stay one or a few runs however large N is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/ast.hpp"

namespace sg {

class StepGraph;

// GradV: the V half of a gradient where K and V are apart (dV), told from dK's GradKV.
enum class AtomKind : uint8_t { Contrib, Item, Attn, GradQ, GradKV, GradV };

struct Run {
  AtomKind kind = AtomKind::Contrib;
  Mask mask = Mask::None;   // Attn / Grad atoms
  uint32_t buf = 0;         // the buffer the atom family belongs to
  uint32_t fixed = 0;       // Contrib: chunk c; Item: 0; Attn/GradQ: i; GradKV: m
  uint32_t lo = 0, hi = 0;  // the varying coordinate: Contrib: rank; Item: item; Attn/GradQ: m; GradKV: i
  uint32_t count = 1;
  bool same_family(const Run& o) const { return kind == o.kind && mask == o.mask && buf == o.buf && fixed == o.fixed; }
  bool operator==(const Run&) const = default;
};

struct Value {
  std::vector<Run> runs;  // normalised: sorted, non-overlapping within a family, maximal
  bool defined = false;   // false: never written (undefined data)
  bool operator==(const Value&) const = default;

  static Value contrib(uint32_t buf, uint32_t rank, uint32_t chunk);
  static Value item(uint32_t buf, uint32_t i);
  static Value empty();  // defined, no atoms
  bool is_empty() const { return runs.empty(); }
  // The single item x(i) of buffer buf this value holds exactly, or -1.
  int64_t single_item(uint32_t buf) const;
  // The single item this value holds exactly, of whichever buffer it was initialised in (an item
  // keeps its identity wherever it is copied or received): -1, or the item with its buffer.
  int64_t single_item_any(uint32_t& buf) const;
  uint64_t atoms() const;  // number of atoms counted with multiplicity
};

// a ⊕ b (multiset sum). The result is defined only when both are.
Value add(const Value& a, const Value& b);
void add_into(Value& a, const Value& b);
// The runs of (a − b) with positive count (what a has beyond b).
std::vector<Run> minus(const Value& a, const Value& b);
// Normalise a list of runs (merge overlapping and adjacent ones).
std::vector<Run> normalise(std::vector<Run> runs);

// Human text: "d(0..3, 2) + x(5)"; buffer names are shown when they differ from `home`.
std::string describe_run(const Run& r, const StepGraph& g, int64_t home_buf = -1);
std::string describe_runs(const std::vector<Run>& runs, const StepGraph& g, int64_t home_buf = -1, size_t max = 6);
std::string describe_value(const Value& v, const StepGraph& g, int64_t home_buf = -1);

}  // namespace sg
