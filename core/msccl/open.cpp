#include "core/msccl/open.hpp"

#include <cctype>
#include <filesystem>

#include "core/base/errors.hpp"
#include "core/msccl/lower.hpp"

namespace sg::msccl {

bool claims(const std::string& spec) {
  if (spec.size() < 4) return false;
  std::string tail = spec.substr(spec.size() - 4);
  for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return tail == ".xml";
}

Target open_target(Session& s, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    s.diags.error(Loc{}, "'" + path + "' is a directory, not an MSCCL algorithm file");
    return {};
  }
  uint32_t id = s.sources.load(path, s.diags);  // (its error: the OS's reason, as it is)
  if (id == 0) return {};
  std::shared_ptr<Program> p = read_program(s.sources, id, s.diags);
  if (!p) return {};
  auto opened = std::make_shared<Opened>();
  opened->name = p->name.empty() ? std::filesystem::path(path).stem().string() : p->name;
  opened->loc = p->loc;
  opened->params = {"size", "inplace"};
  Target t;
  t.fixed_ranks = p->ngpus;
  opened->program = std::move(p);
  t.other = s.keep(std::move(opened));
  return t;
}

std::unique_ptr<StepGraph> elaborate_target(Session& s, const Target& t, const ElabOptions& o) {
  const auto* opened = dynamic_cast<const Opened*>(t.other);
  internal_check(opened && opened->program, "msccl::elaborate_target given a target it did not open");
  return lower(s, *opened->program, o);
}

}  // namespace sg::msccl
