"""``apex.optimizers`` of the gpu2npu stand-in, as Ascend's apex has it: NVIDIA's fused optimizers
keep their names (importing them works) but their CUDA kernels (``amp_C``) are not built, so
constructing one fails; the NPU's fused optimizers are torch_npu's, under apex's names too."""

from torch_npu.optim import NpuFusedAdadelta, NpuFusedAdam, NpuFusedAdamW, NpuFusedSGD  # noqa: F401


class _CudaKernelsMissing:
    def __init__(self, *args, **kwargs):
        raise ModuleNotFoundError(
            f"No module named 'amp_C': apex.optimizers.{type(self).__name__} needs apex's CUDA kernels"
        )


class FusedAdam(_CudaKernelsMissing):
    pass


class FusedSGD(_CudaKernelsMissing):
    pass


class FusedLAMB(_CudaKernelsMissing):
    pass
