// A random forest regressor over configurations (the learned cost model of
// the "forest" strategy).
//
// Features are the parameters' value indices.  Value lists are sorted, so a
// threshold on the index is a threshold on the value: trees need nothing
// else, and parameters with few values cost little.  Split search uses a
// histogram over the value indices of each candidate feature, O(samples +
// values) per feature and node.  Prediction gives the mean and the variance
// over the trees, the uncertainty that the acquisition needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "aoe_native/rng.hpp"

namespace aoe {

struct ForestOptions {
  // 32 trees, not 16: a steadier ranking and spread.  Seeds 400-479 (convolution family), 400-429
  // (pnpoly), 400-419 (GEMM), 200-259 (Ascend tilings), mean score change per space: convolution
  // +0.001 / +0.010 / +0.016 / +0.066 (without tile_size_x=1) / -0.011, GEMM -0.008 to +0.102 (p10
  // without MDIMC=16 0.27 -> 0.57), pnpoly -0.006 to +0.084, Ascend -0.049 to +0.039; tune_op's warm
  // runs (5 tiling spaces, 300 evaluations, seeds 100-139) mean gap 1.59% -> 1.31%, p90 3.78% -> 2.72%.
  // It doubles the model's cost (0.22 -> 0.45 ms per evaluation at 1,508 evaluations); 64 trees
  // scored lower than 32 on convolution without tile_size_x=1 (0.685 against 0.712).
  size_t trees = 32;
  size_t min_split = 3;        // a node with fewer samples is a leaf
  size_t min_leaf = 1;         // samples on each side of a split at least
  double features = 0.8;       // share of the parameters tried at each split
  size_t max_depth = 32;
};

class RandomForest {
 public:
  // `nvalues[p]` is the number of values of parameter p (index features are
  // in [0, nvalues[p])).  Rows of X are row-major, one per sample.
  void fit(const std::vector<uint16_t>& X, const std::vector<double>& y, const std::vector<size_t>& nvalues,
           const ForestOptions& options, Rng& rng);
  // Mean and variance over the trees of the prediction for one row.
  void predict(const uint16_t* x, double& mean, double& variance) const;
  // predict() for n rows at once: tree by tree, so that one tree's nodes stay
  // in cache while every row descends it (sums in tree order, as for one row).
  void predict_rows(const uint16_t* const* rows, size_t n, double* mean, double* variance) const;
  // predict() for each row equal to x but in parameter p, which takes each of
  // its values v (mean[v], variance[v]; the same results bit for bit).  Each
  // tree is descended once, branching only where it tests p, so a greedy
  // walk's step scores a line of neighbours for little more than one of them.
  void predict_line(const uint16_t* x, size_t p, std::vector<double>& mean, std::vector<double>& variance) const;
  bool fitted() const { return !roots_.empty(); }
  void clear() {
    nodes_.clear();
    roots_.clear();
  }

 private:
  struct Node {
    int32_t left = -1;   // -1: leaf
    int32_t right = -1;
    uint16_t feature = 0;
    uint16_t threshold = 0;  // left when x[feature] <= threshold
    double value = 0;        // leaf mean
  };
  int32_t build(uint32_t* first, uint32_t* last, size_t depth, Rng& rng);
  // Adds the leaf values of the tree below `id` for values lo..hi of parameter p.
  void descend_line(int32_t id, const uint16_t* x, size_t p, size_t lo, size_t hi, std::vector<double>& s,
                    std::vector<double>& s2) const;

  std::vector<Node> nodes_;
  std::vector<int32_t> roots_;
  // Fitting scratch.
  std::vector<uint16_t> cols_;  // samples' features, column-major
  size_t n_ = 0;
  const std::vector<double>* y_ = nullptr;
  std::vector<size_t> nvalues_;
  ForestOptions opt_;
  size_t P_ = 0;
  std::vector<uint32_t> features_;
  std::vector<double> bin_sum_;
  std::vector<uint32_t> bin_count_, right_;
};

}  // namespace aoe
