"""``apex`` of the gpu2npu stand-in: ``apex.amp`` of Ascend's apex build (github.com/Ascend/apex),
as the porting guide uses it (``initialize`` with ``combine_grad``, ``scale_loss``), a CPU reference
implementation written from its documentation. Only ``gpu2npu run`` puts it on the path, beside
the ``torch_npu`` stand-in, so a program written for apex amp and its migrated copy both run here.
Ascend's apex has no fused CUDA kernels (``apex.normalization``, ``apex.contrib``): neither has
this one, so importing them fails as it does on an NPU; ``apex.optimizers`` keeps NVIDIA's fused
optimizers' names, which fail when constructed."""

IS_GPU2NPU_STANDIN = True
