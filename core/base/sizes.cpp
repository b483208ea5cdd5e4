#include "core/base/sizes.hpp"

#include <cctype>
#include <cstdio>

namespace sg {

namespace {
// One table for every integer, sizes and counts alike (docs/language.md, "Lexical"): K M G T and
// KB MB GB TB are the SI powers of 1000 (flops, bandwidths, a disk's bytes); KiB … TiB and Ki … Ti
// the powers of 1024, the latter for counts: a sequence length of 128Ki is 131,072, what the
// users of attention schedules mean by "128K" (and what the library's defaults say).
constexpr SizeSuffix kSuffixes[] = {
    {"B", 1},           {"KiB", 1ull << 10},      {"MiB", 1ull << 20},     {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
    {"Ki", 1ull << 10}, {"Mi", 1ull << 20},       {"Gi", 1ull << 30},      {"Ti", 1ull << 40},  {"K", 1000},
    {"M", 1000000},     {"G", 1000000000},        {"T", 1000000000000ull}, {"KB", 1000},        {"MB", 1000000},
    {"GB", 1000000000}, {"TB", 1000000000000ull},
};
}  // namespace

const SizeSuffix* size_suffixes(size_t& count) {
  count = sizeof kSuffixes / sizeof kSuffixes[0];
  return kSuffixes;
}

uint64_t size_suffix_factor(const std::string& suffix) {
  if (suffix.empty()) return 1;
  for (const auto& x : kSuffixes)
    if (suffix == x.name) return x.factor;
  return 0;
}

bool parse_size(const std::string& s, uint64_t& out) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(s[i] - '0'), &v)) return false;
    ++i;
  }
  if (i == 0) return false;
  uint64_t f = size_suffix_factor(s.substr(i));
  return f != 0 && !__builtin_mul_overflow(v, f, &out);
}

std::string human_bytes(double b, int decimals) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) b /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", u ? decimals : 0, b, units[u]);
  return buf;
}

std::string with_commas(uint64_t v) {
  std::string digits = std::to_string(v), s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

}  // namespace sg
