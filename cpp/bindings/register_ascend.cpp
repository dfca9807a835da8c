// Binds the Ascend cost model (aoe::ascend).  The Python façade is
// aoe_native/ops.py and aoe_native/platforms.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "aoe_native/ascend/cost_model.hpp"

namespace py = pybind11;
using namespace aoe::ascend;

namespace {

py::dict breakdown_dict(const Breakdown& b) {
  py::dict d;
  d["time_us"] = b.time_us;
  d["mte2_us"] = b.mte2_us;
  d["mte1_us"] = b.mte1_us;
  d["cube_us"] = b.cube_us;
  d["fixpipe_us"] = b.fixpipe_us;
  d["vector_us"] = b.vector_us;
  d["mte3_us"] = b.mte3_us;
  d["head_us"] = b.head_us;
  d["gm_read_bytes"] = b.gm_read_bytes;
  d["hbm_read_bytes"] = b.hbm_read_bytes;
  d["gm_write_bytes"] = b.gm_write_bytes;
  d["l0_bytes"] = b.l0_bytes;
  d["ub_bytes"] = b.ub_bytes;
  d["flops"] = b.flops;
  d["cores_used"] = b.cores_used;
  d["waves"] = b.waves;
  d["bound"] = b.bound;
  d["roofline_us"] = b.roofline_us;
  return d;
}

std::vector<int64_t> row_of(const OpModel& m, const std::vector<int64_t>& t) {
  if (t.size() != m.spec().names.size())
    throw py::value_error("tiling has " + std::to_string(t.size()) + " values, the space of " + m.kind() + " has " +
                          std::to_string(m.spec().names.size()) + " parameters");
  return t;
}

}  // namespace

void register_ascend(py::module_& m) {
  py::class_<Platform>(m, "AscendPlatform", "Per-SoC numbers used by the cost model (filled from socs.json).")
      .def(py::init<>())
      .def_readwrite("name", &Platform::name)
      .def_readwrite("split", &Platform::split)
      .def_readwrite("cube_cores", &Platform::cube_cores)
      .def_readwrite("vector_cores", &Platform::vector_cores)
      .def_readwrite("freq_mhz", &Platform::freq_mhz)
      .def_readwrite("vec_freq_mhz", &Platform::vec_freq_mhz)
      .def_readwrite("l0a", &Platform::l0a)
      .def_readwrite("l0b", &Platform::l0b)
      .def_readwrite("l0c", &Platform::l0c)
      .def_readwrite("l1", &Platform::l1)
      .def_readwrite("ub", &Platform::ub)
      .def_readwrite("l2", &Platform::l2)
      .def_readwrite("bt", &Platform::bt)
      .def_readwrite("ddr_rate", &Platform::ddr_rate)
      .def_readwrite("l2_rate", &Platform::l2_rate)
      .def_readwrite("l2_write_rate", &Platform::l2_write_rate)
      .def_readwrite("l1_to_l0a", &Platform::l1_to_l0a)
      .def_readwrite("l1_to_l0b", &Platform::l1_to_l0b)
      .def_readwrite("l0c_to_ub", &Platform::l0c_to_ub)
      .def_readwrite("ub_to_ddr", &Platform::ub_to_ddr)
      .def_readwrite("hbm_gbps", &Platform::hbm_gbps)
      .def_readwrite("l2_gbps", &Platform::l2_gbps)
      .def_readwrite("gm_align", &Platform::gm_align)
      .def_readwrite("fixpipe", &Platform::fixpipe)
      .def_readwrite("cube_dtypes", &Platform::cube_dtypes)
      .def_readwrite("vector_dtypes", &Platform::vector_dtypes);

  py::class_<CostObjective, aoe::Objective, std::shared_ptr<CostObjective>>(
      m, "AscendCostObjective", "Native objective: cost-model time (us) of a tiling of an operator.");

  py::class_<OpModel, std::shared_ptr<OpModel>>(m, "AscendOpModel", "Cost model of one operator on one SoC.")
      .def_property_readonly("kind", &OpModel::kind)
      .def_property_readonly("param_names", [](const OpModel& o) { return o.spec().names; })
      .def_property_readonly("param_values", [](const OpModel& o) { return o.spec().values; })
      .def_property_readonly("restrictions", [](const OpModel& o) { return o.spec().restrictions; })
      .def_property_readonly("pruning", [](const OpModel& o) { return o.spec().pruning; })
      .def_property_readonly("baseline", [](const OpModel& o) { return o.spec().baseline; })
      .def_property_readonly("roofline_us", &OpModel::roofline_us)
      .def("violation", [](const OpModel& o, const std::vector<int64_t>& t) { return o.violation(row_of(o, t).data()); })
      .def("estimate",
           [](const OpModel& o, const std::vector<int64_t>& t) {
             Breakdown b;
             o.evaluate(row_of(o, t).data(), &b);
             return breakdown_dict(b);
           })
      .def("estimate_batch",
           [](const OpModel& o, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& rows,
              bool check) {
             const size_t np = o.spec().names.size();
             if (rows.ndim() != 2 || size_t(rows.shape(1)) != np)
               throw py::value_error("tilings must be a 2-D int64 array with " + std::to_string(np) +
                                     " columns (" + std::to_string(rows.ndim()) + "-D array given)");
             const size_t n = size_t(rows.shape(0));
             py::array_t<double> out(n);
             const int64_t* src = rows.data();
             double* dst = out.mutable_data();
             {
               py::gil_scoped_release release;
               for (size_t i = 0; i < n; ++i)
                 dst[i] = (check && !o.violation(src + i * np).empty()) ? std::numeric_limits<double>::quiet_NaN()
                                                                        : o.evaluate(src + i * np, nullptr);
             }
             return out;
           },
           py::arg("tilings"), py::arg("check") = true)
      .def("objective", [](const std::shared_ptr<OpModel>& o) { return std::make_shared<CostObjective>(o); });

  m.def(
      "ascend_op_model",
      [](const Platform& p, const std::string& kind, const std::vector<std::vector<int64_t>>& inputs,
         const std::string& dtype, const std::map<std::string, std::vector<int64_t>>& int_attrs,
         const std::map<std::string, std::vector<std::string>>& str_attrs) {
        OpDesc op{kind, inputs, dtype, int_attrs, str_attrs};
        return make_op_model(op, p);
      },
      py::arg("platform"), py::arg("kind"), py::arg("inputs"), py::arg("dtype"), py::arg("int_attrs"),
      py::arg("str_attrs"));
  m.def("ascend_supported_ops", &supported_ops);
}
