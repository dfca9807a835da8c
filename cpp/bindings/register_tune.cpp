// Binds objectives and the tuning loop into _core.space.  Python callables
// are adapted to aoe::Objective here; the Python façade (tuning.py) shapes
// the result.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "aoe_native/objective.hpp"
#include "aoe_native/tuner.hpp"
#include "convert.hpp"

namespace py = pybind11;
using aoe::ConfigId;
using aoe::SearchSpace;

namespace {

// "Type: message"; an exception whose str() itself raises is still described.
std::string describe(const py::error_already_set& e) {
  std::string type = "exception", message;
  try {
    type = py::str(e.type().attr("__name__"));
    message = py::str(e.value());
  } catch (py::error_already_set&) {
    message = "<str() of the exception raised>";
  }
  return type + ": " + message;
}

// Calls a Python function, one configuration (dict) or one batch (int64 array
// of rows) at a time.  An Exception marks the configurations failed; a
// BaseException that is not an Exception (KeyboardInterrupt, SystemExit) ends
// the run and is re-raised by the façade with the partial result attached.
class PythonObjective : public aoe::Objective {
 public:
  PythonObjective(py::function fn, size_t batch) : fn_(std::move(fn)), batch_(batch) {}

  void evaluate(const SearchSpace& s, const ConfigId* ids, size_t n, double* out, std::string* errors) override {
    try {
      if (batch_ == 0) {
        for (size_t i = 0; i < n; ++i) out[i] = call_one(s, ids[i], errors[i]);
      } else {
        call_batch(s, ids, n, out, errors);
      }
    } catch (py::error_already_set& e) {
      pending = py::reinterpret_borrow<py::object>(e.value());
      throw aoe::StopTuning();
    }
  }
  size_t max_batch() const override { return batch_ == 0 ? 1 : batch_; }
  bool native() const override { return false; }

  py::object pending = py::none();

 private:
  static bool is_fatal(const py::error_already_set& e) { return !e.matches(PyExc_Exception); }

  double call_one(const SearchSpace& s, ConfigId c, std::string& error) {
    try {
      py::object r = fn_(aoe_py::config_dict(s, c));
      return to_value(r, error);
    } catch (py::error_already_set& e) {
      if (is_fatal(e)) throw;
      error = describe(e);
      return NAN;
    }
  }

  static double to_value(const py::handle& r, std::string& error) {
    if (py::isinstance<py::str>(r) || py::isinstance<py::bytes>(r)) {  // float("1.5") would take it
      error = "objective returned " + std::string(py::repr(r)) + ", a string, not a number";
      return NAN;
    }
    try {
      return py::cast<double>(py::float_(py::reinterpret_borrow<py::object>(r)));
    } catch (py::error_already_set& e) {
      if (is_fatal(e)) throw;
      error = "objective returned " + std::string(py::repr(r)) + ", not a number (" + describe(e) + ")";
      return NAN;
    }
  }

  void call_batch(const SearchSpace& s, const ConfigId* ids, size_t n, double* out, std::string* errors) {
    py::array_t<int64_t> rows({py::ssize_t(n), py::ssize_t(s.num_params())});
    int64_t* d = rows.mutable_data();
    for (size_t i = 0; i < n; ++i) s.values(ids[i], d + i * s.num_params());
    std::string error;
    try {
      py::object r = fn_(rows);
      py::object reasons = py::none();  // a BatchResult: values plus a message per failed row
      if (py::hasattr(r, "values") && py::hasattr(r, "errors")) {
        reasons = r.attr("errors");
        r = r.attr("values");
      }
      py::array raw = py::module_::import("numpy").attr("asarray")(r);
      const char kind = raw.dtype().kind();
      if (kind == 'U' || kind == 'S') {  // numpy would turn "1.5" into 1.5
        error = "batch objective returned strings (" + std::string(py::str(raw.dtype())) + "), not numbers";
      } else {
        if (kind == 'O' && raw.ndim() == 1 && size_t(raw.shape(0)) == n) {  // None and the like, row by row
          py::array_t<double> conv{py::ssize_t(n)};
          for (size_t i = 0; i < n; ++i) {
            std::string why;
            conv.mutable_data()[i] = to_value(raw[py::int_(i)], why);
            if (!why.empty()) errors[i] = why;
          }
          raw = conv;
        }
        auto values = py::array_t<double, py::array::c_style | py::array::forcecast>(raw);
        if (values.ndim() != 1 || size_t(values.shape(0)) != n)
          error = "batch objective returned shape " + std::string(py::str(py::tuple(values.attr("shape")))) +
                  " for " + std::to_string(n) + " configurations";
        else if (!reasons.is_none() && py::len(reasons) != n)
          error = "batch objective returned " + std::to_string(py::len(reasons)) + " errors for " +
                  std::to_string(n) + " configurations";
        else
          for (size_t i = 0; i < n; ++i) {
            out[i] = errors[i].empty() ? values.data()[i] : NAN;
            if (reasons.is_none()) continue;
            py::object why = reasons[py::int_(i)];
            if (!why.is_none() && py::len(py::str(why)) > 0) {
              errors[i] = py::str(why);
              out[i] = NAN;
            }
          }
      }
    } catch (py::error_already_set& e) {
      if (is_fatal(e)) throw;
      error = describe(e);
    }
    if (!error.empty())
      for (size_t i = 0; i < n; ++i) {
        out[i] = NAN;
        errors[i] = error;
      }
  }

  py::function fn_;
  size_t batch_;
};

py::tuple run_tune(const std::shared_ptr<SearchSpace>& space, const py::object& objective, size_t batch,
                   const std::string& strategy, const aoe::StrategyOptions& strategy_options,
                   std::optional<int64_t> max_evals, std::optional<double> time_limit,
                   uint64_t seed, const std::vector<int64_t>& initial, const std::vector<int64_t>& known,
                   const std::vector<double>& known_values, std::vector<double> prior, const py::object& progress) {
  aoe::TuneOptions opt;
  opt.strategy = strategy;
  opt.strategy_options = strategy_options;
  if (max_evals) {
    if (*max_evals < 1) throw py::value_error("max_evals must be at least 1, got " + std::to_string(*max_evals));
    opt.max_evals = size_t(*max_evals);
  }
  opt.time_limit_s = time_limit;
  opt.seed = seed;
  for (int64_t i : initial) {
    if (i < 0 || size_t(i) >= space->size()) throw py::index_error("initial configuration index out of range");
    opt.initial.push_back(ConfigId(i));
  }
  if (known.size() != known_values.size()) throw py::value_error("known: as many values as configuration indices");
  for (int64_t i : known) {
    if (i < 0 || size_t(i) >= space->size()) throw py::index_error("known configuration index out of range");
    opt.known.push_back(ConfigId(i));
  }
  opt.known_values = known_values;
  opt.prior = std::move(prior);  // (checked by aoe::tune: length, finite, a strategy that uses it)

  std::shared_ptr<aoe::Objective> native;
  std::shared_ptr<PythonObjective> python;
  if (py::isinstance<aoe::Objective>(objective)) {
    native = py::cast<std::shared_ptr<aoe::Objective>>(objective);
  } else {
    if (!PyCallable_Check(objective.ptr()))
      throw py::type_error("objective must be callable or a native objective, got " + std::string(py::repr(objective)));
    python = std::make_shared<PythonObjective>(py::reinterpret_borrow<py::function>(objective), batch);
  }
  aoe::Objective& obj = native ? *native : static_cast<aoe::Objective&>(*python);

  // Progress: the user's callback runs with the GIL.  A native run holds no
  // GIL, so it takes it a few times a second to notice Ctrl-C.
  py::object pending = py::none();
  auto last = std::chrono::steady_clock::now();
  const bool without_gil = obj.native();
  opt.progress = [&](size_t evals, double best) -> bool {
    if (without_gil) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(100)) return true;
      last = now;
    }
    std::optional<py::gil_scoped_acquire> gil;
    if (without_gil) gil.emplace();
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (progress.is_none()) return true;
      py::object r = progress(evals, best);
      return r.is_none() || bool(py::bool_(r));
    } catch (py::error_already_set& e) {
      pending = py::reinterpret_borrow<py::object>(e.value());
      return false;
    }
  };

  aoe::TuneResult res;
  if (without_gil) {
    py::gil_scoped_release release;
    res = aoe::tune(*space, obj, opt);
  } else {
    res = aoe::tune(*space, obj, opt);
  }
  if (python && !python->pending.is_none()) pending = python->pending;
  if (!pending.is_none()) res.stop_reason = "interrupted";  // Ctrl-C: the same word for every objective

  py::array_t<int64_t> ids(py::ssize_t(res.history.size()));
  py::array_t<double> values(py::ssize_t(res.values.size()));
  std::copy(res.history.begin(), res.history.end(), ids.mutable_data());
  std::copy(res.values.begin(), res.values.end(), values.mutable_data());
  py::object best = res.best ? py::object(py::int_(*res.best)) : py::object(py::none());
  return py::make_tuple(ids, values, res.errors, best, res.best_value, res.failed, res.elapsed_s, res.stop_reason,
                        pending);
}

}  // namespace

void register_tune(py::module_& m) {
  py::class_<aoe::Objective, std::shared_ptr<aoe::Objective>>(m, "Objective",
                                                               "A native objective: evaluated in C++ without the GIL.")
      .def(
          "__call__",
          [](aoe::Objective& o, const SearchSpace& s, const py::handle& config) {
            auto id = aoe_py::find_config(s, config);
            if (!id) throw py::value_error("configuration is not in the search space");
            double v = 0;
            std::string err;
            o.evaluate(s, &*id, 1, &v, &err);
            return v;
          },
          py::arg("space"), py::arg("config"), "Evaluate one configuration of `space` (NaN or inf if it fails).");

  py::class_<aoe::SyntheticObjective, aoe::Objective, std::shared_ptr<aoe::SyntheticObjective>>(
      m, "SyntheticObjective",
      "A deterministic native test landscape: a bowl over normalised value indices plus hashed noise.")
      .def(py::init<uint64_t, double>(), py::arg("seed") = 0, py::arg("noise") = 0.1);

  py::class_<aoe::TableObjective, aoe::Objective, std::shared_ptr<aoe::TableObjective>>(
      m, "TableObjective", "A recorded value per configuration index (NaN = failed), e.g. a replayed cache file.")
      .def(py::init([](const py::array_t<double, py::array::c_style | py::array::forcecast>& values,
                       std::vector<std::string> reasons) {
             std::vector<double> v(values.data(), values.data() + values.size());
             return std::make_shared<aoe::TableObjective>(std::move(v), std::move(reasons));
           }),
           py::arg("values"), py::arg("failure_reasons") = std::vector<std::string>())
      .def_property_readonly("values", [](const aoe::TableObjective& t) {
        return py::array_t<double>(py::ssize_t(t.values().size()), t.values().data());
      });

  m.def("strategy_names", &aoe::strategy_names, "Names accepted by tune(strategy=...).");
  m.def("strategy_defaults", &aoe::strategy_defaults, py::arg("name"),
        "The options a strategy accepts (tune(strategy_options=...)), with their defaults.");
  m.def("tune", &run_tune, py::arg("space"), py::arg("objective"), py::arg("batch"), py::arg("strategy"),
        py::arg("strategy_options"), py::arg("max_evals"), py::arg("time_limit"), py::arg("seed"), py::arg("initial"),
        py::arg("known"), py::arg("known_values"), py::arg("prior"), py::arg("progress"),
        "The tuning loop (shaped into a result by aoe_native.tune): returns (ids, values, errors, best, best_value, "
        "failed, elapsed_s, stop_reason, pending exception or None).");
}
