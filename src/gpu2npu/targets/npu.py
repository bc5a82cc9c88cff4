"""The NPU target (the default): the tree runs on Ascend NPUs through torch_npu, with the rules
of the migration mode (msFmkTransplt's migration and the modes of the Ascend documents)."""

from gpu2npu.targets import Target

TARGET = Target(name="npu", help="a tree for Ascend NPUs (torch_npu), as msFmkTransplt writes it", order=0)
