// Sample pybind11 extension: the parser must read the bindings, not the comments.
#include <torch/extension.h>
#include <vector>

// m.def("commented_out", &my_add);  -- a line comment is not a binding
/*
m.def("in_block_comment", &my_add, py::arg("a"));
PYBIND11_MODULE(fake, m) { m.def("fake_op", &my_add); }
*/

torch::Tensor my_add(const torch::Tensor& a, const torch::Tensor& b, int64_t unused);  // stale prototype

torch::Tensor my_add(const torch::Tensor& a, const torch::Tensor& b) {
  return a + b;
}

std::vector<torch::Tensor> lltm_forward(
    torch::Tensor input,
    torch::Tensor weights,
    std::tuple<int, int> sizes,
    std::map<std::string, std::vector<int>> options) {
  auto out = my_add(input, weights);
  return {out};
}

torch::Tensor scale(torch::Tensor x, double factor) { return x * factor; }

class Conv {
 public:
  Conv(int64_t in_channels, int64_t out_channels) {}
  torch::Tensor forward(torch::Tensor x) { return x; }
};

torch::Tensor conv_reset(Conv& self, double value) { return torch::Tensor(); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("my_add", &my_add, "a + b; this docstring is no binding: m.def(\"fake\", &f)");
  m.def("forward", &lltm_forward, "LLTM forward");
  m.def("scale", &scale,
        py::arg("x"),
        py::arg("factor") = 2.0);
  m.def("lambda_op", [](torch::Tensor a, torch::Tensor b, int64_t k) { return a * k + b; });
  py::class_<Conv>(m, "Conv")
      .def(py::init<int64_t, int64_t>())
      .def("forward", &Conv::forward)
      .def("reset", &conv_reset, py::arg("value") = 0.0);
}
