"""``torch_npu.contrib`` of the gpu2npu stand-in: only ``transfer_to_npu`` (a no-op) is emulated."""
