#include "forest_model.hpp"

#include <algorithm>
#include <cmath>

namespace aoe {

void RandomForest::fit(const std::vector<uint16_t>& X, const std::vector<double>& y,
                       const std::vector<size_t>& nvalues, const ForestOptions& options, Rng& rng) {
  nodes_.clear();
  roots_.clear();
  const size_t n = y.size();
  P_ = nvalues.size();
  if (n == 0 || P_ == 0) return;
  // Column-major copy: split search scans one feature over a node's samples.
  cols_.resize(n * P_);
  for (size_t i = 0; i < n; ++i)
    for (size_t p = 0; p < P_; ++p) cols_[p * n + i] = X[i * P_ + p];
  n_ = n;
  y_ = &y;
  nvalues_ = nvalues;
  opt_ = options;
  size_t max_values = 1;
  for (size_t v : nvalues) max_values = std::max(max_values, v);
  bin_sum_.assign(max_values, 0.0);
  bin_count_.assign(max_values, 0);
  features_.resize(P_);
  std::vector<uint32_t> sample(n);
  for (size_t t = 0; t < std::max<size_t>(1, opt_.trees); ++t) {
    // Bootstrap: n draws with replacement.
    for (size_t i = 0; i < n; ++i) sample[i] = uint32_t(rng.below(n));
    roots_.push_back(build(sample.data(), sample.data() + n, 0, rng));
  }
}

int32_t RandomForest::build(uint32_t* first, uint32_t* last, size_t depth, Rng& rng) {
  const std::vector<double>& y = *y_;
  const size_t count = size_t(last - first);
  double sum = 0;
  bool constant = true;
  for (uint32_t* s = first; s != last; ++s) {
    sum += y[*s];
    constant = constant && y[*s] == y[*first];
  }
  const int32_t id = int32_t(nodes_.size());
  nodes_.push_back(Node{});
  nodes_[id].value = sum / double(count);
  if (count < opt_.min_split || depth >= opt_.max_depth || constant) return id;

  // A random subset of the features (partial Fisher-Yates).
  for (size_t p = 0; p < P_; ++p) features_[p] = uint32_t(p);
  const size_t m = std::clamp<size_t>(size_t(std::lround(opt_.features * double(P_))), 1, P_);
  double best_gain = 0;
  int best_feature = -1;
  uint16_t best_threshold = 0;
  const double parent = sum * sum / double(count);
  const size_t min_leaf = std::max<size_t>(1, opt_.min_leaf);
  for (size_t k = 0; k < m; ++k) {
    std::swap(features_[k], features_[k + rng.below(P_ - k)]);
    const size_t f = features_[k];
    const size_t nv = nvalues_[f];
    if (nv < 2) continue;
    std::fill(bin_sum_.begin(), bin_sum_.begin() + nv, 0.0);
    std::fill(bin_count_.begin(), bin_count_.begin() + nv, 0u);
    const uint16_t* col = &cols_[f * n_];
    for (uint32_t* s = first; s != last; ++s) {
      const uint16_t v = col[*s];
      bin_sum_[v] += y[*s];
      ++bin_count_[v];
    }
    // Thresholds between consecutive non-empty bins, placed half way so that
    // unseen values in the gap go to the nearer side.
    double left_sum = 0;
    size_t left_count = 0;
    int prev = -1;
    for (size_t v = 0; v < nv; ++v) {
      if (bin_count_[v] == 0) continue;
      if (prev >= 0 && left_count >= min_leaf && count - left_count >= min_leaf) {
        const double right_sum = sum - left_sum;
        const double gain = left_sum * left_sum / double(left_count) +
                            right_sum * right_sum / double(count - left_count) - parent;
        if (gain > best_gain * (1 + 1e-12) + 1e-300) {
          best_gain = gain;
          best_feature = int(f);
          best_threshold = uint16_t((size_t(prev) + v) / 2);
        }
      }
      left_sum += bin_sum_[v];
      left_count += bin_count_[v];
      prev = int(v);
    }
  }
  if (best_feature < 0) return id;
  // Stable partition (std::partition's order differs between standard
  // libraries, and the order of samples changes floating-point sums).
  const uint16_t* col = &cols_[size_t(best_feature) * n_];
  uint32_t* mid = first;
  right_.clear();
  for (uint32_t* s = first; s != last; ++s) {
    if (col[*s] <= best_threshold) *mid++ = *s;
    else right_.push_back(*s);
  }
  std::copy(right_.begin(), right_.end(), mid);
  const int32_t left = build(first, mid, depth + 1, rng);
  const int32_t right = build(mid, last, depth + 1, rng);
  nodes_[id].left = left;
  nodes_[id].right = right;
  nodes_[id].feature = uint16_t(best_feature);
  nodes_[id].threshold = best_threshold;
  return id;
}

void RandomForest::predict(const uint16_t* x, double& mean, double& variance) const {
  predict_rows(&x, 1, &mean, &variance);
}

void RandomForest::predict_rows(const uint16_t* const* rows, size_t n, double* mean, double* variance) const {
  std::fill(mean, mean + n, 0.0);  // sums first, in tree order
  std::fill(variance, variance + n, 0.0);
  for (int32_t root : roots_) {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t* x = rows[i];
      const Node* node = &nodes_[root];
      while (node->left >= 0) node = &nodes_[x[node->feature] <= node->threshold ? node->left : node->right];
      mean[i] += node->value;
      variance[i] += node->value * node->value;
    }
  }
  const double t = double(roots_.size());
  for (size_t i = 0; i < n; ++i) {
    const double s2 = variance[i];
    mean[i] /= t;
    variance[i] = std::max(0.0, s2 / t - mean[i] * mean[i]);
  }
}

void RandomForest::descend_line(int32_t id, const uint16_t* x, size_t p, size_t lo, size_t hi, std::vector<double>& s,
                                std::vector<double>& s2) const {
  while (nodes_[id].left >= 0) {
    const Node& node = nodes_[id];
    if (node.feature != p) {
      id = x[node.feature] <= node.threshold ? node.left : node.right;
    } else if (hi <= node.threshold) {
      id = node.left;
    } else if (lo > node.threshold) {
      id = node.right;
    } else {
      descend_line(node.left, x, p, lo, node.threshold, s, s2);
      lo = size_t(node.threshold) + 1;
      id = node.right;
    }
  }
  const double value = nodes_[id].value;
  for (size_t v = lo; v <= hi; ++v) {
    s[v] += value;
    s2[v] += value * value;
  }
}

void RandomForest::predict_line(const uint16_t* x, size_t p, std::vector<double>& mean,
                                std::vector<double>& variance) const {
  const size_t nv = nvalues_[p];
  mean.assign(nv, 0.0);  // sums first, in tree order as in predict()
  variance.assign(nv, 0.0);
  for (int32_t root : roots_) descend_line(root, x, p, 0, nv - 1, mean, variance);
  const double t = double(roots_.size());
  for (size_t v = 0; v < nv; ++v) {
    const double s2 = variance[v];
    mean[v] /= t;
    variance[v] = std::max(0.0, s2 / t - mean[v] * mean[v]);
  }
}

}  // namespace aoe
