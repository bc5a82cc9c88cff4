#include <torch/extension.h>

torch::Tensor fused_add(torch::Tensor a, torch::Tensor b) { return a + b; }
