"""The portable target: one device-agnostic tree that runs on CUDA, Ascend NPU and the CPU
(rules/portable/: torch.accelerator from torch 2.7, bound names with a fallback before it; no
unconditional ``import torch_npu``). The reports of every target come with it: CUDA-only
libraries, removed and reported APIs, guards kept on CUDA, and what launchers, Dockerfiles and
requirements hold that no rewrite can make portable."""

from gpu2npu.targets import Target

TARGET = Target(
    name="portable",
    help="one device-agnostic tree for CUDA, NPU and CPU (torch.accelerator; rules/portable/)",
    order=1,
    rule_paths=(
        "portable",
        "cuda_only.yaml",
        "reported_apis.yaml",
        "removed_apis.yaml",
        "kept_on_cuda.yaml",
        "every_mode/cuda_only.yaml",
        "every_mode/torchvision_ops.yaml",
        "every_mode/onnxruntime.yaml",
        "every_mode/cuda_extensions.yaml",
        "every_mode/newer_torch.yaml",
        "every_mode/host_apis.yaml",
        "every_mode/precision_switches.yaml",
        "every_mode/older_torch.yaml",
        "every_mode/cuda_build.yaml",
        "every_mode/optimizers.yaml",
        "every_mode/collectives.yaml",
        "every_mode/config_reports.yaml",
        "every_mode/dependencies.yaml",
        "every_mode/dockerfile.yaml",
        "every_mode/option_aliases.yaml",
        "every_mode/package_sources.yaml",
        "every_mode/shell.yaml",
    ),
    modes=frozenset({"full"}),
    # its gate keeps a tree portable: a torch API merely not validated on the NPU is not a CUDA use
    gates_unknown_apis=False,
)
