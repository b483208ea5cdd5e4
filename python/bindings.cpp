// The Python module's native half, `stepgraph._stepgraph`: keyword arguments into the typed
// requests of api/api.hpp, results back as the JSON text the command's --json prints (the pure
// Python half, python/stepgraph/__init__.py, turns it into Python objects). No flag string is
// parsed here: ranks are integers, parameters (name, value) pairs, limits byte counts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/api.hpp"
#include "api/precheck.hpp"
#include "core/base/errors.hpp"
#include "core/base/sizes.hpp"
#include "core/base/units.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "core/graph/stream_order.hpp"

namespace py = pybind11;
using namespace sg;

namespace {

api::TargetRequest target_request(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                                  std::optional<uint64_t> max_memory) {
  api::TargetRequest r;
  r.target = target;
  r.ranks = ranks;
  r.params = params;
  r.max_memory = max_memory;
  return r;
}

AlgoChoice algo_choice(const std::string& spec) {
  AlgoChoice choice;
  if (Diagnostics diags; !spec.empty() && !parse_algo_choice(spec, choice, diags)) throw api::BadInput(diags.messages());
  return choice;
}

std::string list_json() { return api::to_json(api::list()).dump(); }

// (the graph's JSON, the build's warnings rendered)
std::pair<std::string, std::string> compile_json(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                                                 std::optional<uint64_t> max_memory, bool expand, const std::string& algo, int64_t rank) {
  api::CompileRequest r;
  r.target = target_request(target, ranks, params, max_memory);
  r.algo = algo_choice(algo);
  r.expand = expand || !algo.empty();
  r.rank = rank;
  py::gil_scoped_release unlocked;
  api::Compiled c = api::compile(r);
  return {c.json().dump(), c.opened->s.diags.render(c.opened->s.sources)};
}

std::pair<std::string, int> check_json(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                                       std::optional<uint64_t> max_memory) {
  api::TargetRequest r = target_request(target, ranks, params, max_memory);
  py::gil_scoped_release unlocked;
  api::CheckResult res = api::check(r);
  for (const auto& p : res.points)
    if (p.result == "bad-input")
      throw api::BadInput("check " + p.schedule + " N = " + std::to_string(p.n) + ": bad input", p.diagnostics, p.located);
  return {res.json().dump(), res.status};
}

std::pair<std::string, int> verify_json(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                                        std::optional<uint64_t> max_memory, const std::string& semantics, const std::string& engine,
                                        uint32_t slots, double timeout_s, uint64_t max_executions, bool timing) {
  api::VerifyRequest r;
  r.target = target_request(target, ranks, params, max_memory);
  auto sem = api::semantics_named(semantics);
  if (!sem) throw api::BadInput("semantics is auto, rendezvous, eager or bounded, got '" + semantics + "'");
  auto eng = api::engine_named(engine);
  if (!eng) throw api::BadInput("engine is auto, explicit, z3 or both, got '" + engine + "'");
  if (!(timeout_s >= 0)) throw api::BadInput("timeout needs a number of seconds >= 0");
  r.semantics = *sem;
  r.engine = *eng;
  r.slots = slots;
  r.timeout_s = timeout_s;
  r.max_executions = max_executions;
  r.timing = timing;
  py::gil_scoped_release unlocked;
  api::VerifyResult res = api::verify(r);
  for (const auto& p : res.points)
    if (!p.built && p.unsupported.empty())
      throw api::BadInput("verify " + p.schedule + " N = " + std::to_string(p.n) + ": bad input", p.diagnostics, p.located);
  return {res.json().dump(), res.status};
}

std::pair<std::string, int> analyze_json(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                                         std::optional<uint64_t> max_memory, const std::string& algo, const std::string& unit) {
  api::AnalyzeRequest r;
  r.target = target_request(target, ranks, params, max_memory);
  r.algo = algo_choice(algo);
  r.unit = unit;
  py::gil_scoped_release unlocked;
  api::AnalyzeResult res = api::analyze(r);
  return {res.json().dump(), res.status};
}

std::pair<std::string, int> sim_json(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                                     std::optional<uint64_t> max_memory, const std::string& platform, const std::string& model,
                                     const std::string& algo, bool allow_defects, const std::string& collectives) {
  api::SimRequest r;
  r.target = target_request(target, ranks, params, max_memory);
  r.platform = api::read_platform(platform);
  if (model == "simgrid") r.options.model = sim::Model::SimGrid;
  else if (model == "analytic") r.options.model = sim::Model::Analytic;
  else throw api::BadInput("model is simgrid or analytic, got '" + model + "'");
  if (const std::string& gamma = r.platform.gamma; !gamma.empty()) {
    std::string why;
    if (!parse_seconds(gamma, r.options.runtime.gamma, why)) throw api::BadInput("bad gamma '" + gamma + "' in " + platform + ": " + why);
  }
  r.algo = algo_choice(algo);
  r.allow_defects = allow_defects;
  if (collectives != "expand" && collectives != "memo") throw api::BadInput("collectives is expand or memo, got '" + collectives + "'");
  r.memo = collectives == "memo";
  if (r.memo && r.options.model != sim::Model::Analytic)
    throw api::BadInput("collectives='memo' runs on the analytic engine: pass model='analytic'");
  py::gil_scoped_release unlocked;
  api::SimResult res = api::simulate(r);
  return {res.json().dump(), res.status};
}

// Every rank's stream order (core/graph/stream_order.hpp): the one global order of transfer
// groups NCCL needs. {"groups": [G per rank], "level": [[per step of rank r, in its order]],
// "key": [[…]]}. Throws BadInput (with the located reason) where the schedule cannot be issued so.
std::string stream_order_json(const std::string& target, const std::vector<uint32_t>& ranks, const api::Params& params,
                              std::optional<uint64_t> max_memory) {
  api::CompileRequest r;
  r.target = target_request(target, ranks, params, max_memory);
  py::gil_scoped_release unlocked;
  api::Compiled c = api::compile(r);
  const StepGraph& g = c.graph();
  nlohmann::json out = {{"groups", nlohmann::json::array()}, {"level", nlohmann::json::array()}, {"key", nlohmann::json::array()}};
  for (uint32_t rank = 0; rank < g.nranks; ++rank) {
    StreamOrder so;
    Diagnostics& d = c.opened->s.diags;
    if (!stream_order(g, rank, so, d))
      throw api::BadInput("the schedule cannot be issued in one global order (NCCL's)", d.render(c.opened->s.sources),
                          api::diagnostics_json(d, c.opened->s.sources));
    out["groups"].push_back(so.groups);
    out["level"].push_back(so.level);
    out["key"].push_back(so.key);
  }
  return out.dump();
}

// The check before a run (api/precheck.hpp) that stepgraph.torch asks before it runs a schedule:
// {"state", "n", "semantics", "verdict", "summary", "why_not", "line", "detail"}.
std::string precheck_json(const std::string& target, uint32_t n, const api::Params& params, std::optional<uint64_t> max_memory,
                          bool rendezvous) {
  py::gil_scoped_release unlocked;
  api::Precheck pc = api::precheck(target, n, params, max_memory ? *max_memory : default_memory_limit(), rendezvous);
  nlohmann::json j = pc.json();
  j["line"] = pc.line();
  j["detail"] = pc.detail;
  return j.dump();
}

uint64_t size_bytes(const std::string& text) {
  uint64_t v = 0;
  if (!parse_size(text, v)) throw api::BadInput("bad size '" + text + "' (use e.g. 3GiB, 512MiB, 1000000)");
  return v;
}

}  // namespace

PYBIND11_MODULE(_stepgraph, m) {
  m.doc() = "stepgraph's native half: typed requests (api/api.hpp) in, the commands' --json out";
  m.attr("version") = STEPGRAPH_VERSION;
  // BadInput(message, rendered diagnostics, diagnostics as JSON text)
  static py::exception<api::BadInput> bad_input(m, "BadInput", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const api::BadInput& e) {
      py::tuple args = py::make_tuple(std::string(e.what()), e.rendered(), e.diagnostics().dump());
      PyErr_SetObject(bad_input.ptr(), args.ptr());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError,
                      ("stepgraph bug: " + e.message() + " (detected at " + e.origin() + "), please report it").c_str());
    }
  });
  m.def("list_json", &list_json);
  m.def("size_bytes", &size_bytes);
  m.def("stream_order_json", &stream_order_json, py::arg("target"), py::arg("ranks"), py::arg("params"), py::arg("max_memory"));
  m.def("precheck_json", &precheck_json, py::arg("target"), py::arg("n"), py::arg("params"), py::arg("max_memory"), py::arg("rendezvous"));
  m.def("sim_json", &sim_json, py::arg("target"), py::arg("ranks"), py::arg("params"), py::arg("max_memory"), py::arg("platform"),
        py::arg("model"), py::arg("algo"), py::arg("allow_defects"), py::arg("collectives"));
  m.def("compile_json", &compile_json, py::arg("target"), py::arg("ranks"), py::arg("params"), py::arg("max_memory"), py::arg("expand"),
        py::arg("algo"), py::arg("rank"));
  m.def("check_json", &check_json, py::arg("target"), py::arg("ranks"), py::arg("params"), py::arg("max_memory"));
  m.def("verify_json", &verify_json, py::arg("target"), py::arg("ranks"), py::arg("params"), py::arg("max_memory"), py::arg("semantics"),
        py::arg("engine"), py::arg("slots"), py::arg("timeout"), py::arg("max_executions"), py::arg("timing"));
  m.def("analyze_json", &analyze_json, py::arg("target"), py::arg("ranks"), py::arg("params"), py::arg("max_memory"), py::arg("algo"),
        py::arg("unit"));
}
