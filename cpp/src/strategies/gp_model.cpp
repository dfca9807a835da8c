#include "gp_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace aoe {
namespace {

// Solves L L^T x = b in place (L lower, m x m, row-major).
void cholesky_solve(const std::vector<double>& L, size_t m, std::vector<double>& b) {
  for (size_t i = 0; i < m; ++i) {
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= L[i * m + k] * b[k];
    b[i] = s / L[i * m + i];
  }
  for (size_t i = m; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < m; ++k) s -= L[k * m + i] * b[k];
    b[i] = s / L[i * m + i];
  }
}

double mean_of(const std::vector<double>& y) { return std::accumulate(y.begin(), y.end(), 0.0) / double(y.size()); }

}  // namespace

void GaussianProcess::set_lengths(const std::vector<double>& log_theta) {
  weight_.clear();
  offset_.clear();
  for (size_t p = 0; p < P_; ++p) {
    offset_.push_back(weight_.size());
    const size_t nv = nvalues_[p];
    const double t = std::exp(log_theta[p]) / double(std::max<size_t>(1, nv - 1));
    for (size_t d = 0; d < nv; ++d) weight_.push_back(t * double(d));
  }
}

double GaussianProcess::correlation(const uint16_t* a, const uint16_t* b) const {
  double s = 0;
  for (size_t p = 0; p < P_; ++p) s += weight_[offset_[p] + size_t(std::abs(int(a[p]) - int(b[p])))];
  return std::exp(-s);
}

bool GaussianProcess::factor(const uint16_t* X, size_t m, double nugget, std::vector<double>& L) const {
  L.assign(m * m, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j <= i; ++j) L[i * m + j] = correlation(X + i * P_, X + j * P_) + (i == j ? nugget : 0.0);
  for (size_t j = 0; j < m; ++j) {
    double d = L[j * m + j];
    for (size_t k = 0; k < j; ++k) d -= L[j * m + k] * L[j * m + k];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    L[j * m + j] = d;
    const double* lj = &L[j * m];
    for (size_t i = j + 1; i < m; ++i) {
      const double* li = &L[i * m];
      double s = li[j];
      for (size_t k = 0; k < j; ++k) s -= li[k] * lj[k];
      L[i * m + j] = s / d;
    }
  }
  return true;
}

// Log marginal likelihood with the signal variance at its maximum, up to a constant.
double GaussianProcess::log_likelihood(const std::vector<uint16_t>& X, const std::vector<double>& y,
                                       const std::vector<double>& log_theta, double log_nugget) {
  set_lengths(log_theta);
  const size_t m = y.size();
  if (!factor(X.data(), m, std::exp(log_nugget), scratch_)) return -HUGE_VAL;
  const double mu = mean_of(y);
  std::vector<double> a(m), b(m);
  for (size_t i = 0; i < m; ++i) a[i] = b[i] = y[i] - mu;
  cholesky_solve(scratch_, m, b);
  double quad = 0, logdet = 0;
  for (size_t i = 0; i < m; ++i) {
    quad += a[i] * b[i];
    logdet += std::log(scratch_[i * m + i]);
  }
  return -0.5 * double(m) * std::log(std::max(quad / double(m), 1e-300)) - logdet;
}

void GaussianProcess::fit(const std::vector<uint16_t>& X, const std::vector<double>& y,
                          const std::vector<size_t>& nvalues, const GpOptions& options, Rng& rng) {
  const size_t n = y.size();
  P_ = nvalues.size();
  n_ = 0;
  if (n == 0 || P_ == 0) return;
  const bool first = log_theta_.size() != P_ || nvalues_ != nvalues;
  if (first) {
    log_theta_.assign(P_, std::log(2.0));
    log_nugget_ = std::log(1e-3);
  }
  nvalues_ = nvalues;
  // The rows: all, or the best half of max_train and a random sample of the rest, in their given order.
  std::vector<size_t> rows(n);
  std::iota(rows.begin(), rows.end(), size_t(0));
  const size_t m = std::min(n, std::max<size_t>(2, options.max_train));
  if (m < n) {
    std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return y[a] < y[b]; });
    for (size_t k = m / 2; k < m; ++k) std::swap(rows[k], rows[k + rng.below(n - k)]);
    rows.resize(m);
    std::sort(rows.begin(), rows.end());
  }
  X_.clear();
  std::vector<double> ym;
  for (size_t i : rows) {
    X_.insert(X_.end(), &X[i * P_], &X[i * P_] + P_);
    ym.push_back(y[i]);
  }
  // Hyperparameters on every k-th of them: a likelihood costs a factorisation.
  const size_t h = std::min(m, std::max<size_t>(2, options.max_hyper));
  std::vector<uint16_t> Xh;
  std::vector<double> yh;
  for (size_t k = 0; k < h; ++k) {
    const size_t i = k * m / h;
    Xh.insert(Xh.end(), &X_[i * P_], &X_[i * P_] + P_);
    yh.push_back(ym[i]);
  }
  // One pass of doubling or halving each length and the nugget in turn (three on the first fit).
  double best = log_likelihood(Xh, yh, log_theta_, log_nugget_);
  for (int pass = 0; pass < (first ? 3 : 1); ++pass) {
    for (size_t p = 0; p <= P_; ++p) {
      for (double step : {std::log(2.0), -std::log(2.0)}) {
        std::vector<double> t = log_theta_;
        double g = log_nugget_;
        if (p < P_) t[p] = std::clamp(t[p] + step, std::log(1e-3), std::log(1e3));
        else g = std::clamp(g + 2 * step, std::log(1e-6), 0.0);
        const double ll = log_likelihood(Xh, yh, t, g);
        if (ll > best + 1e-9) {
          best = ll;
          log_theta_ = t;
          log_nugget_ = g;
          break;
        }
      }
    }
  }
  set_lengths(log_theta_);
  double nugget = std::exp(log_nugget_);
  while (!factor(X_.data(), m, nugget, L_)) nugget *= 10;  // (rounding on near-duplicate rows)
  mu_ = mean_of(ym);
  alpha_.resize(m);
  for (size_t i = 0; i < m; ++i) alpha_[i] = ym[i] - mu_;
  cholesky_solve(L_, m, alpha_);
  double quad = 0;
  for (size_t i = 0; i < m; ++i) quad += (ym[i] - mu_) * alpha_[i];
  sigma2_ = std::max(quad / double(m), 1e-12);
  n_ = m;
  inverse_.clear();
  by_param_.clear();
}

// mean = mu + r . alpha and variance = sigma2 (1 - |L^-1 r|^2), r the correlations with the rows conditioned
// on.  kBlock rows at a time, their forward substitutions interleaved: each row of L is read once for all of
// them, and the independent sums fill the vector lanes (each row's sum keeps its order, so the result is the
// same as one row at a time).
void GaussianProcess::predict_rows(const uint16_t* const* rows, size_t n, double* mean, double* variance) const {
  constexpr size_t kBlock = 8;
  const size_t m = n_;
  v_.resize(m * kBlock);  // v_[k * kBlock + j]: (L^-1 r)_k of the block's j-th row
  for (size_t first = 0; first < n; first += kBlock) {
    const size_t b = std::min(kBlock, n - first);
    const uint16_t* x[kBlock];
    for (size_t j = 0; j < kBlock; ++j) x[j] = rows[first + std::min(j, b - 1)];  // (a short block repeats its last)
    double mu[kBlock], vv[kBlock], s[kBlock];
    for (size_t j = 0; j < kBlock; ++j) mu[j] = mu_, vv[j] = 0;
    for (size_t i = 0; i < m; ++i) {
      const double* li = &L_[i * m];
      for (size_t j = 0; j < kBlock; ++j) {
        const double r = correlation(x[j], &X_[i * P_]);
        mu[j] += r * alpha_[i];
        s[j] = r;
      }
      for (size_t k = 0; k < i; ++k) {
        const double l = li[k];
        const double* vk = &v_[k * kBlock];
        for (size_t j = 0; j < kBlock; ++j) s[j] -= l * vk[j];
      }
      double* vi = &v_[i * kBlock];
      for (size_t j = 0; j < kBlock; ++j) {
        vi[j] = s[j] / li[i];
        vv[j] += vi[j] * vi[j];
      }
    }
    for (size_t j = 0; j < b; ++j) {
      mean[first + j] = mu[j];
      variance[first + j] = sigma2_ * std::max(0.0, 1.0 - vv[j]);
    }
  }
}

const GaussianProcess::Grouped& GaussianProcess::grouped(size_t p) const {
  const size_t m = n_;
  if (inverse_.empty()) {
    // L^-1 a column at a time, then (R + nugget I)^-1 = L^-T L^-1 as a sum of outer products of its rows.
    std::vector<double> inv_l(m * m, 0.0);
    for (size_t j = 0; j < m; ++j)
      for (size_t i = j; i < m; ++i) {
        double s = i == j ? 1.0 : 0.0;
        for (size_t k = j; k < i; ++k) s -= L_[i * m + k] * inv_l[k * m + j];
        inv_l[i * m + j] = s / L_[i * m + i];
      }
    inverse_.assign(m * m, 0.0);
    for (size_t k = 0; k < m; ++k)
      for (size_t i = 0; i <= k; ++i) {
        const double a = inv_l[k * m + i];
        for (size_t j = 0; j <= k; ++j) inverse_[i * m + j] += a * inv_l[k * m + j];
      }
  }
  if (by_param_.size() != P_) by_param_.assign(P_, Grouped());
  Grouped& g = by_param_[p];
  if (g.order.empty()) {
    const size_t nv = nvalues_[p];
    g.order.resize(m);
    std::iota(g.order.begin(), g.order.end(), size_t(0));
    std::stable_sort(g.order.begin(), g.order.end(), [&](size_t a, size_t b) { return X_[a * P_ + p] < X_[b * P_ + p]; });
    g.start.assign(nv + 1, 0);
    for (size_t i = 0; i < m; ++i) ++g.start[X_[i * P_ + p] + 1];
    for (size_t c = 0; c < nv; ++c) g.start[c + 1] += g.start[c];
    g.inverse.resize(m * m);
    for (size_t a = 0; a < m; ++a)
      for (size_t b = 0; b < m; ++b) g.inverse[a * m + b] = inverse_[g.order[a] * m + g.order[b]];
  }
  return g;
}

// Along the line, a row's correlation with training row i factors as rb_i, its correlation over the other
// parameters, times h(v, c) = exp(-w_p(|v - c|)) where c is row i's value of p.  So with A_c the sum of
// rb_i alpha_i and G_cc' the sum of rb_i rb_j (R + nugget I)^-1_ij over the rows of groups c and c':
//   mean_v = mu + sum_c h(v, c) A_c,   variance_v = sigma2 (1 - sum_cc' h(v, c) G_cc' h(v, c')),
// one O(m^2) pass over the inverse for the whole line instead of one O(m^2) solve per value.
void GaussianProcess::predict_line(const uint16_t* x, size_t p, std::vector<double>& mean,
                                   std::vector<double>& variance) const {
  const size_t nv = nvalues_[p], m = n_;
  const Grouped& g = grouped(p);
  rb_.resize(m);
  for (size_t a = 0; a < m; ++a) {
    const uint16_t* xi = &X_[g.order[a] * P_];
    double s = 0;
    for (size_t q = 0; q < P_; ++q)
      if (q != p) s += weight_[offset_[q] + size_t(std::abs(int(x[q]) - int(xi[q])))];
    rb_[a] = std::exp(-s);
  }
  z_.assign(nv, 0.0);  // A_c
  for (size_t c = 0; c < nv; ++c)
    for (size_t a = g.start[c]; a < g.start[c + 1]; ++a) z_[c] += rb_[a] * alpha_[g.order[a]];
  gram_.assign(nv * nv, 0.0);
  for (size_t c = 0; c < nv; ++c)
    for (size_t a = g.start[c]; a < g.start[c + 1]; ++a) {
      const double* row = &g.inverse[a * m];
      for (size_t d = 0; d < nv; ++d) {
        double s[4] = {0, 0, 0, 0};  // four sums: independent adds the compiler may vectorise
        size_t b = g.start[d];
        for (; b + 4 <= g.start[d + 1]; b += 4)
          for (size_t k = 0; k < 4; ++k) s[k] += row[b + k] * rb_[b + k];
        for (; b < g.start[d + 1]; ++b) s[0] += row[b] * rb_[b];
        gram_[c * nv + d] += rb_[a] * ((s[0] + s[1]) + (s[2] + s[3]));
      }
    }
  mean.resize(nv);
  variance.resize(nv);
  std::vector<double>& h = line_h_;
  h.resize(nv);
  for (size_t v = 0; v < nv; ++v) {
    for (size_t c = 0; c < nv; ++c) h[c] = std::exp(-weight_[offset_[p] + (v > c ? v - c : c - v)]);
    double mu = mu_, q = 0;
    for (size_t c = 0; c < nv; ++c) {
      mu += h[c] * z_[c];
      double t = 0;
      for (size_t d = 0; d < nv; ++d) t += gram_[c * nv + d] * h[d];
      q += h[c] * t;
    }
    mean[v] = mu;
    variance[v] = sigma2_ * std::max(0.0, 1.0 - q);
  }
}

}  // namespace aoe
