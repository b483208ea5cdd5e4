// `stepgraph exec`'s output: the rows of a run as JSON, or as a table like nccl-tests' (an
// attention schedule's shape and TFLOP/s instead of bytes and bus bandwidth), with the notes
// under it (overlap, predictions, MPI's own result, attention errors, wrong elements).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/exec_table.hpp"
#include "exec/row_json.hpp"

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

// The array is written an element at a time, each flushed, laid out as nlohmann's dump(2) of the
// whole array would be: a job killed mid-sweep keeps every row measured before.
void ExecPrinter::json_row(const PointRow& r) {
  exec::RowContext ctx;
  ctx.size = x_.size;
  ctx.device = x_.o.device;
  ctx.transport = x_.transport;
  ctx.device_buffers = x_.device;
  ctx.device_sync = x_.o.device_sync;
  ctx.compared_native = x_.o.compare == "native";
  ctx.predicted = !x_.o.predict.empty();
  ctx.sweep_param = x_.sweep_param;
  nlohmann::json j = exec::row_json(ctx, r);
  if (!x_.check.is_null()) j["check"] = x_.check;
  std::string text = j.dump(2), indented = "  ";
  for (char c : text) {
    indented += c;
    if (c == '\n') indented += "  ";
  }
  std::printf("%s%s", rows_ == 0 ? "[\n" : ",\n", indented.c_str());
  std::fflush(stdout);
}

namespace {

std::string attention_words(const exec::AttentionLayout& a) {
  return std::string(a.backward ? "backward" : "forward") + ", " + (a.causal ? "causal mask" : "full mask") + ", " +
         (a.bf16 ? "bf16 inputs" : "fp32 inputs");
}

}  // namespace

ExecPrinter::ExecPrinter(const ExecTable& x) : x_(x) {}

// The rows' layout: attention (shape and TFLOP/s, as the ring-attention benchmarks print them;
// bytes and bus bandwidth say little there) or the nccl-tests table, with the swept parameter
// first when no column shows it already (size; an attention table's seq, heads, dim and batch),
// e.g. --sweep causal=0,1 or elem=2,4.
void ExecPrinter::text_header(const PointRow& first) {
  const ExecOpts& o = x_.o;
  shaped_ = first.shaped();
  const std::string& sp = x_.sweep_param;
  bool own_column = shaped_ ? (sp == "seq" || sp == "heads" || sp == "dim" || sp == "batch") : sp == "size";
  lead_ = !sp.empty() && !own_column;
  std::string factor_name;
  exec::row_bus_factor(first, x_.size, factor_name);
  std::string group = first.group_ranks > 0 && first.group_ranks != x_.size
                          ? " (N = " + std::to_string(first.group_ranks) + ", the postcondition's group)"
                          : std::string();
  std::printf("# stepgraph exec %s: %d ranks, %d iterations after %d warm-up%s%s\n", first.schedule.c_str(), x_.size, o.iters, o.warmup,
              shaped_ ? "" : (", bus factor " + factor_name + group).c_str(), o.check ? ", checked" : "");
  if (!first.params.empty()) std::printf("# parameters: %s\n", first.params.c_str());
  if (!x_.check_line.empty()) std::printf("# %s\n", x_.check_line.c_str());
  if (!first.plan.empty()) std::printf("# rank 0's runs: %s\n", first.plan.c_str());
  if (x_.device)
    std::printf("# device: %s; transport: %s (%s); device calls: %s\n", x_.device_note.c_str(), x_.transport.c_str(),
                x_.transport_why.c_str(),
                o.device_sync ? "synchronous (--device-sync)" : "two streams, local work and transfers, ordered by events");
  std::printf("#\n");
  bool native = o.compare == "native", predict = !o.predict.empty();
  const char* pre = lead_ ? "" : "#";
  if (shaped_) {
    // What a row shares with the ones before goes in a comment line; the first, in the header.
    words_ = attention_words(first.shape);
    std::printf("# attention %s; TFLOP/s counts 4·batch·heads·seq²·dim, halved for a causal mask, × 2.5 for the backward\n",
                words_.c_str());
    if (lead_) std::printf("# %10s", sp.c_str());
    std::printf("%s %8s %6s %5s %6s %12s %10s %9s %9s %7s", pre, "seq", "heads", "dim", "batch", "model", "time", "TFLOP/s", "TFLOP/s",
                "#wrong");
  } else {
    if (lead_) std::printf("# %10s", sp.c_str());
    std::printf("%s %10s %12s %8s %6s %10s %8s %8s %7s", pre, "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
  }
  if (native) std::printf(" %10s %7s", "MPI time", "speed");
  if (predict) std::printf(" %10s %7s", "predicted", "error");
  if (lead_) std::printf("\n# %10s", "");
  else std::printf("\n#");
  if (shaped_) std::printf(" %8s %6s %5s %6s %12s %10s %9s %9s %7s", "", "", "", "", "(GFLOP)", "(us)", "(job)", "(rank)", "");
  else std::printf(" %10s %12s %8s %6s %10s %8s %8s %7s", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (native) std::printf(" %10s %7s", "(us)", "vs MPI");
  if (predict) std::printf(" %10s %7s", "(us)", "");
  std::printf("\n");
}

void ExecPrinter::text_row(const PointRow& r) {
  const ExecOpts& o = x_.o;
  if (shaped_ && attention_words(r.shape) != words_) {
    words_ = attention_words(r.shape);
    std::printf("# from here: attention %s\n", words_.c_str());
  }
  std::string factor_name;
  double factor = exec::row_bus_factor(r, x_.size, factor_name);
  std::string wrong_s = r.checked ? std::to_string(r.wrong) : "-";
  if (lead_) std::printf("  %10llu", static_cast<unsigned long long>(r.value));
  if (shaped_) {
    std::printf("%s %8u %6u %5u %6u %12.3f %10.2f %9.3f %9.3f %7s", lead_ ? "" : " ", r.shape.seq, r.shape.heads, r.shape.dim,
                r.shape.batch, r.model_flops() / 1e9, r.time_s * 1e6, r.tflops(), r.tflops() / x_.size, wrong_s.c_str());
  } else {
    double alg = r.time_s > 0 ? static_cast<double>(r.size) / r.time_s / 1e9 : 0;
    std::printf("%s %10llu %12llu %8s %6s %10.2f %8.3f %8.3f %7s", lead_ ? "" : " ", static_cast<unsigned long long>(r.size),
                static_cast<unsigned long long>(r.count), dtype_word(r.shown_type), r.redop.c_str(), r.time_s * 1e6, alg, alg * factor,
                wrong_s.c_str());
  }
  if (o.compare == "native") {
    if (r.native_s >= 0) std::printf(" %10.2f %6.2fx", r.native_s * 1e6, r.native_s / r.time_s);
    else std::printf(" %10s %7s", "-", "-");
  }
  if (!o.predict.empty()) {
    if (r.predicted_s > 0) std::printf(" %10.2f %+6.0f%%", r.predicted_s * 1e6, (r.time_s - r.predicted_s) / r.predicted_s * 100);
    else std::printf(" %10s %7s", "-", "-");
  }
  std::printf("\n");
  std::fflush(stdout);
}

void ExecPrinter::row(const PointRow& r) {
  if (x_.o.json) {
    json_row(r);
  } else {
    if (rows_ == 0) text_header(r);
    text_row(r);
  }
  ++rows_;
  seen_.push_back(r);
}

// The notes under the table (overlap, predictions, MPI's own result, attention errors, wrong
// elements), from every row.
void ExecPrinter::end(uint64_t total_wrong) {
  const ExecOpts& o = x_.o;
  if (o.json) {
    std::printf(rows_ == 0 ? "[]\n" : "\n]\n");
    std::fflush(stdout);
    return;
  }
  const bool swept = !x_.sweep_param.empty();
  const std::string& sweep_param = x_.sweep_param;
  // How the notes below the table name a row.
  auto point = [&](const PointRow& r) {
    if (shaped_)
      return "seq " + std::to_string(r.shape.seq) +
             (swept && sweep_param != "seq" ? ", " + sweep_param + " " + std::to_string(r.value) : "");
    return (lead_ ? sweep_param + " " + std::to_string(r.value) + ", " : std::string()) + std::to_string(r.size) + " B";
  };
  const std::vector<PointRow>& rows = seen_;
  for (const PointRow& r : rows)
    if (r.compute_s >= 0)
      std::printf("# %s: compute %.2f ms + communication alone %.2f ms, together %.2f ms: %.0f%% of the communication hidden\n",
                  point(r).c_str(), r.compute_s * 1e3, r.comm_s * 1e3, r.time_s * 1e3, r.overlap * 100);
  if (o.compare == "native" && !rows.empty() && rows[0].native_s < 0 && !rows[0].native_why.empty())
    std::printf("# MPI's own collective is not timed: %s\n", rows[0].native_why.c_str());
  else if (o.compare == "native" && !rows.empty() && rows[0].group_ranks > 0 && rows[0].group_ranks != x_.size)
    std::printf("# MPI's own collective runs on each group of %d ranks, one call per group, as the schedule's postconditions say\n",
                rows[0].group_ranks);
  if (!o.predict.empty()) {
    std::printf("# predicted: the analytic simulator on %s; error = (measured - predicted) / predicted\n", o.predict.c_str());
    for (const PointRow& r : rows)
      if (!r.predict_error.empty()) {
        std::printf("# prediction failed: %s\n", r.predict_error.c_str());
        break;
      }
  }
  for (const PointRow& r : rows)
    if (r.mpi_differs > 0) {
      std::printf("# %s: MPI's own collective on the same inputs differs from ours in %lld elements\n", point(r).c_str(),
                  static_cast<long long>(r.mpi_differs));
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
      // Measured with Open MPI 4.1.4: its op/avx component adds 8-bit integers with saturating
      // instructions, so a u8 sum that overflows stops at 255 where C (and every schedule) wraps.
      if ((r.shown_type == DType::U8 || r.shown_type == DType::I8) && r.redop == "sum")
        std::printf(
            "#   Open MPI 4.1's op/avx component saturates 8-bit integer sums where C wraps them (open-mpi/ompi#8045); "
            "OMPI_MCA_op=^avx compares with its plain loop\n");
#endif
    }
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
  std::fflush(stdout);
}

}  // namespace sg::cli
