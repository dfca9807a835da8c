// Binds the Ascend cost model (aoe::ascend) as _core.ascend.  The Python
// façade is aoe_native/ops.py and aoe_native/platforms.py.  Platform's
// properties, checks and pickling come from platform_fields().
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "aoe_native/ascend/cost_model.hpp"
#include "aoe_native/ascend/matmul_v3.hpp"

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
  d["gm_copies"] = b.gm_copies;
  d["base_blocks"] = b.base_blocks;
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

// A Python value as offered to a Platform field.  Types are told apart as
// Python does (a bool is not a number, a tuple is not a list) so that the
// core's checks refuse what socs.json validation refused.
FieldInput field_input(const py::handle& v) {
  FieldInput in;
  in.repr = py::repr(v);
  if (v.is_none()) return in;
  if (PyBool_Check(v.ptr())) {
    in.value = v.cast<bool>();
  } else if (PyLong_Check(v.ptr())) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow) in.unrepresentable = true;
    else in.value = int64_t(i);
  } else if (PyFloat_Check(v.ptr())) {
    in.value = v.cast<double>();
  } else if (PyUnicode_Check(v.ptr())) {
    in.value = v.cast<std::string>();
  } else if (PyList_Check(v.ptr())) {
    std::vector<std::string> l;
    for (auto x : v)
      if (PyUnicode_Check(x.ptr())) l.push_back(x.cast<std::string>());
    if (l.size() == py::len(v)) in.value = std::move(l);
    else in.unrepresentable = true;
  } else {
    in.unrepresentable = true;
  }
  return in;
}

Platform platform_from_dict(const py::dict& d, const std::string& where) {
  std::map<std::string, FieldInput> fields;
  for (auto item : d)
    if (PyUnicode_Check(item.first.ptr())) fields.emplace(item.first.cast<std::string>(), field_input(item.second));
  return platform_from_fields(fields, where);
}

py::dict platform_to_dict(const Platform& p) {
  py::dict d;
  for (const auto& [name, value] : platform_to_fields(p)) d[py::str(name)] = value;
  return d;
}

OpModel::Check check_of(const std::string& how) {
  if (how == "fast") return OpModel::Check::Fast;
  if (how == "compiled") return OpModel::Check::Compiled;
  if (how == "reference") return OpModel::Check::Reference;
  throw py::value_error("how must be 'fast', 'compiled' or 'reference', got '" + how + "'");
}

const char* const kHowDoc =
    "how: 'fast' (native check where the op model has one, else the compiled restrictions), 'compiled' "
    "(the restrictions' bytecode) or 'reference' (their tree interpreter): the same answers, for tests and "
    "benchmarks.";

// Platform, its fields and the built-in SoCs.
void bind_platform(py::module_& m) {
  py::class_<Platform> platform(m, "Platform", R"doc(
Per-SoC numbers used by the cost model: one socs.json entry.

``Platform.from_dict(entry)`` checks and converts an entry (extra keys such as
``sources`` are ignored); ``to_dict()`` gives the fields back.  The fields are
listed, with kind, default and unit, by ``platform_fields()``.
)doc");
  // No default constructor: an empty Platform (name '', 0 GB/s) would model nothing.
  platform.def_static("from_dict", &platform_from_dict, py::arg("d"), py::arg("where") = "platform",
                  "Check a SoC description (ValueError naming the field) and build the Platform.")
      .def("to_dict", &platform_to_dict, "Every field, in platform_fields() order.")
      .def(py::self == py::self)
      .def("__repr__", [](const Platform& p) { return "<Platform '" + p.name + "'>"; })
      // Platforms are sent to worker processes.
      .def(py::pickle(&platform_to_dict, [](const py::dict& d) { return platform_from_dict(d, "pickled Platform"); }));
  for (const PlatformField& f : platform_fields()) {
    const PlatformField* fp = &f;  // the table is static
    platform.def_property(
        f.name.c_str(), [fp](const Platform& p) { return fp->get(p); },
        [fp](Platform& p, const py::object& v) { fp->set(p, check_field(*fp, field_input(v), "Platform")); },
        f.doc.c_str());
  }

  m.def("platform_fields", [] {
    py::list out;
    for (const auto& f : platform_fields())
      out.append(py::dict(py::arg("name") = f.name, py::arg("kind") = kind_name(f.kind),
                          py::arg("required") = f.required(), py::arg("default") = f.default_value,
                          py::arg("doc") = f.doc));
    return out;
  }, "The fields of Platform (a socs.json entry): name, kind, required, default (None if required), doc.");
  m.def("builtin_soc_versions", &aoe::ascend::builtin_soc_versions,
        "The SoCs compiled into the core library (socs.json's, in its order).");
  m.def("builtin_platform", &aoe::ascend::builtin_platform, py::arg("name"),
        "The Platform of a built-in SoC as the core library has it (what C++ embedders get).");
}

// OpModel (one operator's cost model and tiling space) and its native objective.
void bind_op_model(py::module_& m) {
  py::class_<CostObjective, aoe::Objective, std::shared_ptr<CostObjective>>(
      m, "CostObjective", "Native objective: cost-model time (us) of a tiling of an operator.");

  py::class_<OpModel, std::shared_ptr<OpModel>>(m, "OpModel", "Cost model of one operator on one SoC.")
      .def_property_readonly("kind", &OpModel::kind)
      .def_property_readonly("param_names", [](const OpModel& o) { return o.spec().names; })
      .def_property_readonly("param_values", [](const OpModel& o) { return o.spec().values; })
      .def_property_readonly("restrictions", [](const OpModel& o) { return o.spec().restrictions; })
      .def_property_readonly("pruning", [](const OpModel& o) { return o.spec().pruning; })
      .def_property_readonly("baseline", [](const OpModel& o) { return o.spec().baseline; })
      .def_property_readonly("baseline_kind", [](const OpModel& o) { return o.spec().baseline_kind; })
      .def_property_readonly("api_baseline", [](const OpModel& o) {
        return o.spec().api_baseline.empty() ? o.spec().baseline : o.spec().api_baseline;
      })
      .def_property_readonly("added_defaults", [](const OpModel& o) { return o.spec().added_defaults; })
      .def_property_readonly("roofline_us", &OpModel::roofline_us)
      .def("space", &OpModel::space, "The searched tiling space: hardware restrictions plus pruning rules.")
      .def("violation",
           [](const OpModel& o, const std::vector<int64_t>& t, const std::string& how) {
             return o.violation(row_of(o, t).data(), check_of(how));
           },
           py::arg("tiling"), py::arg("how") = "fast",
           (std::string("The first violated restriction ('' when none).  ") + kHowDoc).c_str())
      .def("estimate",
           [](const OpModel& o, const std::vector<int64_t>& t) {
             const std::string bad = o.violation(row_of(o, t).data());
             if (!bad.empty()) throw py::value_error(o.kind() + " tiling violates the restriction: " + bad);
             Breakdown b;
             o.evaluate(t.data(), &b);
             return breakdown_dict(b);
           },
           py::arg("tiling"))
      .def("estimate_batch",
           [](const OpModel& o, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& rows,
              bool check, const std::string& how) {
             const OpModel::Check c = check_of(how);
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
                 dst[i] = !(check ? o.violation(src + i * np, c) : o.range_violation(src + i * np)).empty()
                              ? std::numeric_limits<double>::quiet_NaN()
                              : o.evaluate(src + i * np, nullptr);
             }
             return out;
           },
           py::arg("tilings"), py::arg("check") = true, py::arg("how") = "fast",
           (std::string("Times (us) of many tilings, NaN for a row that breaks a restriction (check=False: only "
                        "the range check).  ") + kHowDoc).c_str())
      .def("violations",
           [](const OpModel& o, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& rows,
              const std::string& how) {
             const OpModel::Check c = check_of(how);
             const size_t np = o.spec().names.size();
             if (rows.ndim() != 2 || size_t(rows.shape(1)) != np)
               throw py::value_error("tilings must be a 2-D int64 array with " + std::to_string(np) + " columns");
             std::vector<std::string> out(size_t(rows.shape(0)));
             for (size_t i = 0; i < out.size(); ++i) out[i] = o.violation(rows.data() + i * np, c);
             return out;
           },
           py::arg("tilings"), py::arg("how") = "fast", "violation() of each row of a 2-D int64 array.")
      .def("objective", [](const std::shared_ptr<OpModel>& o, bool check_tilings) {
             return std::make_shared<CostObjective>(o, check_tilings);
           }, py::arg("check_tilings") = true,
           "The native objective (time in us); check_tilings=False skips the restriction check of each "
           "tiling (for the model's own space(), whose tilings all meet them).");
}

}  // namespace

void register_ascend(py::module_& m) {
  bind_platform(m);
  bind_op_model(m);
  m.def(
      "op_model",
      [](const Platform& p, const std::string& kind, const std::vector<std::vector<int64_t>>& inputs,
         const std::string& dtype, const std::map<std::string, std::vector<int64_t>>& int_attrs,
         const std::map<std::string, std::vector<std::string>>& str_attrs,
         const std::map<std::string, double>& float_attrs) {
        OpDesc op{kind, inputs, dtype, int_attrs, str_attrs, float_attrs};
        return make_op_model(op, p);
      },
      py::arg("platform"), py::arg("kind"), py::arg("inputs"), py::arg("dtype"), py::arg("int_attrs"),
      py::arg("str_attrs"), py::arg("float_attrs") = std::map<std::string, double>{});
  m.def("conv_auto_pads", &aoe::ascend::conv_auto_pads, py::arg("mode"), py::arg("x"), py::arg("w"),
        py::arg("strides"), py::arg("dilations"),
        "ONNX auto_pad of a 2-D convolution as explicit pads [top, left, bottom, right].");
  m.def(
      "matmul_v3_default_tiling",
      [](int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, bool bias, const std::string& dtype, bool b_nz,
         int64_t aic, int64_t l1, int64_t l0a, int64_t l0b, int64_t l0c, int64_t ub, int64_t l2, int64_t bt) {
        const auto t = aoe::ascend::matmul_v3_default_tiling({m, k, n, trans_a, trans_b, bias, dtype, b_nz},
                                                             {aic, l1, l0a, l0b, l0c, ub, l2, bt});
        return py::dict(py::arg("usedCoreNum") = t.usedCoreNum, py::arg("singleCoreM") = t.singleCoreM,
                        py::arg("singleCoreN") = t.singleCoreN, py::arg("singleCoreK") = t.singleCoreK,
                        py::arg("baseM") = t.baseM, py::arg("baseN") = t.baseN, py::arg("baseK") = t.baseK,
                        py::arg("depthA1") = t.depthA1, py::arg("depthB1") = t.depthB1, py::arg("stepM") = t.stepM,
                        py::arg("stepN") = t.stepN, py::arg("iterateOrder") = t.iterateOrder,
                        py::arg("stepKa") = t.stepKa, py::arg("stepKb") = t.stepKb, py::arg("dbL0A") = t.dbL0A,
                        py::arg("dbL0B") = t.dbL0B, py::arg("dbL0C") = t.dbL0C, py::arg("l2MTileCnt") = t.l2MTileCnt,
                        py::arg("l2NTileCnt") = t.l2NTileCnt, py::arg("l2MTileBlock") = t.l2MTileBlock,
                        py::arg("l2NTileBlock") = t.l2NTileBlock, py::arg("l2IterateOrder") = t.l2IterateOrder,
                        py::arg("tilingEnable") = t.tilingEnable, py::arg("exact") = t.exact, py::arg("note") = t.note);
      },
      py::arg("m"), py::arg("k"), py::arg("n"), py::arg("trans_a") = false, py::arg("trans_b") = false,
      py::arg("bias") = false, py::arg("dtype") = "float16", py::arg("b_nz") = false, py::arg("aic") = 24,
      py::arg("l1") = 524288, py::arg("l0a") = 65536, py::arg("l0b") = 65536, py::arg("l0c") = 131072,
      py::arg("ub") = 196608, py::arg("l2") = 201326592, py::arg("bt") = 1024,
      "CANN MatMulV3's default tiling (its 23 knowledge fields in CANN's names, plus exact and note).");
  m.def("supported_ops", &supported_ops, "Accepted op type names (names and aliases of op_table()), sorted.");
  m.def("op_table", [] {
    py::list out;
    for (const auto& e : op_table())
      out.append(py::dict(py::arg("name") = e.name, py::arg("aliases") = e.aliases,
                          py::arg("family") = family_name(e.family), py::arg("operands") = e.operands,
                          py::arg("attrs") = e.any_attrs ? py::object(py::none()) : py::cast(e.attrs)));
    return out;
  }, "The operators the cost model supports: name, aliases, family, operands (elementwise: 1 or 2; None: n-ary "
     "or not elementwise), attrs (accepted attribute names; None: any).");
}
