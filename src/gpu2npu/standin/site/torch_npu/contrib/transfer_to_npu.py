"""``torch_npu.contrib.transfer_to_npu`` of the gpu2npu stand-in: importable and a no-op.

On an NPU this module redirects ``torch.cuda`` and ``'cuda'`` devices to the NPU at run time. The
stand-in redirects nothing: unmigrated CUDA code keeps taking its own CPU fallback
(``torch.cuda.is_available()`` is False on a CPU build), while migrated code uses the emulated NPU.
"""
