// Gauss-Newton on (launch, lat, 1/bw) for a platform's NCCL calibration (see nccl_fit.hpp).
#include "sim/nccl_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace sg::sim {

namespace {

using Vec = std::array<double, 3>;  // launch (s), lat, inv_bw

NcclCalibration to_k(const Vec& x) {
  NcclCalibration k;
  k.launch_s = x[0];
  k.lat = x[1];
  k.bw = 1 / x[2];
  return k;
}

const Vec kLow = {0, kMinFactor, 1 / kMaxFactor}, kHigh = {kMaxLaunch, kMaxFactor, 1 / kMinFactor};

// A weak pull towards NCCL's own figures (lat = bw = 1), weight kPrior per row's worth: where the
// rows cannot tell two parameters apart (a one-node ring all-reduce pays the same hops at every
// size, so its per-hop latency and its fixed cost trade one for the other) the fit keeps NCCL's
// latency and bandwidth and puts the difference in the launch, instead of wandering along the
// valley; where the rows can tell, it weighs what a 2 % error on every row does.
constexpr double kPrior = 0.02;

double prior_weight(size_t rows) { return kPrior * std::sqrt(static_cast<double>(rows)); }

// Σ ln(max(floor, predicted) / measured)²: the fit's error, with the host's floor or without (0).
double sum_sq_log(const std::vector<double>& measured, const std::vector<double>& predicted, double floor = 0) {
  double s = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    double r = std::log(std::max(floor, predicted[i]) / measured[i]);
    s += r * r;
  }
  return s;
}

double objective(const std::vector<double>& measured, const std::vector<double>& predicted, const Vec& x) {
  double w = prior_weight(measured.size());
  return sum_sq_log(measured, predicted) + w * w * (std::log(x[1]) * std::log(x[1]) + std::log(x[2]) * std::log(x[2]));
}

double rms(const std::vector<double>& measured, const std::vector<double>& predicted) {
  return std::sqrt(sum_sq_log(measured, predicted) / static_cast<double>(measured.size()));
}

// Least squares for the variables marked free in `freev`: minimise |r + J d|^2 over d (the other
// components 0), by the normal equations with Gaussian elimination (3 × 3 at most). False where
// they are singular.
bool solve_free(const std::vector<Vec>& J, const std::vector<double>& r, const std::array<bool, 3>& freev, Vec& d) {
  std::array<int, 3> idx{};
  int m = 0;
  for (int j = 0; j < 3; ++j)
    if (freev[j]) idx[m++] = j;
  d = {0, 0, 0};
  if (m == 0) return true;
  double A[3][4] = {};
  for (size_t i = 0; i < r.size(); ++i)
    for (int a = 0; a < m; ++a) {
      for (int b = 0; b < m; ++b) A[a][b] += J[i][idx[a]] * J[i][idx[b]];
      A[a][m] -= J[i][idx[a]] * r[i];
    }
  for (int c = 0; c < m; ++c) {
    int piv = c;
    for (int q = c + 1; q < m; ++q)
      if (std::fabs(A[q][c]) > std::fabs(A[piv][c])) piv = q;
    if (std::fabs(A[piv][c]) < 1e-300) return false;
    for (int q = 0; q <= m; ++q) std::swap(A[c][q], A[piv][q]);
    for (int q = 0; q < m; ++q) {
      if (q == c) continue;
      double f = A[q][c] / A[c][c];
      for (int w = c; w <= m; ++w) A[q][w] -= f * A[c][w];
    }
  }
  for (int a = 0; a < m; ++a) d[idx[a]] = A[a][m] / A[a][a];
  return true;
}

}  // namespace

double best_host_floor(const std::vector<double>& measured, const std::vector<double>& call, double start, bool& tells,
                       const std::vector<char>& may_bound) {
  // The objective is flat in h below the fastest call and, for a fixed set A of bounded rows,
  // least at ln h = mean of ln measured over A: try every A a threshold makes (rows sorted by
  // their call), keep the consistent ones.
  std::vector<size_t> order(call.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return call[a] < call[b]; });
  double fastest = order.empty() ? 0 : call[order[0]];
  double cap = kMaxLaunch;  // it bounds no row it may not
  for (size_t i = 0; i < call.size() && !may_bound.empty(); ++i)
    if (!may_bound[i]) cap = std::min(cap, call[i]);
  double best_h = 0, best = sum_sq_log(measured, call);
  double sum = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    sum += std::log(measured[order[k]]);
    double h = std::exp(sum / static_cast<double>(k + 1));
    if (h > cap) continue;
    // Consistent: it bounds the first k+1 calls and not the next.
    if (h < call[order[k]] || (k + 1 < order.size() && h > call[order[k + 1]])) continue;
    double f = sum_sq_log(measured, call, h);
    if (f < best) best = f, best_h = h;
  }
  tells = best_h >= fastest && best_h > 0;
  if (tells) return best_h;
  return std::min({start, fastest * (1 - 1e-9), cap});  // bounds no row: as given, or just under the fastest call
}

bool fit_nccl_calibration(const std::vector<double>& measured, const PredictFn& predict, NcclFit& out, Diagnostics& diags,
                          HostFloor* host) {
  out = NcclFit{};
  double h = host ? host->host_s : 0;
  // The rows as nccl-tests times them: the calls `raw` under the floor h.
  auto floored = [&](const std::vector<double>& raw) {
    std::vector<double> t(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) t[i] = std::max(h, raw[i]);
    return t;
  };
  bool tells = true;  // whether the rows told h (at the last profile kept)
  auto profile = [&](const std::vector<double>& raw) {
    if (!host || !host->fit) return;
    h = best_host_floor(measured, raw, host->host_s, tells, host->may_bound);
  };
  for (double m : measured)
    if (!(m > 0) || !std::isfinite(m)) return diags.fail("a measured time that is not positive");
  auto eval = [&](const Vec& x, std::vector<double>& t) {
    ++out.simulations;
    if (!predict(to_k(x), t, diags)) return false;
    if (t.size() != measured.size())
      return diags.fail("the simulation gave " + std::to_string(t.size()) + " times for " + std::to_string(measured.size()) + " rows");
    for (double v : t)
      if (!(v > 0) || !std::isfinite(v)) return diags.fail("the simulation gave a time that is not positive");
    return true;
  };
  Vec x = {0, 1, 1};
  std::vector<double> raw;
  if (!eval(x, raw)) return false;
  out.start_rms_log = rms(measured, floored(raw));  // NCCL's model with the floor as given
  profile(raw);
  std::vector<double> t = floored(raw);
  double f = objective(measured, t, x);
  constexpr int kMaxIterations = 4;
  for (int it = 0; it < kMaxIterations; ++it) {
    out.iterations = it + 1;
    // The Jacobian of ln t: the launch's column 1 / t; lat's and 1/bw's by a forward step of a
    // quarter of the current value (the response is piecewise linear, so a wide secant sees the
    // slope past a kink as well as before it).
    const size_t rows = measured.size();
    std::vector<Vec> J(rows + 2, Vec{0, 0, 0});
    std::vector<double> r(rows + 2, 0);
    for (size_t i = 0; i < rows; ++i) {
      J[i][0] = raw[i] >= h ? 1 / t[i] : 0;  // a row the host bounds does not see the launch
      r[i] = std::log(t[i] / measured[i]);
    }
    const double w = prior_weight(rows);  // the prior's rows: w ln lat and w ln(1/bw) (the square of w ln bw)
    r[rows] = w * std::log(x[1]);
    J[rows][1] = w / x[1];
    r[rows + 1] = w * std::log(x[2]);
    J[rows + 1][2] = w / x[2];
    for (int j = 1; j < 3; ++j) {
      Vec y = x;
      double step = 0.25 * x[j];
      y[j] += step;
      std::vector<double> ty;
      if (!eval(y, ty)) return false;
      ty = floored(ty);
      for (size_t i = 0; i < rows; ++i) J[i][j] = (ty[i] - t[i]) / (step * t[i]);
    }
    // Bounds: every choice of which variables are free (the others stay), each step clipped into
    // the box, the best by the linear model.
    Vec best_d{0, 0, 0};
    double best_lin = std::numeric_limits<double>::infinity();
    for (int mask = 1; mask < 8; ++mask) {
      std::array<bool, 3> freev = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
      Vec d;
      if (!solve_free(J, r, freev, d)) continue;
      for (int j = 0; j < 3; ++j) d[j] = std::clamp(x[j] + d[j], kLow[j], kHigh[j]) - x[j];
      double lin = 0;
      for (size_t i = 0; i < r.size(); ++i) {
        double e = r[i] + J[i][0] * d[0] + J[i][1] * d[1] + J[i][2] * d[2];
        lin += e * e;
      }
      if (lin < best_lin) best_lin = lin, best_d = d;
    }
    // The step, halved while the simulation says it is no better (three times at most).
    bool moved = false;
    for (int half = 0; half < 3 && !moved; ++half) {
      Vec y = x;
      for (int j = 0; j < 3; ++j) y[j] = x[j] + best_d[j];
      std::vector<double> rawy;
      if (!eval(y, rawy)) return false;
      double keep_h = h;
      bool keep_tells = tells;
      profile(rawy);
      std::vector<double> ty = floored(rawy);
      double fy = objective(measured, ty, y);
      if (fy < f) {
        bool small = f - fy < 1e-4 * f;
        x = y, t = ty, raw = rawy, f = fy, moved = true;
        if (small) it = kMaxIterations;  // converged
      } else {
        h = keep_h, tells = keep_tells;
        for (double& v : best_d) v /= 2;
      }
    }
    if (!moved) break;
  }
  out.k = to_k(x);
  out.k.host_s = h;
  if (host) {
    host->kept = host->fit && !tells;
    host->host_s = h;
  }
  out.predicted_s = t;
  out.rms_log = rms(measured, t);
  return true;
}

}  // namespace sg::sim
