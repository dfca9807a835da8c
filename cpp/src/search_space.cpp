#include "aoe_native/search_space.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <stdexcept>

namespace aoe {

namespace {

constexpr size_t kMaxValues = 65535;  // value indices are stored as uint16

// "1.2e+24" for huge counts, digits otherwise.
std::string format_count(double n) {
  if (n < 1e15) return std::to_string(uint64_t(std::llround(n)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", n);
  return buf;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return s != "and" && s != "or" && s != "not" && s != "True" && s != "False";
}

void check_names(const std::vector<std::string>& names) {
  if (names.empty()) throw std::invalid_argument("a search space needs at least one parameter");
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (!is_identifier(n))
      throw std::invalid_argument("parameter name '" + n +
                                  "' is not a valid identifier (letters, digits, '_'; not a keyword)");
    if (!seen.insert(n).second) throw std::invalid_argument("parameter '" + n + "' is given twice");
  }
}

}  // namespace

SearchSpace::SearchSpace(std::vector<std::string> names, std::vector<std::vector<int64_t>> values,
                         const std::vector<std::string>& restrictions, const std::function<bool()>& stop)
    : names_(std::move(names)), values_(std::move(values)) {
  check_names(names_);
  if (values_.size() != names_.size())
    throw std::invalid_argument("got " + std::to_string(names_.size()) + " parameter names but " +
                                std::to_string(values_.size()) + " value lists");
  for (size_t p = 0; p < names_.size(); ++p) {
    const auto& v = values_[p];
    if (v.empty()) throw std::invalid_argument("parameter '" + names_[p] + "' has no values");
    if (v.size() > kMaxValues)
      throw std::invalid_argument("parameter '" + names_[p] + "' has more than 65535 values");
    std::vector<int64_t> sorted(v);
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      throw std::invalid_argument("parameter '" + names_[p] + "' lists the value " + std::to_string(*dup) +
                                  " twice");
  }
  build(restrictions, stop);
}

void SearchSpace::build(const std::vector<std::string>& restriction_texts, const std::function<bool()>& stop) {
  const size_t np = names_.size();
  restrictions_.clear();
  for (const auto& text : restriction_texts) restrictions_.emplace_back(text, names_);

  // Mixed-radix rank weights, parameter 0 most significant, so that
  // depth-first enumeration produces ranks in increasing order.
  radix_.assign(np, 1);
  double cart = 1;
  for (size_t p = np; p-- > 0;) {
    if (p + 1 < np) radix_[p] = radix_[p + 1] * values_[p + 1].size();
    cart *= double(values_[p].size());
  }
  cartesian_ = cart;
  if (cart >= 9.2e18)
    throw std::invalid_argument("the Cartesian product of the value lists has " + format_count(cart) +
                                " points, more than 2^63");
  const double row_bytes = double(np) * sizeof(uint16_t) + sizeof(uint64_t);
  const double max_rows = std::min(kMaxBytes / row_bytes, double(0xffffffffULL));
  auto too_large = [&](const std::string& count) {
    return std::invalid_argument("the search space has " + count + " valid configurations, more than the " +
                                 format_count(max_rows) + " that fit in " + format_count(kMaxBytes / (1 << 30)) +
                                 " GiB (" + std::to_string(np) + " parameters, Cartesian product " +
                                 format_count(cart) + "): give fewer values or restrictions that keep fewer");
  };
  if (restriction_texts.empty() && cart > max_rows) throw too_large(format_count(cart));

  // Each restriction is checked at the depth where its last parameter is bound;
  // parameter-free restrictions are checked once, up front.
  std::vector<std::vector<const Expr*>> at_depth(np);
  std::vector<int64_t> cur(np, 0);
  for (const auto& r : restrictions_) {
    if (r.params().empty()) {
      if (!r.holds(cur.data())) return;  // constant false: no valid configuration
      continue;
    }
    at_depth[size_t(r.params().back())].push_back(&r);
  }

  std::vector<uint16_t> pos(np, 0);
  idx_.clear();
  ranks_.clear();
  // Room for up to 2^20 configurations up front: growing would copy the rows
  // and fault in fresh pages at every doubling (a third of the construction
  // time of a 241,600-configuration space), while capacity never written to is
  // only address space.
  const size_t room = size_t(std::min(cart, double(size_t(1) << 20)));
  idx_.reserve(room * np);
  ranks_.reserve(room);
  size_t depth = 0;
  uint64_t rank = 0;
  uint32_t steps = 0;
  // Iterative DFS: pos[depth] is the value index being tried at that depth.
  while (true) {
    if ((++steps & 0xfffff) == 0 && stop && stop()) throw BuildStopped();
    if (pos[depth] >= values_[depth].size()) {
      if (depth == 0) break;
      pos[depth] = 0;
      --depth;
      rank -= radix_[depth] * pos[depth];
      ++pos[depth];
      continue;
    }
    cur[depth] = values_[depth][pos[depth]];
    bool ok = true;
    for (const Expr* r : at_depth[depth])
      if (!r->holds(cur.data())) {
        ok = false;
        break;
      }
    if (!ok) {
      ++pos[depth];
      continue;
    }
    if (depth + 1 == np) {
      idx_.insert(idx_.end(), pos.begin(), pos.end());
      ranks_.push_back(rank + pos[depth]);
      if (double(ranks_.size()) > max_rows) throw too_large("more than " + format_count(max_rows));
      ++pos[depth];
    } else {
      rank += radix_[depth] * pos[depth];
      ++depth;
    }
  }
  if (ranks_.capacity() > 2 * ranks_.size()) {  // give most of the unused room back
    idx_.shrink_to_fit();
    ranks_.shrink_to_fit();
  }
}

SearchSpace SearchSpace::from_configs(std::vector<std::string> names,
                                      const std::vector<std::vector<int64_t>>& rows) {
  check_names(names);
  const size_t np = names.size();
  SearchSpace s;
  s.names_ = std::move(names);
  s.values_.assign(np, {});
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != np)
      throw std::invalid_argument("configuration " + std::to_string(r) + " has " + std::to_string(rows[r].size()) +
                                  " values, expected " + std::to_string(np));
  }
  for (size_t p = 0; p < np; ++p) {
    auto& v = s.values_[p];
    for (const auto& row : rows) v.push_back(row[p]);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.size() > kMaxValues)
      throw std::invalid_argument("parameter '" + s.names_[p] + "' has more than 65535 values");
  }
  s.radix_.assign(np, 1);
  double cart = 1;
  for (size_t p = np; p-- > 0;) {
    if (p + 1 < np) s.radix_[p] = s.radix_[p + 1] * s.values_[p + 1].size();
    cart *= double(std::max<size_t>(1, s.values_[p].size()));
  }
  s.cartesian_ = rows.empty() ? 0 : cart;
  if (cart >= 9.2e18) throw std::invalid_argument("the recorded value lists span more than 2^63 points");

  std::vector<std::pair<uint64_t, size_t>> order;
  order.reserve(rows.size());
  std::vector<uint16_t> idx(np);
  for (size_t r = 0; r < rows.size(); ++r) {
    uint64_t rank = 0;
    for (size_t p = 0; p < np; ++p)
      rank += s.radix_[p] * uint64_t(std::lower_bound(s.values_[p].begin(), s.values_[p].end(), rows[r][p]) -
                                     s.values_[p].begin());
    order.emplace_back(rank, r);
  }
  std::sort(order.begin(), order.end());
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i].first == order[i - 1].first)
      throw std::invalid_argument("configuration " + std::to_string(order[i].second) +
                                  " repeats configuration " + std::to_string(order[i - 1].second));
  s.ranks_.reserve(order.size());
  s.idx_.reserve(order.size() * np);
  for (const auto& [rank, r] : order) {
    s.ranks_.push_back(rank);
    for (size_t p = 0; p < np; ++p)
      s.idx_.push_back(uint16_t(std::lower_bound(s.values_[p].begin(), s.values_[p].end(), rows[r][p]) -
                                s.values_[p].begin()));
  }
  return s;
}

void SearchSpace::values(ConfigId c, int64_t* out) const {
  const uint16_t* ix = indices(c);
  for (size_t p = 0; p < names_.size(); ++p) out[p] = values_[p][ix[p]];
}

uint64_t SearchSpace::rank_of(const uint16_t* idx) const {
  uint64_t r = 0;
  for (size_t p = 0; p < names_.size(); ++p) r += radix_[p] * idx[p];
  return r;
}

std::optional<ConfigId> SearchSpace::find_indices(const uint16_t* idx) const {
  for (size_t p = 0; p < names_.size(); ++p)
    if (idx[p] >= values_[p].size()) return std::nullopt;
  const uint64_t r = rank_of(idx);
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), r);
  if (it == ranks_.end() || *it != r) return std::nullopt;
  return ConfigId(it - ranks_.begin());
}

// Ranks are sorted and distinct, so at most |rank - ranks_[c]| valid configs lie
// between c and the one sought: the binary search needs only that window.
std::optional<ConfigId> SearchSpace::find_rank_near(ConfigId c, uint64_t rank) const {
  const uint64_t base = ranks_[c];
  if (rank == base) return c;
  // Every rank valid (no restriction removed any): a rank is its own id.
  if (ranks_.back() + 1 == ranks_.size())
    return rank < ranks_.size() ? std::optional<ConfigId>(ConfigId(rank)) : std::nullopt;
  auto first = ranks_.begin(), last = ranks_.end();
  if (rank > base) {
    first += ptrdiff_t(c) + 1;
    last = first + ptrdiff_t(std::min<uint64_t>(rank - base, uint64_t(ranks_.end() - first)));
  } else {
    last = first + ptrdiff_t(c);
    first = last - ptrdiff_t(std::min<uint64_t>(base - rank, c));
  }
  auto it = std::lower_bound(first, last, rank);
  if (it == last || *it != rank) return std::nullopt;
  return ConfigId(it - ranks_.begin());
}

std::optional<ConfigId> SearchSpace::find_changed(ConfigId c, size_t p, size_t v) const {
  if (p >= names_.size() || v >= values_[p].size()) return std::nullopt;
  const uint64_t cur = index(c, p);
  return find_rank_near(c, ranks_[c] - radix_[p] * cur + radix_[p] * v);
}

std::optional<ConfigId> SearchSpace::find_values(const int64_t* vals) const {
  std::vector<uint16_t> idx(names_.size());
  for (size_t p = 0; p < names_.size(); ++p) {
    auto it = std::find(values_[p].begin(), values_[p].end(), vals[p]);
    if (it == values_[p].end()) return std::nullopt;
    idx[p] = uint16_t(it - values_[p].begin());
  }
  return find_indices(idx.data());
}

int SearchSpace::first_violated(const int64_t* vals) const {
  for (size_t i = 0; i < restrictions_.size(); ++i)
    if (!restrictions_[i].holds(vals)) return int(i);
  return -1;
}

void SearchSpace::neighbours(ConfigId c, Neighbourhood kind, std::vector<ConfigId>& out) const {
  out.clear();
  if (kind == Neighbourhood::Repaired) {
    // Ranks are mixed-radix: changing parameter p from a to b adds radix[p] * (b - a).
    const uint64_t base = ranks_[c];
    for (size_t p = 0; p < names_.size(); ++p) {
      const uint64_t cur_p = index(c, p);
      for (size_t v = 0; v < values_[p].size(); ++v) {
        const uint64_t moved = base - radix_[p] * cur_p + radix_[p] * v;
        if (v == cur_p || find_rank_near(c, moved)) continue;  // valid alone: a Hamming neighbour
        for (size_t q = 0; q < names_.size(); ++q) {
          if (q == p) continue;
          const uint64_t cur_q = index(c, q);
          for (size_t w = 0; w < values_[q].size(); ++w)
            if (w != cur_q)
              if (auto found = find_rank_near(c, moved - radix_[q] * cur_q + radix_[q] * w)) out.push_back(*found);
        }
      }
    }
    // (reached twice when each of the two changes alone breaks a restriction)
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return;
  }
  auto try_value = [&](size_t p, size_t v) {
    if (auto found = find_changed(c, p, v)) out.push_back(*found);
  };
  for (size_t p = 0; p < names_.size(); ++p) {
    const size_t cur = index(c, p);
    if (kind == Neighbourhood::Adjacent) {
      if (cur > 0) try_value(p, cur - 1);
      try_value(p, cur + 1);  // nullopt past the last value
    } else {
      for (size_t v = 0; v < values_[p].size(); ++v)
        if (v != cur) try_value(p, v);
    }
  }
}

}  // namespace aoe
