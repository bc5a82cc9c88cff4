"""``torch_npu._C._distributed_c10d`` of the gpu2npu stand-in: the stand-in's ``hccl`` backend runs
on gloo, so its process group class is a subclass of gloo's, with an ``Options()`` that, like
torch_npu's, needs no argument: code that imports ``ProcessGroupHCCL`` for annotations or builds its
options loads and runs (the groups ``new_group`` returns are torch's, as they are with torch_npu);
its fields are set after it is built (``options.is_high_priority_stream = True``)."""

from torch.distributed import ProcessGroupGloo

__all__ = ["ProcessGroupHCCL"]


class ProcessGroupHCCL(ProcessGroupGloo):
    class Options(ProcessGroupGloo._Options):
        is_high_priority_stream = False
