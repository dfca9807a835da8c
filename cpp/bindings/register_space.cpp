// Binds aoe::SearchSpace into _core.space.  Conversions between Python
// configs (dicts or sequences of ints) and value rows live in convert.hpp,
// shared with the other binding files.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "aoe_native/expr.hpp"
#include "aoe_native/search_space.hpp"
#include "aoe_native/strategy.hpp"
#include "convert.hpp"

namespace py = pybind11;
using aoe::ConfigId;
using aoe::SearchSpace;

namespace {

ConfigId checked_id(const SearchSpace& s, int64_t i) {
  const int64_t n = int64_t(s.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n)
    throw py::index_error("configuration index " + std::to_string(i) + " out of range for a space of " +
                          std::to_string(n));
  return ConfigId(i);
}

struct SpaceIterator {
  std::shared_ptr<SearchSpace> space;
  size_t next = 0;
};

using PySearchSpace = py::class_<SearchSpace, std::shared_ptr<SearchSpace>>;

// Constructors: from value lists and restrictions, or from given configurations.
void bind_construction(PySearchSpace& cls) {
  cls.def(py::init([](const py::dict& params, const py::object& restrictions) {
            auto [names, values] = aoe_py::params_from_dict(params);
            try {  // Ctrl-C stops a long enumeration (the GIL is held: signals can be checked)
              return std::make_shared<SearchSpace>(std::move(names), std::move(values),
                                                   aoe_py::restrictions_from(restrictions),
                                                   [] { return PyErr_CheckSignals() != 0; });
            } catch (const aoe::BuildStopped&) {
              throw py::error_already_set();
            }
          }),
          py::arg("params"), py::arg("restrictions") = py::tuple())
      .def_static(
          "from_configs",
          [](const std::vector<std::string>& names, const py::handle& rows_in) {
            const auto rows = aoe_py::int_array(rows_in, "from_configs rows");
            if (rows.ndim() != 2 || size_t(rows.shape(1)) != names.size())
              throw py::value_error("rows must be a 2-D array with one column per parameter name");
            std::vector<std::vector<int64_t>> r(size_t(rows.shape(0)));
            auto a = rows.unchecked<2>();
            for (py::ssize_t i = 0; i < rows.shape(0); ++i)
              for (py::ssize_t j = 0; j < rows.shape(1); ++j) r[size_t(i)].push_back(a(i, j));
            return std::make_shared<SearchSpace>(SearchSpace::from_configs(names, r));
          },
          py::arg("names"), py::arg("rows"),
          "A space of exactly the given configurations (rows of values); value lists are the sorted distinct values.");
}

// What the space holds: parameters, restrictions, sizes, configurations by index.
void bind_contents(PySearchSpace& cls) {
  cls.def("__len__", &SearchSpace::size)
      .def_property_readonly("param_names", &SearchSpace::param_names)
      .def_property_readonly("param_values", &SearchSpace::param_values)
      .def_property_readonly("restrictions",
                             [](const SearchSpace& s) {
                               std::vector<std::string> t;
                               for (const auto& r : s.restrictions()) t.push_back(r.text());
                               return t;
                             })
      .def_property_readonly("cartesian_size", &SearchSpace::cartesian_size,
                             "Points of the Cartesian product before restrictions.")
      .def(
          "configs",
          [](const SearchSpace& s, const py::object& ids_in) {
            std::optional<aoe_py::IntArray> ids;
            if (!ids_in.is_none()) ids = aoe_py::int_array(ids_in, "configs ids");
            const size_t n = ids ? size_t(ids->size()) : s.size();
            py::array_t<int64_t> out({py::ssize_t(n), py::ssize_t(s.num_params())});
            int64_t* d = out.mutable_data();
            for (size_t r = 0; r < n; ++r)
              s.values(ids ? checked_id(s, ids->data()[r]) : ConfigId(r), d + r * s.num_params());
            return out;
          },
          py::arg("ids") = py::none(),
          "Valid configurations as an int64 array (columns in parameter order): all of them in index order, "
          "or the rows of the given indices.")
      .def(
          "config", [](const SearchSpace& s, int64_t i) { return aoe_py::config_dict(s, checked_id(s, i)); },
          py::arg("index"), "The configuration with this index, as a dict.")
      .def("__getitem__", [](const SearchSpace& s, int64_t i) { return aoe_py::config_dict(s, checked_id(s, i)); })
      .def("__repr__", [](const SearchSpace& s) {
        return "<SearchSpace: " + std::to_string(s.num_params()) + " parameters, " + std::to_string(s.size()) +
               " valid of " + std::to_string(uint64_t(s.cartesian_size())) + ">";
      });
}

// A configuration's index, whether it is in the space, the restriction it breaks.
void bind_lookups(PySearchSpace& cls) {
  cls.def(
         "index",
         [](const SearchSpace& s, const py::handle& config) -> std::optional<int64_t> {
           auto id = aoe_py::find_config(s, config);
           if (!id) return std::nullopt;
           return int64_t(*id);
         },
         py::arg("config"), "Index of a configuration (dict or sequence of values), or None if not in the space (a dict with "
         "missing or unknown names is not in it either; violated() names what is wrong).")
      .def(
          "indices",
          [](const SearchSpace& s, const py::handle& rows_in) {
            const auto rows = aoe_py::int_array(rows_in, "indices rows");
            if (rows.ndim() != 2 || size_t(rows.shape(1)) != s.num_params())
              throw py::value_error("expected a 2-D array with " + std::to_string(s.num_params()) + " columns");
            py::array_t<int64_t> out(rows.shape(0));
            auto* o = out.mutable_data();
            const int64_t* d = rows.data();
            for (py::ssize_t i = 0; i < rows.shape(0); ++i) {
              auto id = s.find_values(d + i * s.num_params());
              o[i] = id ? int64_t(*id) : -1;
            }
            return out;
          },
          py::arg("rows"), "Index of each row of values (-1 where the row is not a valid configuration).")
      .def("__contains__", [](const SearchSpace& s, const py::handle& config) {
        return aoe_py::find_config(s, config).has_value();
      })
      .def(
          "violated",
          [](const SearchSpace& s, const py::handle& config) -> std::optional<std::string> {
            auto values = aoe_py::config_values(s, config);
            int r = s.first_violated(values.data());
            if (r < 0) return std::nullopt;
            return s.restrictions()[size_t(r)].text();
          },
          py::arg("config"),
          "The first restriction this configuration violates, or None.  Values need not be in the value lists.");
}

// Moving through the space: iteration, neighbours, random samples.
void bind_walks(PySearchSpace& cls) {
  cls.def("__iter__",
          [](std::shared_ptr<SearchSpace> s) { return SpaceIterator{std::move(s), 0}; })
      .def(
          "neighbours",
          [](const SearchSpace& s, int64_t i, const std::string& kind) {
            aoe::Neighbourhood k;
            if (kind == "hamming") k = aoe::Neighbourhood::Hamming;
            else if (kind == "adjacent") k = aoe::Neighbourhood::Adjacent;
            else if (kind == "repaired") k = aoe::Neighbourhood::Repaired;
            else throw py::value_error("unknown neighbourhood '" + kind + "' (valid: hamming, adjacent, repaired)");
            std::vector<ConfigId> out;
            s.neighbours(checked_id(s, i), k, out);
            return std::vector<int64_t>(out.begin(), out.end());
          },
          py::arg("index"), py::arg("kind") = "hamming",
          "Indices of valid configurations that differ from this one in one parameter: any value "
          "(\"hamming\") or the next value up or down its list (\"adjacent\"); or (\"repaired\") in "
          "a parameter whose change alone breaks a restriction and in one other that mends it.")
      .def(
          "sample",
          [](const SearchSpace& s, size_t n, uint64_t seed) {
            if (n > s.size())
              throw py::value_error("cannot sample " + std::to_string(n) + " distinct configurations from a space of " +
                                    std::to_string(s.size()));
            aoe::Rng rng(seed);
            aoe::EvalRecord none;
            none.reset(s.size());
            aoe::UnvisitedSampler sampler;
            sampler.reset(s.size());
            py::array_t<int64_t> out(py::ssize_t(n), nullptr);
            auto* o = out.mutable_data();
            for (size_t i = 0; i < n; ++i) {
              ConfigId c = 0;
              sampler.next(rng, none, c);
              o[i] = c;
            }
            return out;
          },
          py::arg("n"), py::arg("seed") = 0, "Indices of n distinct valid configurations drawn uniformly at random.");
}

// eval_restriction(): a restriction's value on rows, by bytecode or by the syntax tree (tests).
void bind_eval_restriction(py::module_& m) {
  m.def(
      "eval_restriction",
      [](const std::string& text, const std::vector<std::string>& names,
         const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& rows, bool reference) {
        const aoe::Expr e(text, names);
        if (rows.ndim() != 2 || size_t(rows.shape(1)) != names.size())
          throw py::value_error("rows must be a 2-D int64 array with one column per name");
        const size_t n = size_t(rows.shape(0)), np = names.size();
        py::array_t<int64_t> values(n);
        py::array_t<bool> undefined(n);
        for (size_t i = 0; i < n; ++i) {
          bool u = false;
          values.mutable_data()[i] = reference ? e.eval_reference(rows.data() + i * np, &u) : e.eval(rows.data() + i * np, &u);
          undefined.mutable_data()[i] = u;
        }
        return py::make_tuple(values, undefined);
      },
      py::arg("text"), py::arg("names"), py::arg("rows"), py::arg("reference") = false,
      "Value and undefined flag of a restriction for each row (columns in `names` order), by its bytecode or, "
      "reference=True, by walking its syntax tree: the two must agree (tests).");
}

// What iter(space) returns: each configuration as a dict, in index order.
void bind_iterator(py::module_& m) {
  py::class_<SpaceIterator>(m, "_SpaceIterator")
      .def("__iter__", [](SpaceIterator& it) -> SpaceIterator& { return it; })
      .def("__next__", [](SpaceIterator& it) {
        if (it.next >= it.space->size()) throw py::stop_iteration();
        return aoe_py::config_dict(*it.space, ConfigId(it.next++));
      });
}

}  // namespace

void register_space(py::module_& m) {
  PySearchSpace space(m, "SearchSpace", R"doc(
A constraint-aware search space of named integer parameters.

``SearchSpace({"a": [1, 2, 4], "b": [8, 16]}, ["a * b <= 32"])`` enumerates only
the configurations that satisfy every restriction.  Restrictions use Kernel
Tuner's syntax: integer arithmetic ``+ - * / // % **`` (``/`` is integer
division), comparisons including chained ones, ``and or not``, parentheses.
Configurations are numbered 0..len-1 in lexicographic order of value indices.
)doc");
  bind_construction(space);
  bind_contents(space);
  bind_lookups(space);
  bind_walks(space);
  bind_eval_restriction(m);
  bind_iterator(m);
}
