#include <torch/library.h>
#include <ATen/ATen.h>

__global__ void gelu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

at::Tensor fused_gelu_cuda(const at::Tensor& x, bool approximate) {
  auto y = at::empty_like(x);
  gelu_kernel<<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}

at::Tensor scaled_add_cuda(const at::Tensor& a, const at::Tensor& b, double alpha) { return a + b * alpha; }

// TORCH_LIBRARY(fake, m) { m.def("ghost(Tensor x) -> Tensor"); }
TORCH_LIBRARY(myops, m) {
  m.def("fused_gelu(Tensor x, bool approximate=False) -> Tensor");
  m.def("myops::scaled_add(Tensor a, Tensor b, *, float alpha=1.0) -> Tensor");
  m.def("identity", [](const at::Tensor& x) { return x; });
}

TORCH_LIBRARY_IMPL(myops, CUDA, m) {
  m.impl("fused_gelu", &fused_gelu_cuda);
  m.impl(TORCH_SELECTIVE_NAME("myops::scaled_add"), TORCH_FN(scaled_add_cuda));
  m.impl("only_impl", &scaled_add_cuda);
}
