// Conversions between Python configurations and value rows, shared by the
// binding files.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aoe_native/search_space.hpp"

namespace aoe_py {

namespace py = pybind11;

// An integer (Python int, bool or numpy integer) in the int64 range; floats and
// strings are refused (TypeError), larger integers too (ValueError).
inline int64_t as_int(const py::handle& v, const std::string& where) {
  if (!PyIndex_Check(v.ptr()))
    throw py::type_error(where + ": " + std::string(py::repr(v)) + " is not an integer");
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) throw py::value_error(where + ": " + std::string(py::repr(v)) + " is beyond the 64-bit range");
  if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
  return int64_t(i);
}

// An int64 array from an array-like of integers: integer and bool arrays as they are,
// float arrays only when every value is a whole number (2.9 is not quietly 2), anything
// else (strings, objects) refused.
using IntArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
inline IntArray int_array(const py::handle& obj, const std::string& what) {
  py::array a = py::module_::import("numpy").attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if (kind == 'f') {
    auto f = py::array_t<double, py::array::c_style | py::array::forcecast>(a);
    for (py::ssize_t i = 0; i < f.size(); ++i) {
      const double v = f.data()[i];
      if (!(v == std::floor(v)) || std::fabs(v) >= 9.2e18)
        throw py::value_error(what + ": " + std::string(py::repr(py::float_(v))) + " is not an integer");
    }
  } else if (kind != 'i' && kind != 'u' && kind != 'b') {
    throw py::type_error(what + ": expected integers, got an array of " + std::string(py::str(a.dtype())));
  }
  return IntArray(a);
}

inline std::pair<std::vector<std::string>, std::vector<std::vector<int64_t>>> params_from_dict(const py::dict& params) {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> values;
  for (auto item : params) {
    if (!py::isinstance<py::str>(item.first)) throw py::type_error("parameter names must be strings");
    const std::string name = py::cast<std::string>(item.first);
    if (py::isinstance<py::str>(item.second) || !py::hasattr(item.second, "__iter__"))
      throw py::type_error("parameter '" + name + "': expected a list of integers, got " +
                           std::string(py::repr(item.second)));
    std::vector<int64_t> vals;
    for (auto v : item.second) vals.push_back(as_int(v, "parameter '" + name + "'"));
    names.push_back(name);
    values.push_back(std::move(vals));
  }
  return {std::move(names), std::move(values)};
}

inline std::vector<std::string> restrictions_from(const py::object& restrictions) {
  std::vector<std::string> out;
  if (restrictions.is_none()) return out;
  if (py::isinstance<py::str>(restrictions)) return {py::cast<std::string>(restrictions)};
  for (auto r : restrictions) {
    if (!py::isinstance<py::str>(r))
      throw py::type_error("restrictions must be strings such as \"a * b <= 1024\", got " + std::string(py::repr(r)));
    out.push_back(py::cast<std::string>(r));
  }
  return out;
}

inline py::dict config_dict(const aoe::SearchSpace& s, aoe::ConfigId c) {
  py::dict d;
  for (size_t p = 0; p < s.num_params(); ++p) d[py::str(s.param_names()[p])] = s.value(c, p);
  return d;
}

// Values of a configuration given as a dict (exactly the parameter names) or
// a sequence in parameter order.
inline std::vector<int64_t> config_values(const aoe::SearchSpace& s, const py::handle& config) {
  const auto& names = s.param_names();
  std::vector<int64_t> v(names.size());
  if (py::isinstance<py::dict>(config)) {
    auto d = py::reinterpret_borrow<py::dict>(config);
    for (size_t p = 0; p < names.size(); ++p) {
      if (!d.contains(names[p])) throw py::key_error("configuration has no value for parameter '" + names[p] + "'");
      v[p] = as_int(d[py::str(names[p])], "parameter '" + names[p] + "'");
    }
    if (d.size() != names.size()) {
      for (auto item : d) {
        const std::string k = py::str(item.first);
        if (std::find(names.begin(), names.end(), k) == names.end())
          throw py::key_error("configuration has unknown parameter '" + k + "'");
      }
    }
    return v;
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(config);
  if (seq.size() != names.size())
    throw py::value_error("configuration has " + std::to_string(seq.size()) + " values, expected " +
                          std::to_string(names.size()));
  for (size_t p = 0; p < names.size(); ++p) v[p] = as_int(seq[p], "parameter '" + names[p] + "'");
  return v;
}

// The id of a configuration, or nullopt when it is not a valid configuration
// of the space (including malformed ones: `in` and index() never raise).
inline std::optional<aoe::ConfigId> find_config(const aoe::SearchSpace& s, const py::handle& config) {
  std::vector<int64_t> v;
  try {
    v = config_values(s, config);
  } catch (const py::error_already_set&) {
    return std::nullopt;
  } catch (const py::builtin_exception&) {
    return std::nullopt;
  }
  return s.find_values(v.data());
}

}  // namespace aoe_py
