// The extension module aoe_native._core, in submodules as boost-histogram's
// _core is: _core.space (search spaces, objectives, the tuning loop) and
// _core.ascend (the Ascend cost model).  Each register_*.cpp binds one part
// of the C++ core; logic stays in the core or in the Python façade.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_space(py::module_& m);
void register_tune(py::module_& m);
void register_ascend(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "Native core of aoe-native (search spaces, strategies, cost model)";
  m.attr("__version__") = AOE_NATIVE_VERSION;

  // In sys.modules so that `import aoe_native._core.ascend` works and pickle,
  // which finds a class by its __module__, can load Platform.
  py::object modules = py::module_::import("sys").attr("modules");
  auto submodule = [&](const char* name, const char* doc) {
    py::module_ s = m.def_submodule(name, doc);
    modules[s.attr("__name__")] = s;
    return s;
  };
  py::module_ space = submodule("space", "Search spaces, objectives and the tuning loop");
  register_space(space);
  register_tune(space);
  py::module_ ascend = submodule("ascend", "Analytical cost model of Ascend AI Core operators");
  register_ascend(ascend);

}
