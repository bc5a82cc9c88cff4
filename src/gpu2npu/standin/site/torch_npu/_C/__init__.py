"""``torch_npu._C`` of the gpu2npu stand-in: only the Python-visible names migrated code imports
from it (``torch_npu._C._distributed_c10d.ProcessGroupHCCL``)."""
