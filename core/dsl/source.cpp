#include "core/dsl/source.hpp"

#include <utility>

#include "core/base/input_file.hpp"
#include "core/dsl/diagnostics.hpp"

namespace sg {

SourceFile::SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n' && i + 1 < text_.size()) starts_.push_back(i + 1);
}

std::string_view SourceFile::line(uint32_t line) const {
  if (line == 0 || line > starts_.size()) return {};
  uint32_t b = starts_[line - 1];
  uint32_t e = b;
  while (e < text_.size() && text_[e] != '\n') ++e;
  if (e > b && text_[e - 1] == '\r') --e;
  return std::string_view(text_).substr(b, e - b);
}

SourceManager::SourceManager() { files_.push_back(std::make_unique<SourceFile>("<unknown>", "")); }

uint32_t SourceManager::add(std::string name, std::string text) {
  files_.push_back(std::make_unique<SourceFile>(std::move(name), std::move(text)));
  return static_cast<uint32_t>(files_.size() - 1);
}

uint32_t SourceManager::load(const std::string& path, Diagnostics& diags) {
  InputFile in = read_input_file(path);
  if (!in.ok) return diags.fail(std::move(in.error)), 0;  // a FIFO or a device is refused, not read for ever
  return add(path, std::move(in.text));
}

std::string SourceManager::describe(Loc loc) const {
  const SourceFile& f = file(loc.file < files_.size() ? loc.file : 0);
  if (!loc.valid()) return f.name();
  return f.name() + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

}  // namespace sg
