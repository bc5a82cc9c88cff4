#include <torch/extension.h>

at::Tensor deform_forward(at::Tensor input, at::Tensor offset);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("deform_forward", &deform_forward, "deformable convolution, forward");
}
