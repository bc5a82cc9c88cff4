// Built by hand (no setup.py entry): Python imports it by its literal module name.
#include <pybind11/pybind11.h>
namespace py = pybind11;

int add(int i, int j = 1) { return i + j; }

PYBIND11_MODULE(legacy_ops, m, py::mod_gil_not_used()) {
    auto sub = m.def_submodule("math", "Math helpers");
    sub.def("add", &add, py::arg("i"), py::arg("j") = 1);
    m.def("add", &add);
}

PYBIND11_MODULE(legacy_extra, m) { m.def("noop", []() {}); }
