// std::source_location for clang 14 with libstdc++ 12: libstdc++'s <source_location> is empty
// without __builtin_source_location (clang 15 has it), and core/base/errors.hpp needs it. The fuzz
// build (clang 14 is what Debian 12 ships with libFuzzer) force-includes this file; it defines the
// class from the older builtins only where the library did not (constexpr, not consteval: clang 14
// refuses a consteval call in a default argument).
#pragma once
#if defined(__cplusplus) && !__has_builtin(__builtin_source_location)
#include <cstdint>
#include <source_location>
#ifndef __cpp_lib_source_location
namespace std {
struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                                           uint_least32_t line = __builtin_LINE(), uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location s;
    s.file_ = file;
    s.function_ = function;
    s.line_ = line;
    s.column_ = column;
    return s;
  }
  constexpr source_location() noexcept = default;
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr uint_least32_t line() const noexcept { return line_; }
  constexpr uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  uint_least32_t line_ = 0, column_ = 0;
};
}  // namespace std
#endif
#endif
