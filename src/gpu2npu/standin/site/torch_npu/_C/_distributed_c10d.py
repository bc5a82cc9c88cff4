"""``torch_npu._C._distributed_c10d`` of the gpu2npu stand-in: the stand-in's ``hccl`` backend runs
on gloo, so its process group class is gloo's, with an ``Options()`` that, like torch_npu's, needs
no argument; code that imports ``ProcessGroupHCCL`` for annotations, ``isinstance`` checks or its
options loads and runs."""

from torch.distributed import ProcessGroupGloo

__all__ = ["ProcessGroupHCCL"]


class ProcessGroupHCCL(ProcessGroupGloo):
    class Options(ProcessGroupGloo._Options):
        pass
