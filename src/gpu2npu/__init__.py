"""gpu2npu: migrate PyTorch CUDA training code to Huawei Ascend NPU (torch_npu)."""

__version__ = "0.1.0"
