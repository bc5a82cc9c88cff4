#include <torch/extension.h>

torch::Tensor fused_add(torch::Tensor a, torch::Tensor b);

// m.def("not_an_op", &fused_add);  (a comment, not a binding)
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("fused_add", &fused_add, "a + b on the GPU", py::arg("a"), py::arg("b") = torch::Tensor());
}
