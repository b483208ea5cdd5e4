// exec's one JSON writer of a measured row (exec/row_json.hpp).
#include "exec/row_json.hpp"

#include "core/interp/bus_bandwidth.hpp"

namespace sg::exec {

double row_bus_factor(const PointRow& r, int size, std::string& name) {
  return bus_factor(r.kind, static_cast<uint32_t>(r.group_ranks > 0 ? r.group_ranks : size), name);
}

nlohmann::json row_json(const RowContext& x, const PointRow& r) {
  std::string factor_name;
  double factor = row_bus_factor(r, x.size, factor_name);
  nlohmann::json j = {{"schedule", r.schedule},
                      {"ranks", x.size},
                      {"size_bytes", r.size},
                      {"count", r.count},
                      {"dtype", r.shaped() ? (r.shape.bf16 ? "bf16" : "f32") : dtype_name(r.shown_type)},  // attention: the inputs
                      {"redop", r.redop},
                      {"time_us", r.time_s * 1e6},
                      {"algbw_GBps", r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 : 0.0},
                      {"busbw_GBps", r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 * factor : 0.0},
                      {"wrong", r.checked ? nlohmann::json(r.wrong) : nlohmann::json(nullptr)},
                      {"device", x.device},
                      {"transport", x.transport}};
  if (r.group_ranks > 0 && r.group_ranks != x.size) j["group_ranks"] = r.group_ranks;
  if (!r.plan.empty()) j["plan"] = r.plan;
  if (x.device_buffers) j["device_calls"] = x.device_sync ? "sync" : "streams";
  if (r.checked) j["mpi_agrees"] = r.mpi_differs < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.mpi_differs == 0);
  if (r.shaped()) {
    j["seq"] = r.shape.seq;
    j["heads"] = r.shape.heads;
    j["dim"] = r.shape.dim;
    j["batch"] = r.shape.batch;
    j["mask"] = r.shape.causal ? "causal" : "full";
    j["direction"] = r.shape.backward ? "backward" : "forward";
    j["attention_inputs"] = r.shape.bf16 ? "bf16" : "fp32";
    j["attention_outputs"] = "fp32";  // O|lse, dQ, dKV
    j["model_flops"] = r.model_flops();
    j["tflops"] = r.tflops();
    j["tflops_per_rank"] = r.tflops() / x.size;
  }
  if (r.attention) {
    j["max_abs_err"] = r.max_abs_err;
    if (r.shape.backward) {
      j["max_abs_err_dq"] = r.err_dq;
      j["max_abs_err_dkv"] = r.err_dkv;
    }
    j["tolerance"] = r.tolerance;
    j["elements_checked"] = r.attention_checked;
  }
  if (x.compared_native) {
    j["native_time_us"] = r.native_s >= 0 ? nlohmann::json(r.native_s * 1e6) : nlohmann::json(nullptr);
    if (r.native_s < 0 && !r.native_why.empty()) j["native_why_not"] = r.native_why;
  }
  if (x.predicted) {
    j["predicted_time_us"] = r.predicted_s >= 0 ? nlohmann::json(r.predicted_s * 1e6) : nlohmann::json(nullptr);
    if (r.predicted_s > 0) j["predict_error"] = (r.time_s - r.predicted_s) / r.predicted_s;
  }
  if (r.compute_s >= 0) {
    j["compute_us"] = r.compute_s * 1e6;
    j["comm_alone_us"] = r.comm_s * 1e6;
    j["overlap"] = r.overlap;
  }
  if (!x.sweep_param.empty()) {
    // Under the parameter's own name (as sim) unless that is a key already, and always here.
    if (!j.contains(x.sweep_param)) j[x.sweep_param] = r.value;
    j["sweep"] = {{"param", x.sweep_param}, {"value", r.value}};
  }
  return j;
}

}  // namespace sg::exec
