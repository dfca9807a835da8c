// The extension module aoe_native._core.  Each register_*.cpp binds one part
// of the C++ core; logic stays in the core or in the Python façade.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_space(py::module_& m);
void register_tune(py::module_& m);
void register_ascend(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "Native core of aoe-native (search spaces, strategies, cost model)";
  m.attr("__version__") = AOE_NATIVE_VERSION;
  register_space(m);
  register_tune(m);
  register_ascend(m);
}
