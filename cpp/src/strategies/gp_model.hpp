// A Gaussian process regressor over configurations: the "forest" strategy's
// value model (`gp`, the default; a forest still learns where configurations
// fail).
//
// Why a GP beside the forest: a forest predicts an unvisited combination of
// settings from the splits its neighbours made, so a group of good
// configurations whose one-parameter neighbours are all poor (a needle: the
// optimum of convolution without block_size_y=4 needs block_size_y 2, tile
// 1x3, read_only 1 and use_shmem 1 at once) is ranked low until a proposal
// lands in it by chance.  A GP's prediction is a similarity-weighted
// average of every result, with a variance that grows with the distance to
// them, so such a group keeps a bound worth trying (docs/search_quality.md).
//
// Inputs are the parameters' value indices scaled to [0, 1] (value lists are
// sorted); the kernel is a product of one-dimensional exponential kernels,
// exp(-sum_p theta_p |a_p - b_p|), with one inverse length theta_p per
// parameter: on a two-valued parameter it is the Hamming kernel.  Lengths and
// the nugget maximise the marginal likelihood with the signal variance
// profiled out (coordinate search in log space, warm-started from the last
// fit); the mean is the training mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "aoe_native/rng.hpp"

namespace aoe {

struct GpOptions {
  // Results the GP conditions on at most (the best half and a random sample of
  // the rest): the cost of a prediction grows with their square.
  size_t max_train = 256;
  size_t max_hyper = 128;  // of them, the ones the hyperparameters are fitted on (every k-th)
};

class GaussianProcess {
 public:
  // `nvalues[p]` is the number of values of parameter p; rows of X are
  // row-major value indices, one per sample.
  void fit(const std::vector<uint16_t>& X, const std::vector<double>& y, const std::vector<size_t>& nvalues,
           const GpOptions& options, Rng& rng);
  // Posterior mean and variance of the latent value at each of n rows.
  void predict_rows(const uint16_t* const* rows, size_t n, double* mean, double* variance) const;
  // predict_rows() for each row equal to x but in parameter p, which takes each of its values (the same
  // up to rounding).  Its cost does not grow with the number of values: see the definition.
  void predict_line(const uint16_t* x, size_t p, std::vector<double>& mean, std::vector<double>& variance) const;
  bool fitted() const { return n_ > 0; }
  void clear() {
    n_ = 0;
    log_theta_.clear();
    by_param_.clear();
  }

 private:
  void set_lengths(const std::vector<double>& log_theta);
  double correlation(const uint16_t* a, const uint16_t* b) const;
  // Cholesky factor (lower, row-major) of R + nugget I over the m rows of X.
  bool factor(const uint16_t* X, size_t m, double nugget, std::vector<double>& L) const;
  double log_likelihood(const std::vector<uint16_t>& X, const std::vector<double>& y,
                        const std::vector<double>& log_theta, double log_nugget);

  size_t P_ = 0, n_ = 0;
  std::vector<size_t> nvalues_, offset_;
  std::vector<double> weight_;  // theta_p * d / (nv_p - 1) for parameter p at index distance d (offset_[p] + d)
  std::vector<double> log_theta_;
  double log_nugget_ = 0;
  std::vector<uint16_t> X_;        // the rows conditioned on
  std::vector<double> L_, alpha_;  // Cholesky factor of R + nugget I, and (R + nugget I)^-1 (y - mu)
  double mu_ = 0, sigma2_ = 1;
  std::vector<double> scratch_;
  mutable std::vector<double> v_;
  // predict_line's per-fit tables, made on first use: (R + nugget I)^-1, and per parameter p the rows
  // conditioned on grouped by their value of p (`order`, group c at [start[c], start[c + 1])) with the
  // inverse's rows and columns in that order.
  struct Grouped {
    std::vector<size_t> order, start;
    std::vector<double> inverse;
  };
  mutable std::vector<double> inverse_;
  mutable std::vector<Grouped> by_param_;
  mutable std::vector<double> rb_, z_, gram_, line_h_;
  const Grouped& grouped(size_t p) const;
};

}  // namespace aoe
