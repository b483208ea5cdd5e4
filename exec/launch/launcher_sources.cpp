// The launcher variables read and checked: each launcher's variables (strict integers, Slurm's
// tasks-per-node lists) read into its view of this process, a Source, with a warning for each
// malformed value, and the cross-check of two views that describe the same process. Apart from
// the rules that choose among the views (exec/launch/launcher.cpp, whose top comment gives them).
#include <optional>
#include <sstream>

#include "exec/launch/launcher_sources.hpp"

namespace sg::exec::launcher_detail {

std::optional<int64_t> parse_int(const std::string& s) {
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && s[i] == '-') {
    neg = true;
    ++i;
  }
  if (i == s.size() || s.size() - i > 18) return std::nullopt;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

namespace {

// Reads one variable into `f`: false (with a warning) when it is set but malformed.
bool read_field(const Env& env, const char* var, Field& f, const std::string& label, std::vector<std::string>& warnings) {
  const char* v = env.raw(var);
  if (!v) return true;
  std::optional<int64_t> n = parse_int(v);
  if (!n) {
    warnings.push_back(std::string(var) + "=" + quote(v) + " is not a number: " + label + " variables ignored");
    return false;
  }
  if (*n < 0) {
    warnings.push_back(std::string(var) + "=" + v + " is negative: " + label + " variables ignored");
    return false;
  }
  f.var = var;
  f.value = *n;
  return true;
}

// Local size from Slurm's tasks-per-node lists ("2(x3),1"): the entry of node `node_id`, or the
// common value when every node has the same count and the node is unknown.
bool slurm_local_size(const std::string& spec, int64_t node_id, int64_t& out) {
  std::vector<std::pair<int64_t, int64_t>> runs;  // (tasks, nodes)
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t reps = 1;
    size_t paren = item.find('(');
    std::string count = item.substr(0, paren);
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')') return false;
      std::optional<int64_t> r = parse_int(item.substr(paren + 2, item.size() - paren - 3));
      if (!r || *r <= 0) return false;
      reps = *r;
    }
    std::optional<int64_t> c = parse_int(count);
    if (!c || *c <= 0) return false;
    runs.emplace_back(*c, reps);
  }
  if (runs.empty()) return false;
  if (node_id < 0) {
    for (const auto& r : runs)
      if (r.first != runs[0].first) return false;
    out = runs[0].first;
    return true;
  }
  int64_t first = 0;
  for (const auto& r : runs) {
    if (node_id < first + r.second) {
      out = r.first;
      return true;
    }
    first += r.second;
  }
  return false;
}

}  // namespace

Source read_source(const Env& env, const std::string& label, const char* rank_var, std::initializer_list<const char*> size_vars,
                   const char* local_rank_var, const char* local_size_var, const char* node_var, std::vector<std::string>& warnings) {
  Source s;
  s.label = label;
  const char* size_var = nullptr;
  for (const char* v : size_vars)
    if (env.has(v)) {
      size_var = v;
      break;
    }
  s.present = env.has(rank_var) || size_var != nullptr;
  if (!s.present) return s;
  bool good = read_field(env, rank_var, s.rank, label, warnings);
  if (good && size_var) good = read_field(env, size_var, s.size, label, warnings);
  if (good && local_rank_var) good = read_field(env, local_rank_var, s.local_rank, label, warnings);
  if (good && local_size_var) good = read_field(env, local_size_var, s.local_size, label, warnings);
  if (good && node_var) good = read_field(env, node_var, s.node, label, warnings);
  if (!good) return s;
  auto bad = [&](const std::string& why) {
    warnings.push_back(why + ": " + label + " variables ignored");
    return s;
  };
  if (!s.rank.known()) return bad(std::string(size_var) + " is set but " + rank_var + " is not");
  if (s.size.known() && s.size.value == 0) return bad(s.size.show() + " is not a positive size");
  if (s.local_size.known() && s.local_size.value == 0) return bad(s.local_size.show() + " is not a positive size");
  if (s.size.known() && s.rank.value >= s.size.value) return bad(s.rank.show() + " is not below " + s.size.show());
  if (s.local_rank.known() && s.local_size.known() && s.local_rank.value >= s.local_size.value)
    return bad(s.local_rank.show() + " is not below " + s.local_size.show());
  if (s.local_size.known() && s.size.known() && s.local_size.value > s.size.value)
    return bad(s.local_size.show() + " exceeds " + s.size.show());
  if (s.local_rank.known() && s.size.known() && s.local_rank.value >= s.size.value)
    return bad(s.local_rank.show() + " is not below " + s.size.show());
  s.ok = true;
  return s;
}

Source read_slurm(const Env& env, std::vector<std::string>& warnings) {
  Source s = read_source(env, "Slurm's", "SLURM_PROCID", {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}, "SLURM_LOCALID", nullptr,
                         "SLURM_NODEID", warnings);
  if (!s.ok) return s;
  for (const char* v : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    if (!env.has(v)) continue;
    int64_t local = 0;
    // SLURM_NTASKS_PER_NODE is one count for every node; the other two list the nodes in order.
    bool uniform = std::string(v) == "SLURM_NTASKS_PER_NODE";
    if (!slurm_local_size(env.str(v), s.node.known() && !uniform ? s.node.value : -1, local)) {
      warnings.push_back(std::string(v) + "=" + quote(env.str(v)) +
                         (s.node.known() && !uniform ? " is malformed or has no entry for " + s.node.show()
                                                     : std::string(" is malformed or uneven (and SLURM_NODEID unset)")) +
                         ": the local size is not taken from it");
      break;
    }
    if (s.local_rank.known() && s.local_rank.value >= local) {
      warnings.push_back(s.local_rank.show() + " is not below " + v + "=" + quote(env.str(v)) + "'s " + std::to_string(local) +
                         ": the local size is not taken from it");
      break;
    }
    s.local_size.var = v;
    s.local_size.value = local;
    s.local_size.text = env.str(v);
    break;
  }
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string shown(const Source& s) {
  std::vector<std::string> parts;
  for (const Field* f : {&s.rank, &s.size, &s.local_rank, &s.local_size, &s.node})
    if (f->known()) parts.push_back(f->show());
  return join(parts, ", ");
}

void cross_check(Source& win, const Source& other, std::vector<std::string>& warnings, std::vector<std::string>& notes) {
  bool agree = true;
  auto compare = [&](const Field& a, const Field& b) {
    if (a.known() && b.known() && a.value != b.value) {
      warnings.push_back(a.show() + " and " + b.show() + " disagree: using " + a.var + " (" + win.label + ")");
      agree = false;
    }
  };
  compare(win.rank, other.rank);
  compare(win.size, other.size);
  compare(win.local_rank, other.local_rank);
  compare(win.local_size, other.local_size);
  compare(win.node, other.node);
  if (!agree) return;
  std::vector<std::string> filled;
  for (auto [w, o] : {std::pair{&win.size, &other.size},
                      {&win.local_rank, &other.local_rank},
                      {&win.local_size, &other.local_size},
                      {&win.node, &other.node}})
    if (!w->known() && o->known()) {
      *w = *o;
      filled.push_back(o->show());
    }
  if (!filled.empty()) notes.push_back(join(filled, ", ") + " filled in from " + other.label + " variables (they agree on the rank)");
}

}  // namespace sg::exec::launcher_detail
