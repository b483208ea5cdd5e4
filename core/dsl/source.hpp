// Source files and locations. Every diagnostic and every step points back into a SourceFile.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/loc.hpp"

namespace sg {
class Diagnostics;  // core/dsl/diagnostics.hpp (which includes this header)
}

namespace sg {

class SourceFile {
 public:
  SourceFile(std::string name, std::string text);
  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  // The text of 1-based line `line`, without its newline.
  std::string_view line(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(starts_.size()); }

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> starts_;
};

// Owns every file read during a run (schedule files, library files, the command line).
class SourceManager {
 public:
  SourceManager();
  uint32_t add(std::string name, std::string text);
  // Reads a file from disk; returns 0 (with the OS's reason, unlocated, in `diags`) when it cannot
  // be read.
  uint32_t load(const std::string& path, Diagnostics& diags);
  const SourceFile& file(uint32_t id) const { return *files_.at(id); }
  std::string describe(Loc loc) const;  // "file:line:col"

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace sg
