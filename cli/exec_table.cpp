// `stepgraph exec`'s output: the rows of a run as JSON, or as a table like nccl-tests' (an
// attention schedule's shape and TFLOP/s instead of bytes and bus bandwidth), with the notes
// under it (overlap, predictions, MPI's own result, attention errors, wrong elements).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/exec_table.hpp"
#include "core/interp/bus_bandwidth.hpp"

namespace sg::cli {

using exec::PointRow;

namespace {

const char* dtype_word(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::F16: return "half";
    case DType::BF16: return "bfloat16";
    default: return dtype_name(t);
  }
}

}  // namespace

void print_exec_json(const ExecTable& x, const std::vector<PointRow>& rows) {
  const PointRow& last = rows.back();  // the schedule, type and operator the points share
  const std::string& schedule_name = last.schedule;
  const std::string& redop = last.redop;
  const DType shown_type = last.shown_type;
  const int size = x.size;
  const ExecOpts& o = x.o;
  const bool swept = !x.sweep_param.empty();
  const std::string& sweep_param = x.sweep_param;
  std::string factor_name;
  double factor = bus_factor(last.kind, static_cast<uint32_t>(size), factor_name);
  bool native = o.compare == "native";
  nlohmann::json out = nlohmann::json::array();
  for (const PointRow& r : rows) {
    nlohmann::json j = {{"schedule", schedule_name},
                        {"ranks", size},
                        {"size_bytes", r.size},
                        {"count", r.count},
                        {"dtype", r.shaped() ? (r.shape.bf16 ? "bf16" : "f32") : dtype_name(shown_type)},  // attention: the inputs
                        {"redop", redop},
                        {"time_us", r.time_s * 1e6},
                        {"algbw_GBps", r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 : 0.0},
                        {"busbw_GBps", r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 * factor : 0.0},
                        {"wrong", r.checked ? nlohmann::json(r.wrong) : nlohmann::json(nullptr)},
                        {"device", o.device},
                        {"transport", x.transport}};
    if (x.device) j["device_calls"] = o.device_sync ? "sync" : "streams";
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
      j["tflops_per_rank"] = r.tflops() / size;
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
    if (native) j["native_time_us"] = r.native_s >= 0 ? nlohmann::json(r.native_s * 1e6) : nlohmann::json(nullptr);
    if (!o.predict.empty()) {
      j["predicted_time_us"] = r.predicted_s >= 0 ? nlohmann::json(r.predicted_s * 1e6) : nlohmann::json(nullptr);
      if (r.predicted_s > 0) j["predict_error"] = (r.time_s - r.predicted_s) / r.predicted_s;
    }
    if (r.compute_s >= 0) {
      j["compute_us"] = r.compute_s * 1e6;
      j["comm_alone_us"] = r.comm_s * 1e6;
      j["overlap"] = r.overlap;
    }
    if (swept) {
      // Under the parameter's own name (as sim) unless that is a key already, and always here.
      if (!j.contains(sweep_param)) j[sweep_param] = r.value;
      j["sweep"] = {{"param", sweep_param}, {"value", r.value}};
    }
    out.push_back(j);
  }
  std::cout << out.dump(2) << "\n";
  (void)redop;
}

void print_exec_text(const ExecTable& x, const std::vector<PointRow>& rows, uint64_t total_wrong) {
  const PointRow& last = rows.back();  // the schedule, type and operator the points share
  const std::string& schedule_name = last.schedule;
  const std::string& redop = last.redop;
  const DType shown_type = last.shown_type;
  const int size = x.size;
  const ExecOpts& o = x.o;
  const bool swept = !x.sweep_param.empty();
  const std::string& sweep_param = x.sweep_param;
  std::string factor_name;
  double factor = bus_factor(last.kind, static_cast<uint32_t>(size), factor_name);
  bool native = o.compare == "native";
  bool shaped = !rows.empty() && rows[0].shaped();
  std::printf("# stepgraph exec %s: %d ranks, %d iterations after %d warm-up%s%s\n", schedule_name.c_str(), size, o.iters, o.warmup,
              shaped ? "" : (", bus factor " + factor_name).c_str(), o.check ? ", checked" : "");
  if (x.device)
    std::printf("# device: %s; transport: %s (%s); device calls: %s\n", x.device_note.c_str(), x.transport.c_str(), x.transport_why.c_str(),
                o.device_sync ? "synchronous (--device-sync)" : "two streams, local work and transfers, ordered by events");
  std::printf("#\n");
  bool predict = !o.predict.empty();
  // Attention: the shape and TFLOP/s (the model count, per job and per rank), as the
  // ring-attention benchmarks print them; bytes and bus bandwidth say little there.
  // Collectives: the nccl-tests table, with the swept parameter first when it is not size.
  // The swept parameter gets a column of its own unless one shows it already (size; an
  // attention table's seq, heads, dim and batch), e.g. --sweep causal=0,1 or elem=2,4.
  bool own_column =
      shaped ? (sweep_param == "seq" || sweep_param == "heads" || sweep_param == "dim" || sweep_param == "batch") : sweep_param == "size";
  bool lead = swept && !own_column;
  const char* pre = lead ? "" : "#";
  if (shaped) {
    // What every row shares goes in the header; what the sweep varies, in the column.
    bool same_mask = true, same_type = true, same_dir = true;
    for (const PointRow& r : rows)
      same_mask &= r.shape.causal == rows[0].shape.causal, same_type &= r.shape.bf16 == rows[0].shape.bf16,
          same_dir &= r.shape.backward == rows[0].shape.backward;
    const exec::AttentionLayout& r0 = rows[0].shape;
    std::string what = std::string(same_dir ? (r0.backward ? "backward" : "forward") : "forward or backward") + ", " +
                       (same_mask ? (r0.causal ? "causal mask" : "full mask") : "mask by " + sweep_param) + ", " +
                       (same_type ? (r0.bf16 ? "bf16 inputs" : "fp32 inputs") : "inputs by " + sweep_param);
    std::printf("# attention %s; TFLOP/s counts 4·batch·heads·seq²·dim, halved for a causal mask, × 2.5 for the backward\n", what.c_str());
    if (lead) std::printf("# %10s", sweep_param.c_str());
    std::printf("%s %8s %6s %5s %6s %12s %10s %9s %9s %7s", pre, "seq", "heads", "dim", "batch", "model", "time", "TFLOP/s", "TFLOP/s",
                "#wrong");
  } else {
    if (lead) std::printf("# %10s", sweep_param.c_str());
    std::printf("%s %10s %12s %8s %6s %10s %8s %8s %7s", pre, "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
  }
  if (native) std::printf(" %10s %7s", "MPI time", "speed");
  if (predict) std::printf(" %10s %7s", "predicted", "error");
  if (lead) std::printf("\n# %10s", "");
  else std::printf("\n#");
  if (shaped) std::printf(" %8s %6s %5s %6s %12s %10s %9s %9s %7s", "", "", "", "", "(GFLOP)", "(us)", "(job)", "(rank)", "");
  else std::printf(" %10s %12s %8s %6s %10s %8s %8s %7s", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (native) std::printf(" %10s %7s", "(us)", "vs MPI");
  if (predict) std::printf(" %10s %7s", "(us)", "");
  std::printf("\n");
  // How the notes below the table name a row.
  auto point = [&](const PointRow& r) {
    if (shaped)
      return "seq " + std::to_string(r.shape.seq) +
             (swept && sweep_param != "seq" ? ", " + sweep_param + " " + std::to_string(r.value) : "");
    return (lead ? sweep_param + " " + std::to_string(r.value) + ", " : std::string()) + std::to_string(r.size) + " B";
  };
  for (const PointRow& r : rows) {
    std::string wrong_s = r.checked ? std::to_string(r.wrong) : "-";
    if (lead) std::printf("  %10llu", static_cast<unsigned long long>(r.value));
    if (shaped) {
      std::printf("%s %8u %6u %5u %6u %12.3f %10.2f %9.3f %9.3f %7s", lead ? "" : " ", r.shape.seq, r.shape.heads, r.shape.dim,
                  r.shape.batch, r.model_flops() / 1e9, r.time_s * 1e6, r.tflops(), r.tflops() / size, wrong_s.c_str());
    } else {
      double alg = r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 : 0;
      std::printf("%s %10llu %12llu %8s %6s %10.2f %8.3f %8.3f %7s", lead ? "" : " ", static_cast<unsigned long long>(r.size),
                  static_cast<unsigned long long>(r.count), dtype_word(shown_type), redop.c_str(), r.time_s * 1e6, alg, alg * factor,
                  wrong_s.c_str());
    }
    if (native) {
      if (r.native_s >= 0) std::printf(" %10.2f %6.2fx", r.native_s * 1e6, r.native_s / r.time_s);
      else std::printf(" %10s %7s", "-", "-");
    }
    if (predict) {
      if (r.predicted_s > 0) std::printf(" %10.2f %+6.0f%%", r.predicted_s * 1e6, (r.time_s - r.predicted_s) / r.predicted_s * 100);
      else std::printf(" %10s %7s", "-", "-");
    }
    std::printf("\n");
  }
  for (const PointRow& r : rows)
    if (r.compute_s >= 0)
      std::printf("# %s: compute %.2f ms + communication alone %.2f ms, together %.2f ms: %.0f%% of the communication hidden\n",
                  point(r).c_str(), r.compute_s * 1e3, r.comm_s * 1e3, r.time_s * 1e3, r.overlap * 100);
  if (predict) {
    std::printf("# predicted: the analytic simulator on %s; error = (measured - predicted) / predicted\n", o.predict.c_str());
    for (const PointRow& r : rows)
      if (!r.predict_error.empty()) {
        std::printf("# prediction failed: %s\n", r.predict_error.c_str());
        break;
      }
  }
  for (const PointRow& r : rows)
    if (r.mpi_differs > 0)
      std::printf("# %s: MPI's own collective on the same inputs differs from ours in %lld elements\n", point(r).c_str(),
                  static_cast<long long>(r.mpi_differs));
  bool compared = false, agreed = true;
  for (const PointRow& r : rows) compared |= r.mpi_differs >= 0, agreed &= r.mpi_differs <= 0;
  if (compared && agreed) std::printf("# MPI's own collective on the same inputs gives the same elements at every size\n");
  for (const PointRow& r : rows)
    if (r.attention) {
      if (r.shape.backward)
        std::printf(
            "# %s: attention backward against full attention on one rank (%s inputs): max |dQ - ref| = %.3g, max |dKV - ref| = %.3g over "
            "%llu elements (tolerance %.3g)\n",
            point(r).c_str(), r.shape.bf16 ? "bf16" : "fp32", r.err_dq, r.err_dkv, static_cast<unsigned long long>(r.attention_checked),
            r.tolerance);
      else
        std::printf(
            "# %s: attention against full attention on one rank (%s inputs): max |O|lse - ref| = %.3g over %llu elements (tolerance "
            "%.3g)\n",
            point(r).c_str(), r.shape.bf16 ? "bf16" : "fp32", r.err_o, static_cast<unsigned long long>(r.attention_checked), r.tolerance);
    }
  if (total_wrong) std::printf("# %llu wrong elements\n", static_cast<unsigned long long>(total_wrong));
}

}  // namespace sg::cli
