"""``torch_npu.contrib`` of the gpu2npu stand-in: only ``transfer_to_npu`` (automatic migration of
CUDA code to the emulated NPUs) is emulated."""
