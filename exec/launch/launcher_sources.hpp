// What the launcher detection reads, shared by its files (internal to exec/launcher*.cpp,
// included by nothing else): the environment (Env), each launcher's variables read into one view
// of this process (Source), and the cross-check of two such views. exec/launch/launcher.cpp decides
// from them (detect_launch); exec/launch/launcher_sources.cpp reads them; exec/launch/launcher_output.cpp
// prints the result.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace sg::exec::launcher_detail {

inline bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

class Env {
 public:
  Env(const std::function<const char*(const char*)>& get, const std::vector<std::string>& names) : get_(get), names_(names) {}
  const char* raw(const char* name) const { return get_ ? get_(name) : nullptr; }
  bool has(const char* name) const { return raw(name) != nullptr; }
  std::string str(const char* name) const {
    const char* v = raw(name);
    return v ? std::string(v) : std::string();
  }
  bool any(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (has(n)) return true;
    return false;
  }
  // A variable whose name starts with `prefix`: from the listed names when the caller gave them,
  // else by probing a few well-known ones.
  bool has_prefix(const char* prefix, std::initializer_list<const char*> probes) const {
    if (!names_.empty()) return std::any_of(names_.begin(), names_.end(), [&](const std::string& n) { return starts_with(n, prefix); });
    return any(probes);
  }

 private:
  const std::function<const char*(const char*)>& get_;
  const std::vector<std::string>& names_;
};

// A strict integer: optional '-', then 1 to 18 digits, nothing else.
std::optional<int64_t> parse_int(const std::string& s);
std::string quote(const std::string& s);

struct Field {
  std::string var;  // the variable it came from ("" when none)
  int64_t value = -1;
  std::string text;  // the variable's text when it is not the value itself (a tasks-per-node list)
  bool known() const { return !var.empty(); }
  std::string show() const { return var + "=" + (text.empty() ? std::to_string(value) : quote(text) + " (" + std::to_string(value) + ")"); }
};

// One launcher's view of this process.
struct Source {
  std::string label;  // "Open MPI's mpiexec"
  bool present = false, ok = false;
  Field rank, size, local_rank, local_size, node;
};

Source read_source(const Env& env, const std::string& label, const char* rank_var, std::initializer_list<const char*> size_vars,
                   const char* local_rank_var, const char* local_size_var, const char* node_var, std::vector<std::string>& warnings);
// Slurm: the size is the step's when there is one, the local size from a tasks-per-node list.
Source read_slurm(const Env& env, std::vector<std::string>& warnings);

std::string join(const std::vector<std::string>& v, const std::string& sep);
// The variables a source set, for notes: "SLURM_PROCID=3, SLURM_NTASKS=4".
std::string shown(const Source& s);
// Another source that describes this same process: it must agree with the winner; where it does,
// it fills what the winner lacks.
void cross_check(Source& win, const Source& other, std::vector<std::string>& warnings, std::vector<std::string>& notes);

}  // namespace sg::exec::launcher_detail
