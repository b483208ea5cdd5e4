// Byte sizes, written and read: the one table of size suffixes (the language's literals and the
// command line's flags both read it), and the one way sizes and counts are printed.
#pragma once
#include <cstdint>
#include <string>

namespace sg {

struct SizeSuffix {
  const char* name;
  uint64_t factor;
};
// B; KiB MiB GiB TiB (powers of 1024); K M G T and KB MB GB TB (powers of 1000).
const SizeSuffix* size_suffixes(size_t& count);
// The factor of a suffix ("" is 1), or 0 when it is not one.
uint64_t size_suffix_factor(const std::string& suffix);

// "3GiB", "512M", "1000": bytes. False on a malformed size or one that overflows 64 bits.
bool parse_size(const std::string& s, uint64_t& out);

// 1536 -> "1.5 KiB" (`decimals` digits after the point; bytes below 1 KiB without any).
std::string human_bytes(double bytes, int decimals = 1);
// 1234567 -> "1,234,567".
std::string with_commas(uint64_t v);

}  // namespace sg
