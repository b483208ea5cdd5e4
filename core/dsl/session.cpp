#include "core/dsl/session.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/dsl/library.hpp"
#include "core/dsl/parser.hpp"

namespace sg {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string nearest_library_name(const std::string& name) {
  std::string best;
  size_t best_d = 3;  // only close misspellings
  for (const auto& e : library()) {
    size_t d = edit_distance(name, e.name);
    if (d < best_d) best_d = d, best = e.name;
  }
  return best;
}

Session::Session() { cmdline_file = sources.add("<command line>", ""); }

const Program* Session::load_file(const std::string& path) {
  auto it = programs_.find(path);
  if (it != programs_.end()) return it->second.get();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    diags.error(Loc{}, "'" + path + "' is a directory, not a schedule file");
    return nullptr;
  }
  Diagnostics unread;
  uint32_t id = sources.load(path, unread);
  if (id == 0) {
    // A name without a folder that is no file: perhaps a library name mistyped. Any other reason
    // is the OS's, as it is.
    std::string err = unread.messages();
    if (path.find('/') == std::string::npos && !std::filesystem::exists(path, ec))
      err += " (`stepgraph list` shows the library's schedule names)";
    diags.error(Loc{}, err);
    return nullptr;
  }
  return parse_and_keep(path, id);
}

const Program* Session::parse_and_keep(const std::string& key, uint32_t file) {
  size_t first = diags.all().size();
  auto prog = parse(sources, file, diags, stmt_locs);
  diags.sort_from(first);  // the lexer's and the parser's errors, in source order
  const Program* p = prog.get();
  programs_[key] = std::move(prog);
  return p;
}

const Program* Session::load_library(const std::string& name) {
  std::string key = "lib:" + name;
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second.get();
  const LibraryEntry* e = find_library(name);
  if (!e) return nullptr;
  return parse_and_keep(key, sources.add(e->path, e->text));
}

const Program* Session::load_text(const std::string& name, const std::string& text) {
  uint32_t id = sources.add(name, text);
  return parse_and_keep("text:" + name + ":" + std::to_string(id), id);
}

Target Session::pick(const Program* prog, const std::string& wanted, const std::string& stem) {
  if (!prog) return {};
  if (prog->schedules.empty()) {
    diags.error(Loc{prog->file, 1, 1}, "no schedule in '" + sources.file(prog->file).name() + "'");
    return {};
  }
  if (!wanted.empty()) {
    const Schedule* s = prog->find(wanted);
    if (!s) {
      std::string names;
      for (const auto& x : prog->schedules) names += (names.empty() ? "" : ", ") + x->name;
      diags.error(Loc{}, "no schedule '" + wanted + "' in '" + sources.file(prog->file).name() + "' (it has: " + names + ")");
      return {};
    }
    return {prog, s};
  }
  if (const Schedule* s = prog->find(stem)) return {prog, s};
  return {prog, prog->schedules.back().get()};
}

Target Session::open_schedule(const std::string& spec) {
  std::string path = spec, wanted;
  std::error_code ec;
  // FILE:SCHEDULE — but a path that exists as written wins (it may contain ':').
  auto colon = spec.rfind(':');
  if (colon != std::string::npos && !std::filesystem::exists(spec, ec)) {
    path = spec.substr(0, colon);
    wanted = spec.substr(colon + 1);
  }
  // A bare library name means the library, even where a file of that name sits in the current
  // folder (a binary built beside it, say); ./NAME reads the file.
  bool sched_suffix = path.size() > 6 && path.compare(path.size() - 6, 6, ".sched") == 0;
  bool bare_library_name = !sched_suffix && path.find('/') == std::string::npos && find_library(path) != nullptr;
  bool looks_like_file = (!bare_library_name && std::filesystem::exists(path, ec)) || path.find('/') != std::string::npos || sched_suffix;
  if (!looks_like_file) {
    const Program* prog = load_library(path);
    if (!prog) {
      std::string hint = " (`stepgraph list` shows the library)";
      if (std::string near = nearest_library_name(path); !near.empty()) hint = "; did you mean '" + near + "'?";
      diags.error(Loc{}, "'" + path + "' is neither a file nor a library schedule" + hint);
      return {};
    }
    return pick(prog, wanted, path);
  }
  const Program* prog = load_file(path);
  if (!prog) return {};
  if (diags.has_errors()) return {prog, nullptr};
  return pick(prog, wanted, std::filesystem::path(path).stem().string());
}

Target Session::find_callee(const Program& from, const std::string& name) {
  if (const Schedule* s = from.find(name)) return {&from, s};
  // Library: a file named like the schedule, or any library file defining it.
  if (const Program* p = load_library(name))
    if (const Schedule* s = p->find(name)) return {p, s};
  for (const auto& e : library()) {
    if (const Program* p = load_library(e.name))
      if (const Schedule* s = p->find(name)) return {p, s};
  }
  return {};
}

}  // namespace sg
