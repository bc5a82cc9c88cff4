"""Correct before complete: a rewrite that would break working code is not made; the line keeps
its CUDA form and is reported as manual work (``tests/projects/kept_on_cuda``):

* a CUDA test selecting the project's own CUDA kernel (``if not input.is_cuda: return ...``
  then ``_C.deform_forward``) or apex's CUDA kernels (``amp_C`` values) stays a CUDA test;
* ``import amp_C`` stays while the file uses ``amp_C``;
* ``torch.cuda.profiler`` (no torch_npu counterpart) and ``torch.cuda.get_device_capability``
  (None on NPU) keep their names;
* the lookalikes still change (``x.cuda() if torch.cuda.is_available() else x``);
* a file where nothing else changes gets no ``import torch_npu``.
"""

import json
import os
import sys

import pytest
from helpers import REPO, python_change_rows, rows, run_cli, write
from helpers import migrate as migrate_code
from test_standin import plain_env, require_torch, run_program

PROJECT = REPO / "tests" / "projects" / "kept_on_cuda"
KEPT_TIP = (
    "kept on CUDA: the branch it selects runs only on CUDA (a CUDA-only library, the project's CUDA "
    "kernels, or a torch.cuda API without an NPU counterpart), so on NPU the other branch runs; port "
    "that code to NPU, then test for the NPU here"
)
CAPABILITY_TIP = (
    "kept on CUDA: on an NPU host it raises (torch has no CUDA there; under transfer_to_npu it returns None "
    "unless TORCH_NPU_DEVICE_CAPABILITY is set, and so does torch.npu.get_device_capability), so indexing, "
    "unpacking or comparing it fails; run it only when torch.cuda.is_available() (False on NPU), or test an "
    "NPU feature instead (torch.npu.is_bf16_supported())"
)
NO_COUNTERPART_TIP = (
    "no NPU counterpart for torch 2.8.0, so it stays on CUDA: remove it, or run it only when "
    "torch.cuda.is_available()"
)
UNSUPPORTED_ROWS = [
    ["File", "Start Line", "End Line", "OP", "Tips", "Status", "Confidence", "Source"],
    [
        "mypkg/deform.py", "6", "6", "torch.Tensor.is_cuda", KEPT_TIP,
        "supported_with_limits", "listed", "rules:G2N090",
    ],
    [
        "mypkg/deform.py", "8", "8", "mypkg._C.deform_forward",
        "user-defined CUDA operator: port it to the NPU "
        "(Ascend C custom operator or torch/torch_npu operators)",
        "unsupported", "listed", "cuda_op_list:mypkg/csrc/deform.cpp",
    ],
    [
        "mypkg/optim.py", "2", "2", "amp_C",
        "NVIDIA apex's CUDA kernels have no NPU build: use torch_npu fused optimizers "
        "(torch_npu.optim.NpuFused*) or the Ascend build of apex",
        "unsupported", "listed", "rules:G2N050",
    ],
    [
        "mypkg/optim.py", "8", "8", "torch.cuda.is_available", KEPT_TIP,
        "supported_with_limits", "listed", "rules:G2N090",
    ],
    [
        "mypkg/optim.py", "14", "14", "torch.cuda.profiler.profile", NO_COUNTERPART_TIP,
        "unsupported", "listed", "rules:G2N200",
    ],
    [
        "mypkg/optim.py", "16", "16", "torch.cuda.get_device_capability", CAPABILITY_TIP,
        "unsupported", "listed", "rules:G2N296",
    ],
    [
        "mypkg/optim.py", "17", "17", "torch.backends.cuda.matmul.allow_tf32",
        "accepted on NPU but it does not switch the NPU's reduced precision: set torch.npu.conv.allow_hf32 "
        "(for convolutions, on by default as cudnn.allow_tf32 is on CUDA) and torch.npu.matmul.allow_hf32 "
        "(for matmuls, off by default) to the same value, or migrate with --optimize (G2N2070, G2N2071); "
        "a script that turns TF32 off for precision still gets HF32 convolutions otherwise",
        "supported_with_limits", "listed", "rules:G2N093",
    ],
    [
        "setup.py", "6", "6", "torch.utils.cpp_extension.CUDAExtension",
        "CUDA kernels do not build for NPU: port them (Ascend C custom operator) and build with "
        "torch_npu.utils.cpp_extension.NpuExtension",
        "unsupported", "listed", "rules:G2N072",
    ],
]  # fmt: skip


def migrate(tmp_path):
    result = run_cli("migrate", "-i", PROJECT, "-o", tmp_path / "out", "-v", "2.8.0", "-j", "1")
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "kept_on_cuda_msft"


def test_kept_lines_stay_and_the_lookalikes_change(tmp_path):
    out = migrate(tmp_path)
    assert (out / "mypkg" / "deform.py").read_text() == (
        "import torch\n"
        "import torch_npu\n"
        "from mypkg import _C\n\n\n"
        "def deform(input, offset):\n"
        "    if not input.is_cuda:\n"
        "        return input + offset\n"
        "    return _C.deform_forward(input, offset)\n\n\n"
        "def place(x):\n"
        "    return x.npu() if torch.npu.is_available() else x\n"
    )
    # nothing else changes there, so neither does `import torch_npu` go in (only where needed)
    assert (out / "mypkg" / "optim.py").read_bytes() == (PROJECT / "mypkg" / "optim.py").read_bytes()
    assert python_change_rows(out / "transplant_result_file" / "change_list.csv")[1:] == [
        ["mypkg/deform.py", "1", "1", "INSERT", "insert import torch_npu", "G2N001"],
        ["mypkg/deform.py", "12", "12", "MODIFY", "change function cuda to npu", "G2N003"],
        [
            "mypkg/deform.py", "12", "12", "MODIFY",
            "change function torch.cuda.is_available to torch_npu.npu.is_available", "G2N317",
        ],
    ]  # fmt: skip


def test_kept_lines_are_reported_as_manual_work(tmp_path):
    reports = migrate(tmp_path) / "transplant_result_file"
    assert rows(reports / "unsupported_api.csv") == UNSUPPORTED_ROWS
    verdicts = {
        entry["file"]: entry["status"] for entry in json.loads((reports / "report.json").read_text())["files"]
    }
    assert verdicts == {
        "mypkg/__init__.py": "fully migrated",
        "mypkg/deform.py": "needs manual work",
        "mypkg/optim.py": "needs manual work",
        "setup.py": "needs manual work",
    }


def test_analyse_reports_the_same_rows_without_the_rewrite_pass(tmp_path):
    result = run_cli("analyse", "-i", PROJECT, "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    assert rows(tmp_path / "out" / "kept_on_cuda_analysis" / "unsupported_api.csv") == UNSUPPORTED_ROWS


def test_check_fails_on_each_kept_line_that_breaks_and_warns_of_each_kept_test(tmp_path):
    """A kept test whose other branch works (a reference implementation) is a limit: the NPU runs
    as any machine without CUDA does."""
    result = run_cli("check", PROJECT, "-v", "2.8.0", "--format", "json", cwd=REPO)
    assert result.returncode == 1
    findings = [
        (f["file"].split("kept_on_cuda/")[1], f["line"], f["rule"], f["severity"])
        for f in json.loads(result.stdout)["findings"]
        if f["severity"] != "note"
    ]
    assert findings == [
        ("mypkg/deform.py", 6, "G2N090", "warning"),
        ("mypkg/deform.py", 8, "cuda-op", "error"),
        ("mypkg/optim.py", 2, "G2N050", "error"),
        ("mypkg/optim.py", 8, "G2N090", "warning"),
        ("mypkg/optim.py", 14, "G2N200", "error"),
        ("mypkg/optim.py", 16, "G2N296", "error"),
        ("mypkg/optim.py", 17, "G2N093", "warning"),
        ("setup.py", 6, "G2N072", "error"),
    ]


TRITON_OPS = """\
import torch

try:
    import triton
except ImportError:
    raise RuntimeError("triton import failed; try `pip install --pre triton`")
"""
TIMING = """\
import torch


def median(x):
    if x.is_cuda:
        from .triton_ops import median_filter_cuda

        return median_filter_cuda(x, 3)
    return x.sort()[0]


def dtw_cuda(x):
    from .triton_ops import dtw_kernel

    return dtw_kernel(x)


def dtw(x):
    if x.is_cuda:
        return dtw_cuda(x)
    return x.cpu()


def double(x):
    if x.is_cuda:
        return x * 2
    return x
"""


def test_a_test_leading_to_the_projects_triton_kernels_stays_a_cuda_test(tmp_path):
    """whisper's timing.py: ``if x.is_cuda:`` imports the project's triton_ops (which cannot be
    imported without triton), directly or through a function that does so first; as ``is_npu``
    it would send NPU tensors into CUDA Triton kernels. A module whose triton import has a
    fallback (``triton = None``) is no CUDA-only module, and a test selecting plain torch code
    still changes."""
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "triton_ops.py").write_text(TRITON_OPS)
    (project / "pkg" / "timing.py").write_text(TIMING)
    (project / "pkg" / "soft.py").write_text(TRITON_OPS.replace('raise RuntimeError("', 'triton = None  # "'))
    (project / "pkg" / "use_soft.py").write_text(TIMING.replace(".triton_ops", ".soft"))
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    expected = TIMING.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    assert (out / "pkg" / "timing.py").read_text() == expected.replace(
        "    if x.is_cuda:\n        return x * 2", "    if x.is_npu:\n        return x * 2"
    )
    assert (out / "pkg" / "use_soft.py").read_text() == expected.replace(".triton_ops", ".soft").replace(
        "x.is_cuda", "x.is_npu"
    )
    kept = [row[:4] + row[-1:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")]
    assert [row for row in kept if row[-1] == "rules:G2N090"] == [
        ["pkg/timing.py", "5", "5", "torch.Tensor.is_cuda", "rules:G2N090"],
        ["pkg/timing.py", "19", "19", "torch.Tensor.is_cuda", "rules:G2N090"],
    ]


LIGHTNING_TIP = (
    "PyTorch Lightning has no built-in NPU accelerator: on an NPU host accelerator='auto' (the default) "
    "resolves to the CPU, so training runs there silently, and 'npu' (a device string the migration "
    "renamed on its way here) or gpus=N fail; register an Accelerator for the NPU with Lightning's "
    "AcceleratorRegistry (or use a Lightning build adapted to Ascend) and pass it as accelerator"
)


def test_lightnings_fabric_and_trainer_are_reported_where_they_pick_the_device(tmp_path):
    """litgpt's ``L.Fabric(devices=...)`` trained on the CPU of an NPU machine (Lightning's 'auto'
    knows no NPU), ControlNet's ``pl.Trainer(gpus=1)`` fails there: each call is a row, in either
    target, though nothing in the line changes. co-tracker subclasses LightningLite, Fabric's
    predecessor: the class is the row. pytorchvideo's and fastMRI's scripts build the Trainer with
    ``Trainer.from_argparse_args(args)`` (pytorch_lightning before 2.0)."""
    project = tmp_path / "proj"
    project.mkdir()
    code = (
        "import torch\nimport lightning as L\nimport pytorch_lightning as pl\n\n"
        "fabric = L.Fabric(devices=1)\ntrainer = pl.Trainer(gpus=1)\nx = torch.zeros(1).cuda()\n"
        "from pytorch_lightning.lite import LightningLite\n\n\nclass Lite(LightningLite):\n    pass\n\n\n"
        "trainer = pl.Trainer.from_argparse_args(args)\n"
    )
    (project / "train.py").write_text(code)
    for target in ("npu", "portable"):
        result = run_cli("migrate", "-i", project, "-o", tmp_path / target, "--target", target, "-v", "2.8.0")
        assert result.returncode == 0, result.stderr
        found = rows(tmp_path / target / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
        assert [row for row in found if row[-1] == "rules:G2N076"] == [
            [
                "train.py",
                "5",
                "5",
                "lightning.Fabric",
                LIGHTNING_TIP,
                "unsupported",
                "listed",
                "rules:G2N076",
            ],
            [
                "train.py",
                "6",
                "6",
                "pytorch_lightning.Trainer",
                LIGHTNING_TIP,
                "unsupported",
                "listed",
                "rules:G2N076",
            ],
            [
                "train.py",
                "11",
                "11",
                "pytorch_lightning.lite.LightningLite",
                LIGHTNING_TIP,
                "unsupported",
                "listed",
                "rules:G2N076",
            ],
            [
                "train.py",
                "15",
                "15",
                "pytorch_lightning.Trainer.from_argparse_args",
                LIGHTNING_TIP,
                "unsupported",
                "listed",
                "rules:G2N076",
            ],
        ], target
    # litgpt under transfer_to_npu: Lightning takes its CUDA accelerator, which unpacks the NPU's
    # None capability; `check --mode auto` passed on pretrain.py
    auto = run_cli("check", project, "--mode", "auto", "--entry", project / "train.py", "--format", "json")
    findings = json.loads(auto.stdout)["findings"]
    assert [(f["line"], f["api"], f["severity"]) for f in findings if f["rule"] == "G2N715"] == [
        (5, "lightning.Fabric", "error"),
        (6, "pytorch_lightning.Trainer", "error"),
        (11, "pytorch_lightning.lite.LightningLite", "error"),
        (15, "pytorch_lightning.Trainer.from_argparse_args", "error"),
    ]
    assert auto.returncode == 1


def unsupported_rows(tmp_path, name: str, code: str, *options: str, columns=(1, 3, -1)) -> list:
    """The ``columns`` (line, API, rule) of each unsupported_api.csv row of a one-file project
    migrated for 2.8.0 with ``options``."""
    write(tmp_path / "proj" / name, code)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", *options)
    assert result.returncode == 0, result.stderr
    found = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    return [tuple(row[column] for column in columns) for row in found[1:]]


def test_imports_of_cuda_only_libraries_are_each_a_row(tmp_path):
    """``check`` said 100 % of such files convert fully: TensorRT, AutoGPTQ, cpm_kernels (ChatGLM's
    quantisation), Liger's Triton kernels, mamba-ssm, causal-conv1d, grouped_gemm, MegaBlocks and
    flash-attention's CUDA extensions and MinkowskiEngine (ConvNeXt-V2's sparse pre-training) run
    on NVIDIA GPUs only; TransformerEngine needs Ascend's build (gpt-neox, TinyLlama)."""
    assert unsupported_rows(
        tmp_path,
        "libs.py",
        "import torch\nimport tensorrt as trt\nfrom cpm_kernels import kernels\n"
        "from liger_kernel.transformers import apply_liger_kernel_to_llama\n"
        "from auto_gptq import AutoGPTQForCausalLM\nimport torch_tensorrt\nx = torch.zeros(1).cuda()\n"
        "from mamba_ssm.ops.selective_scan_interface import selective_scan_fn\n"
        "from causal_conv1d import causal_conv1d_fn\nimport grouped_gemm as gg\nfrom megablocks import ops\n"
        "import xentropy_cuda_lib\nimport dropout_layer_norm\nimport transformer_engine.pytorch as te\n"
        "import MinkowskiEngine as ME\n",
    ) == [
        ("2", "tensorrt", "rules:G2N086"),
        ("3", "cpm_kernels", "rules:G2N088"),
        ("4", "liger_kernel.transformers", "rules:G2N089"),
        ("5", "auto_gptq", "rules:G2N087"),
        ("6", "torch_tensorrt", "rules:G2N086"),
        ("8", "mamba_ssm.ops.selective_scan_interface", "rules:G2N163"),
        ("9", "causal_conv1d", "rules:G2N164"),
        ("10", "grouped_gemm", "rules:G2N165"),
        ("11", "megablocks", "rules:G2N166"),
        ("12", "xentropy_cuda_lib", "rules:G2N167"),
        ("13", "dropout_layer_norm", "rules:G2N167"),
        ("14", "transformer_engine.pytorch", "rules:G2N168"),
        ("15", "MinkowskiEngine", "rules:G2N173"),
    ]


LIBRARIES_PICKING_THE_CARD = (
    "import torch\nimport flashy\nfrom dora import distrib\nfrom trainer import Trainer, TrainerArgs\n"
    "from xfuser.core.distributed import init_distributed_environment\n"
    "from yunchang import LongContextAttention\n\n"
    "if __name__ == '__main__':\n"
    "    flashy.distrib.init()\n"
    "    Trainer(TrainerArgs(), None).fit()\n"
)


@pytest.mark.parametrize(
    "options,expected",
    [
        (
            (),
            [
                ("2", "flashy", "supported_with_limits", "rules:G2N605"),
                ("3", "dora.distrib", "unsupported", "rules:G2N606"),
                ("5", "xfuser.core.distributed", "unsupported", "rules:G2N607"),
                ("6", "yunchang", "unsupported", "rules:G2N608"),
                ("10", "trainer.TrainerArgs", "unsupported", "rules:G2N604"),
            ],
        ),
        # transfer_to_npu sends their torch.cuda calls and nccl to the NPU; not the flash-attn kernels
        (
            ("--mode", "auto"),
            [
                ("5", "xfuser.core.distributed", "unsupported", "rules:G2N607"),
                ("6", "yunchang", "unsupported", "rules:G2N608"),
            ],
        ),
    ],
)
def test_libraries_that_pick_the_card_through_torch_cuda_are_rows(tmp_path, options, expected):
    """audiocraft's flashy (dora's distrib: torch.cuda.set_device, nccl, dora run -d counting CUDA
    cards), coqui TTS's trainer (use_cuda = torch.cuda.is_available(): it trained on the CPU) and
    HunyuanVideo's xDiT sequence parallelism (nccl or NotImplementedError, flash-attn attention)
    had no row."""
    found = unsupported_rows(
        tmp_path, "train.py", LIBRARIES_PICKING_THE_CARD, *options, columns=(1, 3, 5, -1)
    )
    assert found == expected


LIBRARIES_OF_A_TRAINER = (
    "import torch\nimport horovod.torch as hvd\n"
    "from deepspeed.ops.sparse_attention import SparseSelfAttention\n"
    "from apex.optimizers import FusedAdam, FusedLAMB\nfrom timm.data import Mixup\n"
    "from tutel import moe as tutel_moe\nfrom cuml.linear_model import LogisticRegression\n\n"
    "if __name__ == '__main__':\n"
    "    net = torch.nn.Linear(2, 2).cuda()\n"
    "    opt = hvd.DistributedOptimizer(FusedAdam(net.parameters(), lr=1e-3))\n"
    "    lamb = FusedLAMB(net.parameters())\n"
    "    mixup_fn = Mixup(mixup_alpha=0.8)\n"
    "    moe = tutel_moe.moe_layer(gate_type={'type': 'top', 'k': 2})\n"
)


LIBRARY_ROWS = [
    ("2", "horovod.torch", "rules:G2N188"),
    ("3", "deepspeed.ops.sparse_attention", "rules:G2N189"),
    ("4", "apex.optimizers", "rules:G2N054"),
    ("6", "tutel", "rules:G2N199"),  # Swin-Transformer's MoE (CUDA or CPU dispatch kernels)
    ("7", "cuml.linear_model", "rules:G2N984"),  # dinov2's log regression (RAPIDS)
]
FUSED_ADAM_ROW = ("11", "apex.optimizers.FusedAdam", "rules:G2N190")
LAMB_AND_MIXUP_ROWS = [
    ("12", "apex.optimizers.FusedLAMB", "rules:G2N190"),
    ("13", "timm.data.Mixup", "rules:G2N191"),
]


@pytest.mark.parametrize(
    "options,expected",
    [
        ((), LIBRARY_ROWS + [FUSED_ADAM_ROW] + LAMB_AND_MIXUP_ROWS),
        # --optimize replaces FusedAdam: its row goes with it; FusedLAMB has no NPU counterpart
        (("--optimize=all",), LIBRARY_ROWS + LAMB_AND_MIXUP_ROWS),
        # the patcher builds none of them either; sparse attention is no Ascend adaptation (G2N707);
        # the patcher sends Mixup's torch.full(..., device='cuda') to the NPU (Swin-Transformer)
        (("--mode", "auto"), LIBRARY_ROWS + [FUSED_ADAM_ROW] + LAMB_AND_MIXUP_ROWS[:1]),
    ],
)
def test_cuda_only_parts_of_libraries_that_run_on_the_npu_are_each_a_row(tmp_path, options, expected):
    """DALLE-pytorch's Horovod backend and DeepSpeed sparse attention, ConvNeXt's apex fused
    optimizers behind a flipped CUDA assert, and timm's Mixup (its targets on 'cuda' before
    0.5.4) had no row, and `check` passed."""
    write(tmp_path / "proj" / "train.py", LIBRARIES_OF_A_TRAINER)
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.8.0", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    found = rows(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[1], row[3], row[-1]) for row in found[1:]] == expected


ALIASED_TEST = """import torch


class Attend:
    def __init__(self):
        self.cuda_config = None
        if not torch.cuda.is_available():
            return
        self.cuda_config = torch.cuda.get_device_properties(0).major

    def pick(self, q, k):
        _, heads, k_len, is_cuda = *q.shape, k.shape[-2], q.is_cuda
        return self.cuda_config if is_cuda else None

    def move(self, q):
        on_gpu = q.is_cuda
        return q if on_gpu else q.cuda()

    def rebound(self, q, is_cuda=True):
        is_cuda = q.is_cuda
        return self.cuda_config if is_cuda else None

    def also_placing(self, q):
        use_cuda = q.is_cuda
        device = "cuda" if use_cuda else "cpu"
        return self.cuda_config if use_cuda else device
"""


def test_a_cuda_test_bound_to_a_name_is_kept_where_the_name_selects_cuda_only_code():
    """``is_cuda`` bound through starred unpacking picks ``self.cuda_config`` (set only behind the
    kept ``torch.cuda.is_available()``): its ``q.is_cuda`` stays. A name selecting plain torch code
    changes, and so does one also bound otherwise (a parameter): the name may not hold the test,
    or one also read elsewhere (it places tensors too: keeping it would leave them on the CPU)."""
    assert migrate_code(ALIASED_TEST) == ALIASED_TEST.replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    ).replace("on_gpu = q.is_cuda", "on_gpu = q.is_npu").replace("q.cuda()", "q.npu()").replace(
        "        is_cuda = q.is_cuda\n", "        is_cuda = q.is_npu\n"
    ).replace("use_cuda = q.is_cuda", "use_cuda = q.is_npu").replace('device = "cuda"', 'device = "npu"')


FUSED_NORM_ATTRIBUTE = """import torch
import torch.nn.functional as F
from apex.normalization.fused_layer_norm import FusedRMSNormAffineFunction


class MixedFusedRMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_fn = FusedRMSNormAffineFunction
        self.scale = torch.ones(4)

    def forward(self, input):
        if not input.is_cuda:
            return F.layer_norm(input, (4,))
        return self.norm_fn.apply(input, self.scale)


class Scaled(torch.nn.Module):
    def __init__(self, fused):
        super().__init__()
        self.fn = FusedRMSNormAffineFunction.apply if fused else None
        self.fn = self.fn or F.layer_norm
        self.scale = torch.ones(4).cuda()

    def forward(self, input):
        if not input.is_cuda:
            return input
        return self.fn(input * self.scale, (4,))
"""


def test_a_cuda_test_before_cuda_only_code_an_attribute_holds_is_kept():
    """gpt-neox's MixedFusedRMSNorm calls apex's fused function through ``self.norm_fn``: its
    ``is_cuda`` became ``is_npu``, sending NPU tensors into apex's CUDA kernel. An attribute that
    every assignment sets to CUDA-only code is CUDA-only; one also set otherwise is not."""
    assert migrate_code(FUSED_NORM_ATTRIBUTE) == FUSED_NORM_ATTRIBUTE.replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    ).replace("torch.ones(4).cuda()", "torch.ones(4).npu()").replace(
        "        if not input.is_cuda:\n            return input\n",
        "        if not input.is_npu:\n            return input\n",
    )


SHORT_CIRCUIT = """import pytest
import torch


@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8,
    reason="needs sm80",
)
def test_flash():
    ok = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
    fallback = torch.cuda.is_available() or torch.ones(1).cuda()
    return ok, fallback
"""


def test_a_cuda_test_before_cuda_only_code_in_an_and_or_chain_is_kept():
    """x-transformers' skipif: the capability is read only where the kept test says CUDA. As
    ``not torch.npu.is_available() or ...`` the NPU host read it and the module failed to load.
    Where the later operand runs off CUDA (``is_available() or x``), the test changes."""
    assert migrate_code(SHORT_CIRCUIT) == SHORT_CIRCUIT.replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    ).replace(
        "fallback = torch.cuda.is_available() or torch.ones(1).cuda()",
        "fallback = torch.npu.is_available() or torch.ones(1).npu()",
    )


FP8_PROBE = """\
import subprocess

import torch


def check_cuda_fp8_capability():
    try:
        output = subprocess.check_output(["nvidia-smi", "--query-gpu=compute_capability"], text=True)
        capability = tuple(map(int, output.split(".")))
    except Exception:
        capability = torch.cuda.get_device_capability()
    return capability >= (8, 9)
"""
FP8_TEST = """\
import torch

from env import check_cuda_fp8_capability


def fp8_ok():
    if torch.cuda.is_available() and not check_cuda_fp8_capability():
        return False
    return True


print("fp8 available:", fp8_ok())
x = torch.zeros(2).cuda() if torch.cuda.is_available() else torch.zeros(2)
"""
CAPABILITY_PROBE = """\
import torch


def capability():
    return torch.cuda.get_device_capability()


def bf16_ok():
    return torch.cuda.is_available() and capability()[0] >= 8


use_bf16 = torch.cuda.is_available() and capability()[0] >= 8
print("bf16:", use_bf16, bf16_ok())
"""


def test_a_cuda_test_before_a_call_of_a_function_probing_cuda_is_kept(tmp_path):
    """accelerate's ``require_fp8``: ``torch.cuda.is_available() and not check_cuda_fp8_capability()``
    became an NPU test, so the NPU host called the probe, whose fallback
    ``torch.cuda.get_device_capability()`` raised when the test module was imported. A later operand
    calling a function of the module that uses CUDA-only code, or an imported one named for CUDA,
    keeps the test; the migrated programs run under the stand-in as the originals do off CUDA."""
    write(tmp_path / "proj" / "env.py", FP8_PROBE)
    write(tmp_path / "proj" / "testing.py", FP8_TEST)
    write(tmp_path / "proj" / "probe.py", CAPABILITY_PROBE)
    write(tmp_path / "proj" / "pkg" / "__init__.py", "")
    write(tmp_path / "proj" / "pkg" / "testing.py", FP8_TEST.replace("from env import", "from ..env import"))
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (
        "    if torch.cuda.is_available() and not check_cuda_fp8_capability():"
        in (out / "pkg" / "testing.py").read_text()
    )
    assert (out / "testing.py").read_text() == FP8_TEST.replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    ).replace(
        "x = torch.zeros(2).cuda() if torch.cuda.is_available()",
        "x = torch.zeros(2).npu() if torch.npu.is_available()",
    )
    assert (out / "probe.py").read_text() == CAPABILITY_PROBE
    kept = [row[:2] + [row[-1]] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert [row for row in kept if row[-1] == "rules:G2N090"] == [
        ["pkg/testing.py", "7", "rules:G2N090"],
        ["probe.py", "9", "rules:G2N090"],
        ["probe.py", "12", "rules:G2N090"],
        ["testing.py", "7", "rules:G2N090"],
    ]
    require_torch()
    for script, printed in (("testing.py", "fp8 available: True\n"), ("probe.py", "bf16: False False\n")):
        run = run_cli("run", "--", sys.executable, script, cwd=out)
        assert (run.returncode, run.stdout) == (0, printed), run.stderr


FAKE_DRIVER = """\
import os


class _Target:
    backend = os.environ.get("FAKE_TRITON_BACKEND", "cuda")


class _Driver:
    def get_current_target(self):
        return _Target()


active = _Driver()
"""
TRITON_UTILS = """\
import functools

import torch
import triton


@functools.cache
def get_available_device():
    try:
        return triton.runtime.driver.active.get_current_target().backend
    except BaseException:
        return "cpu"


device_platform = get_available_device()
is_nvidia = device_platform == "cuda"
on_nvidia = triton.runtime.driver.active.get_current_target().backend == "cuda"
is_hopper = is_nvidia and torch.cuda.get_device_capability()[0] >= 9
print(is_nvidia, on_nvidia, is_hopper, torch.ones(1, device="cuda").item())
"""


def test_a_device_string_compared_with_tritons_backend_stays_cuda(tmp_path):
    """LLaMA-Factory's third_party/triton/utils.py (flash-linear-attention's): Triton's backend
    name is 'cuda' only with NVIDIA's driver and 'npu' with triton-ascend's, so a renamed
    ``== "cuda"`` turned ``is_nvidia`` true on the NPU, and the CUDA capability query it guards
    raised at import. Run under the stand-in with a driver that answers as triton-ascend's."""
    pytest.importorskip("torch")
    project = tmp_path / "proj"
    for name in ("triton/__init__.py", "triton/runtime/__init__.py"):
        write(project / name, "from . import runtime\n" if name.count("/") == 1 else "from . import driver\n")
    write(project / "triton" / "runtime" / "driver.py", FAKE_DRIVER)
    write(project / "utils.py", TRITON_UTILS)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "utils.py").read_text() == TRITON_UTILS.replace(
        "import torch\n", "import torch\nimport torch_npu\n"
    ).replace('device="cuda"', 'device="npu"')
    kept = [row[:4] + row[-1:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")]
    assert [row for row in kept if row[-1] == "rules:G2N095"] == [
        ["utils.py", "16", "16", "'cuda'", "rules:G2N095"],
        ["utils.py", "17", "17", "'cuda'", "rules:G2N095"],
    ]
    env = {**os.environ, "FAKE_TRITON_BACKEND": "npu"}
    run = run_cli("run", "--", sys.executable, "utils.py", cwd=out, env=env)
    assert (run.returncode, run.stdout) == (0, "False False False 1.0\n"), run.stderr


def test_apex_cuda_modules_reached_through_an_imported_apex_are_rows(tmp_path):
    """Swin's build.py: ``import apex as amp`` then ``amp.normalization.FusedLayerNorm`` had no
    row, while ``from apex.normalization import FusedLayerNorm`` had one."""
    assert unsupported_rows(
        tmp_path,
        "build.py",
        "import torch\nimport apex as amp\nimport apex\n\nlayernorm = amp.normalization.FusedLayerNorm\n"
        "model = apex.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())\n"
        "from apex.normalization import FusedRMSNorm\n",
    ) == [
        ("5", "apex.normalization", "rules:G2N052"),
        ("6", "apex.parallel", "rules:G2N051"),
        ("7", "apex.normalization", "rules:G2N052"),
    ]


def test_apex_modules_a_from_import_names_are_rows(tmp_path):
    """``from apex import parallel`` (and ``amp``) had no row: only the module after ``from`` was
    looked up (apex itself has no verdict). With two verdicts on one line, the unsupported one."""
    assert unsupported_rows(
        tmp_path,
        "train.py",
        "import torch\nfrom apex import parallel\nfrom apex import amp, parallel as p\nfrom apex import amp\n"
        "from apex import *\n",
    ) == [
        ("2", "apex.parallel", "rules:G2N051"),
        ("3", "apex.parallel", "rules:G2N051"),
        ("4", "apex.amp", "rules:G2N055"),
    ]


def test_an_optional_import_of_a_cuda_only_library_is_limited_not_unsupported(tmp_path):
    """llm-foundry's ``__init__`` probes ``from flash_attn import flash_attn_func`` and goes on
    without it (a raise only for a broken install); dinov2 sets a flag: check failed them, whose
    migrated code runs on the NPU. A handler that only logs (FastChat's xformers patch, which
    uses the module later) and one that always raises leave the import unsupported."""
    write(
        tmp_path / "proj" / "__init__.py",
        "import torch\ntry:\n    from flash_attn import flash_attn_func\n    del flash_attn_func\n"
        "except ImportError as e:\n    if 'undefined symbol' in str(e):\n        raise\n"
        "try:\n    import xformers.ops\n    HAVE_XFORMERS = True\nexcept ImportError:\n"
        "    HAVE_XFORMERS = False\n"
        "try:\n    import xformers\nexcept ImportError:\n    print('xformers not found')\n"
        "try:\n    import flash_attn\nexcept ImportError:\n    raise RuntimeError('install flash-attn')\n"
        "try:\n    from apex.normalization import FusedLayerNorm as LayerNorm\nexcept ImportError:\n"
        "    from apex.contrib import FastLayerNorm as LayerNorm\n"
        "try:\n    from apex.normalization import FusedLayerNorm as Norm\nexcept ImportError:\n"
        "    from torch.nn import LayerNorm as Norm\n",
    )
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    found = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[1], row[3], row[5]) for row in found[1:]] == [
        ("3", "flash_attn", "supported_with_limits"),
        ("9", "xformers.ops", "supported_with_limits"),
        ("14", "xformers", "unsupported"),
        ("18", "flash_attn", "unsupported"),
        ("22", "apex.normalization", "unsupported"),  # LLaVA's: the fallback is the same library
        ("24", "apex.contrib", "unsupported"),
        ("26", "apex.normalization", "supported_with_limits"),  # torch's layer norm instead
    ]
    assert found[1][4].startswith("optional here: imported in a try whose except ImportError goes on")
    check = run_cli("check", tmp_path / "proj", "--format", "json", "-v", "2.8.0")
    assert check.returncode == 1
    errors = [f["line"] for f in json.loads(check.stdout)["findings"] if f["severity"] == "error"]
    assert errors == [14, 18, 22, 24]


def test_an_import_made_only_where_a_test_finds_the_library_installed_is_optional(tmp_path):
    """parler-tts: ``if is_flash_attn_2_available(): from flash_attn import ...`` imports it only
    where transformers finds it installed (and CUDA), never on the NPU: ``check`` failed on it. A
    test of CUDA (migrated to the NPU's: true there) or of another library leaves the import an
    error."""
    found = unsupported_rows(
        tmp_path,
        "model.py",
        "import importlib.util\nimport torch\n"
        "from transformers.utils import is_flash_attn_2_available, is_torch_npu_available\n\n"
        "if is_flash_attn_2_available():\n    from flash_attn import flash_attn_func\n"
        "if importlib.util.find_spec('xformers') is not None:\n    import xformers.ops\n"
        "if torch.cuda.is_available():\n    import xformers\n"
        "if is_torch_npu_available():\n    from flash_attn import flash_attn_varlen_func\n"
        "if not is_flash_attn_2_available():\n    pass\nelse:\n    import flash_attn\n",
        columns=(1, 3, 5),
    )
    assert found == [
        ("6", "flash_attn", "supported_with_limits"),
        ("8", "xformers.ops", "supported_with_limits"),
        ("10", "xformers", "unsupported"),
        ("12", "flash_attn", "unsupported"),
        ("16", "flash_attn", "supported_with_limits"),
    ]


def test_apex_amp_through_an_imported_apex_and_larc_are_limits_not_failures(tmp_path):
    """swav: ``import apex`` then ``apex.amp.initialize`` had no row (only ``from apex import amp``
    had one); ``apex.parallel.LARC``, a Python optimizer wrapper the Ascend build of apex adapts,
    was reported as apex's CUDA DistributedDataParallel and failed check (simsiam)."""
    assert unsupported_rows(
        tmp_path,
        "main.py",
        "import torch\nimport apex\nfrom apex.parallel.LARC import LARC\n\n"
        "model, opt = apex.amp.initialize(model, opt, opt_level='O1')\n"
        "opt = LARC(optimizer=opt, trust_coefficient=0.001, clip=False)\n"
        "model = apex.parallel.convert_syncbn_model(model)\n",
    ) == [
        ("3", "apex.parallel.LARC", "rules:G2N175"),
        ("5", "apex.amp", "rules:G2N055"),
        ("7", "apex.parallel", "rules:G2N051"),
    ]


GUARDED_CAPABILITY = """\
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if torch.cuda.is_available():
    capability = torch.cuda.get_device_capability()
    if capability[0] >= 7:
        torch.set_float32_matmul_precision("high")
"""
CUDA_SIDE_PLACES = """\
import torch

device = 'cuda' if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 7 else 'cpu'
"""
NPU_SIDE_RAISES = """\
import torch


def check_input(x):
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8:
        return x
    else:
        raise RuntimeError("needs an Ampere GPU")
"""
SKIPPED_TIP = (
    "kept on CUDA: it runs only where the CUDA test before it is true, which it is not on NPU, so the NPU "
    "skips it as any machine without CUDA does; port it where the NPU needs what it does"
)


def kept_findings(tmp_path, code):
    write(tmp_path / "prog.py", code)
    result = run_cli("check", tmp_path / "prog.py", "-v", "2.8.0", "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    kept = sorted(
        (f["line"], f["rule"], f["severity"]) for f in findings if f["rule"] in {"G2N090", "G2N296"}
    )
    return result.returncode, kept, findings


def test_a_call_only_the_cuda_side_of_a_kept_test_makes_is_a_limit_and_check_passes(tmp_path):
    """LLMs-from-scratch's ``if torch.cuda.is_available(): capability = ...``: the NPU skips
    the branch, so neither the test nor the call in it fails there."""
    returncode, kept, findings = kept_findings(tmp_path, GUARDED_CAPABILITY)
    assert returncode == 0
    assert kept == [(4, "G2N090", "warning"), (5, "G2N296", "warning")]
    assert [f["message"] for f in findings if f["rule"] == "G2N296"] == [
        f"torch.cuda.get_device_capability: {SKIPPED_TIP} [supported_with_limits, listed, rules:G2N296]"
    ]
    migrated = migrate_code(GUARDED_CAPABILITY)
    assert migrated.splitlines()[4:7] == GUARDED_CAPABILITY.splitlines()[3:6]


def test_a_kept_test_whose_cuda_side_picks_the_device_still_fails(tmp_path):
    """On NPU the test is False, so the program would run on the CPU: an error, and the
    capability call in it (never made there) a limit."""
    returncode, kept, _ = kept_findings(tmp_path, CUDA_SIDE_PLACES)
    assert returncode == 1
    assert kept == [(3, "G2N090", "error"), (3, "G2N296", "warning")]


def test_a_kept_test_whose_other_side_raises_still_fails(tmp_path):
    returncode, kept, _ = kept_findings(tmp_path, NPU_SIDE_RAISES)
    assert returncode == 1
    assert kept == [(5, "G2N090", "error"), (5, "G2N296", "warning")]


RECORDED_RNG = """import torch


class Deterministic(torch.nn.Module):
    def record_rng(self, *args):
        self.cpu_state = torch.get_rng_state()
        if torch.cuda._initialized:
            self.cuda_in_fwd = True
"""


def test_a_test_of_cuda_s_initialisation_is_reported_as_never_true_on_the_npu(tmp_path):
    """DALLE-pytorch's reversible layers record the device's RNG state only where
    torch.cuda._initialized, which is never true on an NPU machine: recomputed layers then draw
    other dropout masks, and no row said so. The test stays (no rewrite is right on its own) and
    is reported with what to change, and check fails on it."""
    write(tmp_path / "proj" / "reversible.py", RECORDED_RNG)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert "        if torch.cuda._initialized:\n" in (out / "reversible.py").read_text()
    tip = (
        "always False on an NPU machine (CUDA is never initialised there), so what it guards never runs: "
        "where that saves and restores the device's RNG state for a recomputed layer, the NPU's is not "
        "restored and dropout draws another mask in the backward pass; test torch_npu.npu.is_initialized() "
        "instead, and give torch.random.fork_rng and set_device_states the NPU's device type "
        "(device_type='npu')"
    )
    reported = [row[:8] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert reported == [
        ["reversible.py", "7", "7", "torch.cuda._initialized", tip, "unsupported", "listed", "rules:G2N178"]
    ]
    check = run_cli("check", "--format", "json", tmp_path / "proj")
    assert check.returncode == 1
    found = [(f["line"], f["rule"]) for f in json.loads(check.stdout)["findings"]]
    assert found == [(7, "G2N178")]


CUDNN_GATE = """import torch


def get_device():
    usable = torch.cuda.is_available() and torch.backends.cudnn.is_available()
    return torch.device("cuda" if usable else "cpu")


if __name__ == "__main__":
    print(get_device())
"""


@pytest.mark.parametrize(
    "style,rule,tip",
    [
        ((), "G2N179", "always False on an NPU host: torch_npu runs on torch's CPU build"),
        (
            ("--target", "portable"),
            "G2N179",
            "always False on an NPU host: torch_npu runs on torch's CPU build",
        ),
        (
            ("--mode", "auto"),
            "G2N712",
            "transfer_to_npu does not patch it, and it is always False on an NPU host",
        ),
    ],
    ids=["npu", "portable", "auto"],
)
def test_a_cudnn_test_beside_the_device_s_is_reported_as_never_true_on_the_npu(tmp_path, style, rule, tip):
    """CodeFormer's get_device() tests torch.backends.cudnn.is_available() beside CUDA's
    availability: on the NPU host (torch's CPU build, no cuDNN) it is False, so every caller ran on
    the CPU, with no row in any style of migration. Kept and reported, and check fails on it."""
    write(tmp_path / "proj" / "misc.py", CUDNN_GATE)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", *style)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert " and torch.backends.cudnn.is_available()\n" in (out / "misc.py").read_text()
    reported = [row for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert [row[:4] + [row[5], row[-1]] for row in reported] == [
        ["misc.py", "5", "5", "torch.backends.cudnn.is_available", "unsupported", f"rules:{rule}"]
    ]
    assert reported[0][4].startswith(tip)
    check = run_cli("check", "--format", "json", *style, tmp_path / "proj")
    assert check.returncode == 1
    findings = json.loads(check.stdout)["findings"]
    assert [(f["line"], f["severity"]) for f in findings if f["rule"] == rule] == [(5, "error")]


@pytest.mark.parametrize(
    "code,row,tip,check",
    [
        (
            'from vllm import LLM\nimport os\n\nos.environ["VLLM_ATTENTION_BACKEND"] = "FLASHINFER"\n',
            ["1", "1", "vllm", "supported_with_limits", "listed", "rules:G2N099"],
            "vLLM runs on Ascend NPUs only through the vllm-ascend plugin",
            0,
        ),
        (
            "from fairscale.optim.grad_scaler import ShardedGradScaler\n\n"
            "scaler = ShardedGradScaler(enabled=True)\n",
            [
                "3",
                "3",
                "fairscale.optim.grad_scaler.ShardedGradScaler",
                "unsupported",
                "listed",
                "rules:G2N180",
            ],
            "fairscale's ShardedGradScaler is a torch.cuda.amp.GradScaler, which turns itself off where CUDA",
            1,
        ),
        (
            "from basicsr.train import train_pipeline\n\ntrain_pipeline('.')\n",
            ["1", "1", "basicsr.train", "unsupported", "listed", "rules:G2N182"],
            "BasicSR picks its device through torch.cuda (num_gpu: auto is torch.cuda.device_count()",
            1,
        ),
        (
            "import torch\nfrom openfold.model.primitives import Attention\n",
            ["2", "2", "openfold.model.primitives", "supported_with_limits", "listed", "rules:G2N181"],
            "openfold's fused attention softmax (attn_core_inplace_cuda, used with use_memory_efficient",
            0,
        ),
        (  # accelerate's benchmarks/fp8/ms_amp
            "import msamp\n\nmodel, optimizer = msamp.initialize(None, None)\n",
            ["1", "1", "msamp", "unsupported", "listed", "rules:G2N065"],
            "MS-AMP (msamp) is NVIDIA-only FP8 training",
            1,
        ),
        (
            "from mish_cuda import MishCuda as Mish\n\nact = Mish()\n",
            ["1", "1", "mish_cuda", "unsupported", "listed", "rules:G2N184"],
            "mish_cuda is a CUDA extension (built with nvcc) with no NPU build",
            1,
        ),
        (
            "from timm.utils import NativeScaler\n\nscaler = NativeScaler()\n"
            "chosen = NativeScaler(device='npu')\n",
            ["3", "3", "timm.utils.NativeScaler", "unsupported", "listed", "rules:G2N185"],
            "timm's NativeScaler builds a CUDA GradScaler (torch.cuda.amp.GradScaler() before timm 1.0.12",
            1,
        ),
        (
            "from sat.training.deepspeed_training import training_main\n\ntraining_main(None)\n",
            ["1", "1", "sat.training.deepspeed_training", "unsupported", "listed", "rules:G2N988"],
            "SwissArmyTransformer (sat) picks its device through torch.cuda",
            1,
        ),
        (  # only a task asking for GPUs: FastChat's gen_model_answer.py
            "import ray\n\nplain = ray.remote(print)\nsplit = ray.remote(num_gpus=0.5)(print)\n",
            ["4", "4", "ray.remote", "unsupported", "listed", "rules:G2N994"],
            "Ray counts no GPU on an Ascend host, so a task or actor that asks for num_gpus stays pending",
            1,
        ),
        (  # DeepSpeedExamples' deepnvme: GPUDirect Storage
            "from deepspeed.ops.op_builder import GDSBuilder\n\nhandle = GDSBuilder().load().gds_handle()\n",
            ["3", "3", "deepspeed.ops.op_builder.GDSBuilder", "unsupported", "listed", "rules:G2N998"],
            "a DeepSpeed op with no NPU build",
            1,
        ),
        (  # lm-evaluation-harness's nemo_lm.py: the class from its defining module
            "from lightning.pytorch.trainer.trainer import Trainer\n\ntrainer = Trainer(devices=2)\n",
            ["3", "3", "lightning.pytorch.trainer.trainer.Trainer", "unsupported", "listed", "rules:G2N076"],
            "PyTorch Lightning has no built-in NPU accelerator",
            1,
        ),
        (  # InternImage's export.py --trt
            "from mmdeploy.backend.tensorrt import from_onnx\n",
            ["1", "1", "mmdeploy.backend.tensorrt", "unsupported", "listed", "rules:G2N086"],
            "TensorRT builds engines for NVIDIA GPUs only",
            1,
        ),
        (  # lm-evaluation-harness's sglang_causallms.py
            "import sglang as sgl\n\nengine = sgl.Engine(model_path='m')\n",
            ["1", "1", "sglang", "supported_with_limits", "listed", "rules:G2N066"],
            "SGLang runs on Ascend NPUs only from its NPU build",
            0,
        ),
        (  # OpenRLHF's distributed_util.py: the PPO weight sync
            "from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator\n",
            [
                "1",
                "1",
                "vllm.distributed.device_communicators.pynccl",
                "unsupported",
                "listed",
                "rules:G2N067",
            ],
            "vLLM's PyNcclCommunicator loads libnccl through ctypes",
            1,
        ),
        (  # gpt-fast's quantize.py --mode int4
            "import torch\n\nw = torch.ops.aten._convert_weight_to_int4pack(torch.ones(1), 8)\n",
            ["3", "3", "torch.ops.aten._convert_weight_to_int4pack", "unsupported", "listed", "rules:G2N068"],
            "aten's int4 weight packing and matmul (tinygemm's layout) have CUDA, MPS and XPU kernels only",
            1,
        ),
        (  # llm-foundry's command_utils/train.py
            "from composer.utils import dist, get_device\n\ndist.initialize_dist(get_device(None))\n",
            ["1", "1", "composer.utils", "unsupported", "listed", "rules:G2N069"],
            "MosaicML Composer picks its device through torch.cuda",
            1,
        ),
        (  # OpenRLHF's vllm_engine.py
            "import os\n\nimport ray\n\nos.environ['CUDA_VISIBLE_DEVICES'] = str(ray.get_gpu_ids()[0])\n",
            ["5", "5", "ray.get_gpu_ids", "unsupported", "listed", "rules:G2N295"],
            "Ray assigns no GPU on an Ascend host, so ray.get_gpu_ids() is [] there",
            1,
        ),
    ],
    ids=[
        "vllm",
        "fairscale scaler",
        "basicsr engine",
        "openfold kernels",
        "ms-amp",
        "mish_cuda",
        "timm scaler",
        "sat",
        "ray num_gpus",
        "deepspeed gds",
        "lightning trainer module",
        "mmdeploy tensorrt",
        "sglang",
        "vllm pynccl",
        "aten int4",
        "composer",
        "ray gpu ids",
    ],
)
def test_a_library_that_needs_cuda_or_a_plugin_is_reported_where_the_code_uses_it(
    tmp_path, code, row, tip, check
):
    """SimPO's decode.py imports vllm with no requirement file naming it, so vllm's requirement
    row (the vllm-ascend plugin) never came and the file was called fully migrated. pycls's FSDP
    path scales its losses with fairscale's ShardedGradScaler, a torch.cuda.amp.GradScaler: on the
    NPU it turns itself off, so fp16 trained without loss scaling, and check passed. Real-ESRGAN
    trains through basicsr, which counts CUDA cards and so trained on the CPU; esm's ESMFold imports
    openfold, whose fused kernels are CUDA-only. ScaledYOLOv4's model imports the CUDA extension
    mish_cuda; T2T-ViT scales its fp16 losses with timm's NativeScaler, a CUDA GradScaler that turns
    itself off (one given device='npu' has chosen). CogVideo's sat/ scripts train through
    SwissArmyTransformer, which picks its card through torch.cuda and defaults to nccl. FastChat's
    judge asks Ray for GPUs, which an Ascend host has none of; DeepSpeedExamples' deepnvme loads
    DeepSpeed's GDS builder, which has no NPU build; accelerate's FP8 benchmark imports the NVIDIA-only
    MS-AMP. Each is reported where the code uses it; check
    fails on the ones that cannot work."""
    write(tmp_path / "proj" / "main.py", code)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    reported = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [found[1:4] + found[5:] for found in reported] == [row]
    assert reported[0][0] == "main.py" and reported[0][4].startswith(tip)
    assert run_cli("check", tmp_path / "proj").returncode == check


def test_sat_under_the_patcher_is_no_row(tmp_path):
    """transfer_to_npu sends SwissArmyTransformer's torch.cuda calls and its nccl default to the NPU."""
    write(tmp_path / "proj" / "train.py", "from sat import mpu\n\nif __name__ == '__main__':\n    mpu.x()\n")
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "--mode", "auto", "--no-cache")
    assert result.returncode == 0, result.stderr
    assert rows(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")[1:] == []
    assert run_cli("check", tmp_path / "proj", "--no-cache").returncode == 1


CHECKPOINT_LOADS = """import argparse

import torch

args = argparse.Namespace(lr=0.1)
torch.save({"model": {"w": torch.ones(1)}, "args": args}, "ckpt.pth")
checkpoint = torch.load("ckpt.pth", map_location="cpu")
weights = torch.load("ckpt.pth", weights_only=False)
print(checkpoint["args"].lr)
"""


@pytest.mark.parametrize(
    "style", [(), ("--target", "portable"), ("--mode", "auto", "--entry", "train.py")], ids=str
)
def test_a_checkpoint_load_that_leaves_weights_only_to_torch_is_reported_from_torch_2_6(tmp_path, style):
    """mae, deit and ConvNeXt save the run's argparse.Namespace with their weights. The torch the NPU
    pairs with at the default target is 2.6 or later, where torch.load reads only tensors unless
    told otherwise, so their resume failed with 'Weights only load failed' and no row said why. A
    load that passes weights_only has chosen and gets no row, nor does any load for torch 2.5."""
    write(tmp_path / "proj" / "train.py", CHECKPOINT_LOADS)
    result = run_cli("migrate", *style, "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    report = tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv"
    reported = [row for row in rows(report)[1:] if row[3] == "torch.load"]
    assert [row[:4] + row[5:] for row in reported] == [
        ["train.py", "7", "7", "torch.load", "supported_with_limits", "listed", "rules:G2N183"]
    ]
    assert reported[0][4].startswith("at this target torch (2.6 or later) torch.load reads only tensors")
    older = run_cli("migrate", *style, "-v", "2.5.1", "-i", tmp_path / "proj", "-o", tmp_path / "older")
    assert older.returncode == 0, older.stderr
    older_report = tmp_path / "older" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv"
    assert [row for row in rows(older_report)[1:] if row[3] == "torch.load"] == []


def test_the_checkpoint_load_the_row_names_fails_on_the_torch_of_the_target(tmp_path):
    """The row's claim, on the torch the tests run (2.13): the load it names fails, the one that
    passes weights_only=False reads the checkpoint."""
    require_torch()
    write(tmp_path / "train.py", CHECKPOINT_LOADS)
    run = run_program([sys.executable, "train.py"], cwd=tmp_path, env=plain_env())
    assert run.returncode == 1 and "Weights only load failed" in run.stderr
    fixed = CHECKPOINT_LOADS.replace('map_location="cpu")', 'map_location="cpu", weights_only=False)')
    write(tmp_path / "train.py", fixed)
    run = run_program([sys.executable, "train.py"], cwd=tmp_path, env=plain_env())
    assert (run.returncode, run.stdout) == (0, "0.1\n"), run.stderr


SPECTROGRAM = """import torch

audio = torch.sin(torch.arange(400.0))
spec = torch.stft(audio, 64, hop_length=16, window=torch.hann_window(64))
chosen = torch.stft(audio, 64, hop_length=16, window=torch.hann_window(64), return_complex=True)
print(tuple(spec.shape), tuple(torch.view_as_real(chosen).shape))
"""


def test_a_spectrogram_that_leaves_return_complex_to_torch_is_reported_from_torch_2(tmp_path):
    """vits computes its mel spectrograms with torch.stft and no return_complex: torch 2 refuses a
    real input so, and the NPU pairs with torch 2.1 or later. The call that passes it is not a row;
    with -v 1.11.0 none is. The row's claim and its fix, on the torch the tests run."""
    write(tmp_path / "proj" / "audio.py", SPECTROGRAM)
    for version, expected in (
        ("2.1.0", [["audio.py", "4", "4", "torch.stft", "rules:G2N186"]]),
        ("1.11.0", []),
    ):
        result = run_cli("migrate", "-v", version, "-i", tmp_path / "proj", "-o", tmp_path / version)
        assert result.returncode == 0, result.stderr
        found = rows(tmp_path / version / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
        assert [row[:4] + row[-1:] for row in found[1:] if row[3] == "torch.stft"] == expected, version
    assert run_cli("check", "-v", "2.1.0", tmp_path / "proj").returncode == 1
    require_torch()
    run = run_program([sys.executable, "audio.py"], cwd=tmp_path / "proj", env=plain_env())
    assert run.returncode == 1 and "requires the return_complex parameter" in run.stderr
    fixed = SPECTROGRAM.replace(
        "spec = torch.stft(audio, 64, hop_length=16, window=torch.hann_window(64))",
        "spec = torch.view_as_real(torch.stft(audio, 64, hop_length=16, window=torch.hann_window(64), "
        "return_complex=True))",
    )
    write(tmp_path / "proj" / "audio.py", fixed)
    run = run_program([sys.executable, "audio.py"], cwd=tmp_path / "proj", env=plain_env())
    assert (run.returncode, run.stdout) == (0, "(33, 26, 2) (33, 26, 2)\n"), run.stderr


ACCELERATOR_SCRIPT = """import torch

use_accel = torch.accelerator.is_available()
device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
with torch.serialization.safe_globals([dict]):
    pass
"""

NEWER_NAMES = """import torch
from torch.distributed.fsdp import fully_shard

norm = fully_shard(torch.nn.RMSNorm(8))
scaler = torch.amp.GradScaler("cuda")


@torch.amp.custom_fwd(device_type="cuda")
def f(x):
    return torch.nn.functional.rms_norm(x, (8,))
"""

ACCELERATOR_ROWS = [
    ("3", "torch.accelerator.is_available", "G2N192"),
    ("4", "torch.accelerator.current_accelerator", "G2N192"),
]
FULLY_SHARD_ROWS = [  # the import fails there, and so would the call
    ("2", "torch.distributed.fsdp.fully_shard", "G2N375"),
    ("4", "torch.distributed.fsdp.fully_shard", "G2N375"),
]

DTENSOR_IMPORTS = """import torch
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.experimental import context_parallel

try:
    from torch.distributed.tensor import Shard
except ImportError:
    from torch.distributed._tensor import Shard


def local(x):
    return x.to_local() if isinstance(x, DTensor) else x
"""
DTENSOR_ROWS = [
    ("2", "torch.distributed.tensor.DTensor", "G2N385"),
    ("3", "torch.distributed.tensor.experimental.context_parallel", "G2N385"),
]

FSDP2_IMPORT = """import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import FSDPModule as FSDP2


def is_fsdp(model):
    return isinstance(model, (FSDP, FSDP2))
"""


@pytest.mark.parametrize(
    "script,version,expected,code",
    [
        (
            ACCELERATOR_SCRIPT,
            "2.1.0",
            ACCELERATOR_ROWS + [("5", "torch.serialization.safe_globals", "G2N196")],
            1,
        ),
        (ACCELERATOR_SCRIPT, "2.5.1", ACCELERATOR_ROWS, 1),
        (ACCELERATOR_SCRIPT, "2.6.0", [], 0),
        (
            NEWER_NAMES,
            "2.1.0",
            [
                *FULLY_SHARD_ROWS,
                ("4", "torch.nn.RMSNorm", "G2N371"),
                ("5", "torch.amp.GradScaler", "G2N372"),
                ("8", "torch.amp.custom_fwd", "G2N373"),
                ("10", "torch.nn.functional.rms_norm", "G2N371"),
            ],
            1,
        ),
        (NEWER_NAMES, "2.4.0", FULLY_SHARD_ROWS, 1),
        (NEWER_NAMES, "2.6.0", [], 0),
        (DTENSOR_IMPORTS, "2.1.0", DTENSOR_ROWS, 1),  # torchtune: the import fails, not a call
        (DTENSOR_IMPORTS, "2.5.1", [], 0),
        (FSDP2_IMPORT, "2.1.0", [("3", "torch.distributed.fsdp.FSDPModule", "G2N375")], 1),  # ms-swift
        (FSDP2_IMPORT, "2.6.0", [], 0),
    ],
)
def test_a_name_the_target_torch_does_not_have_yet_is_an_error(tmp_path, script, version, expected, code):
    """pytorch/examples' mnist calls torch.accelerator (torch 2.6) and word_language_model
    torch.serialization.safe_globals (2.5); open_clip builds torch.nn.RMSNorm (2.4), torch.amp.GradScaler
    (2.3) and FSDP2's fully_shard (public in 2.6): with -v 2.1.0 they were "unknown, not validated" and
    check passed, while the program stops with an AttributeError on that torch."""
    write(tmp_path / "proj" / "main.py", script)
    result = run_cli("migrate", "-v", version, "-i", tmp_path / "proj", "-o", tmp_path / version)
    assert result.returncode == 0, result.stderr
    found = rows(tmp_path / version / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[1], row[3], row[-1].split(":")[-1]) for row in found[1:]] == expected
    assert run_cli("check", "-v", version, tmp_path / "proj", "--no-cache").returncode == code


TESTED_NAMES = """import torch

device = torch.accelerator.current_accelerator().type if hasattr(torch, "accelerator") else "cuda"
if hasattr(torch, "accelerator") and torch.accelerator.is_available():
    count = torch.accelerator.device_count()
if not hasattr(torch, "accelerator"):
    count = torch.cuda.device_count()
else:
    count = torch.accelerator.device_count()
norm = torch.nn.RMSNorm(8) if hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(8)
fallback = torch.nn.LayerNorm(8) if hasattr(torch, "accelerator") else torch.nn.RMSNorm(8)
count = torch.accelerator.device_count()
"""


def test_a_name_the_target_torch_lacks_is_no_error_behind_a_hasattr_test_for_it(tmp_path):
    """peft's examples choose ``torch.accelerator.current_accelerator().type if hasattr(torch,
    "accelerator") else "cuda"``: on torch 2.1 the call never runs, yet each was an error (67 rows)
    and check failed. A use the test does not guard (its else branch, the last line) still is."""
    write(tmp_path / "proj" / "main.py", TESTED_NAMES)
    result = run_cli("migrate", "-v", "2.1.0", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    report = tmp_path / "out" / "proj_msft" / "transplant_result_file"
    found = rows(report / "unsupported_api.csv")
    assert [(row[1], row[3], row[-1].split(":")[-1]) for row in found[1:]] == [
        ("11", "torch.nn.RMSNorm", "G2N371"),
        ("12", "torch.accelerator.device_count", "G2N192"),
    ]
    assert [row[3] for row in rows(report / "unknown_api.csv")[1:]] == []
    only_tested = "".join(TESTED_NAMES.splitlines(keepends=True)[:10])
    write(tmp_path / "tested" / "main.py", only_tested)
    assert run_cli("check", "-v", "2.1.0", tmp_path / "tested", "--no-cache").returncode == 0


CUDA_BUILD_GATES = """import torch
from torch import version as tv

bf16_ready = torch.version.cuda is not None and torch.cuda.is_bf16_supported()
if tv.cuda:
    torch.backends.cudnn.benchmark = True
kernel = "fused" if torch.version.cuda else "plain"
assert not torch.version.cuda or bf16_ready
names = [name for name in ("a", "b") if torch.version.cuda]
print(torch.version.cuda, f"{torch.version.cuda}")
built = torch.version.cuda
print(bf16_ready, kernel, torch.cuda.is_bf16_supported())
"""


@pytest.mark.parametrize(
    "style", [(), ("--target", "portable"), ("--mode", "auto", "--entry", "train.py")], ids=str
)
def test_a_test_of_torch_version_cuda_is_reported_where_it_decides(tmp_path, style):
    """FSDP recipes gate bf16 on torch.version.cuda, which is None on every torch_npu host, also
    under transfer_to_npu: the NPU silently trained in another precision and no row said so
    (msFmkTransplt leaves it untouched too, anchor-spec B7). Each read that decides (a test, an
    and/or/not operand, a comparison, through an alias) gets a row; a read that is only shown or
    bound does not."""
    write(tmp_path / "proj" / "train.py", CUDA_BUILD_GATES)
    result = run_cli("migrate", *style, "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    report = tmp_path / "out" / "proj_msft" / "transplant_result_file" / "manual_work.csv"
    gates = [row for row in rows(report)[1:] if row[6] == "G2N187"]
    assert [row[:4] + row[5:] for row in gates] == [
        ["train.py", str(line), str(line), "torch.version.cuda", "limited", "G2N187", "python", ""]
        for line in (4, 5, 7, 8, 9)
    ]
    assert gates[0][4].startswith("None on an NPU host (torch_npu runs on a torch built without CUDA")


def test_the_gate_the_row_names_takes_the_branch_without_cuda_on_the_stand_in(tmp_path):
    """The row's claim, run: migrated, the bf16 gate is False under the NPU stand-in, whose
    torch.npu says bf16 is supported, and the kernel test picks the plain branch."""
    require_torch()
    write(tmp_path / "proj" / "train.py", CUDA_BUILD_GATES)
    assert run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out").returncode == 0
    migrated = tmp_path / "out" / "proj_msft"
    run = run_cli("run", "--", sys.executable, "train.py", cwd=migrated)
    assert (run.returncode, run.stdout) == (0, "None None\nFalse plain True\n"), run.stderr


DCGAN_FORWARD = """\
import torch
import torch.nn as nn
from torch.nn.parallel import data_parallel


class Generator(nn.Module):
    def __init__(self, ngpu):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Linear(2, 2)

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        if torch.cuda.is_available() and self.ngpu > 1:
            output = data_parallel(self.main, output, range(self.ngpu))
        return output


def spread(net, x):
    return nn.parallel.data_parallel(net, x.cuda())
"""
DATA_PARALLEL_TIP = (
    "torch.nn.parallel.data_parallel (functional DataParallel) is not supported on the NPU in any torch "
    "version: call the module itself (module(input)) on the one NPU, or migrate with the distributed mode "
    "(DistributedDataParallel, one process per NPU); a CUDA test before it is kept (not in --mode auto, "
    "whose patcher makes it true), so the NPU takes the other branch"
)


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_a_cuda_test_before_functional_data_parallel_stays_a_cuda_test(tmp_path, target):
    """dcgan (pytorch/examples): ``if input.is_cuda and self.ngpu > 1: data_parallel(...)`` as
    ``is_npu`` sent NPU tensors into the functional DataParallel, which the NPU does not support,
    where the original took ``self.main(input)``; the test stays a CUDA test, the call behind it is
    a limit, and a call no CUDA test guards is an error."""
    write(tmp_path / "dc" / "main.py", DCGAN_FORWARD)
    result = run_cli("migrate", "-i", tmp_path / "dc", "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "dc_msft"
    migrated = (out / "main.py").read_text()
    if target == "npu":
        assert migrated == DCGAN_FORWARD.replace(
            "import torch\n", "import torch\nimport torch_npu\n", 1
        ).replace("x.cuda()", "x.npu()")
    else:
        assert "if input.is_cuda and self.ngpu > 1:" in migrated
        assert "if torch.cuda.is_available() and self.ngpu > 1:" in migrated
    kept = [row[:5] + row[-3:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")]
    data_parallel = [(row[1], row[4], row[5], row[7]) for row in kept if "data_parallel" in row[3]]
    assert data_parallel == [
        ("14", SKIPPED_TIP, "supported_with_limits", "rules:G2N198"),
        ("18", SKIPPED_TIP, "supported_with_limits", "rules:G2N198"),
        ("23", DATA_PARALLEL_TIP, "unsupported", "rules:G2N198"),
    ]
    assert [row[:4] for row in kept if row[-1] == "rules:G2N090"] == [
        ["main.py", "13", "13", "torch.Tensor.is_cuda"],
        ["main.py", "17", "17", "torch.cuda.is_available"],
    ]


BEHIND_THE_BUILD_GATE = """\
import torch
import torch.distributed as dist
from torch.cuda import nccl


def bf16_ready():
    return torch.version.cuda and dist.is_nccl_available() and nccl.version() >= (2, 10)


def capability():
    if torch.version.cuda:
        return torch.cuda.get_device_capability()
    return nccl.version()
"""


def test_a_call_kept_on_cuda_behind_torch_version_cuda_is_a_limit(tmp_path):
    """pytorch/examples' FSDP ``bf16_ready = torch.version.cuda and ... and nccl.version() >=
    (2, 10)``: the chain stops at torch.version.cuda (None on the NPU host), so nccl.version() is
    never called there; ``check`` failed on it as an error. The same call where no such test
    guards it stays an error."""
    write(tmp_path / "proj" / "env.py", BEHIND_THE_BUILD_GATE)
    result = run_cli("check", tmp_path / "proj", "--format", "json")
    findings = [
        (f["line"], f["api"], f["severity"], f["rule"])
        for f in json.loads(result.stdout)["findings"]
        if "nccl" in f["api"] or "capability" in f["api"]
    ]
    assert findings == [
        (7, "torch.cuda.nccl.version", "warning", "G2N200"),
        (12, "torch.cuda.get_device_capability", "warning", "G2N296"),
        (13, "torch.cuda.nccl.version", "error", "G2N200"),
    ]
    assert result.returncode == 1


DETECTION_OPS = (
    "import torch\nimport torchvision\nfrom torchvision.ops.boxes import batched_nms, box_area\n"
    "from torchvision.ops import PSRoIAlign\n\n\n"
    "def postprocess(boxes, scores, idx):\n"
    "    keep = batched_nms(boxes.float(), scores, idx, iou_threshold=0.7)\n"
    "    pooled = torchvision.ops.roi_align(boxes, [boxes], 7)\n"
    "    return keep, box_area(boxes), pooled, torchvision.ops.box_iou(boxes, boxes)\n\n\n"
    "head = PSRoIAlign(7, 1.0, 2)\nboxes = torch.rand(4, 4).cuda()\n"
)
# A class has its row where it is used; a lower-case name a from-import brings may be a module.
DETECTION_OP_ROWS = [
    ("3", "torchvision.ops.boxes.batched_nms", "supported_with_limits", "rules:G2N985"),
    ("8", "torchvision.ops.boxes.batched_nms", "supported_with_limits", "rules:G2N985"),
    ("9", "torchvision.ops.roi_align", "supported_with_limits", "rules:G2N986"),
    ("13", "torchvision.ops.PSRoIAlign", "unsupported", "rules:G2N987"),
]


@pytest.mark.parametrize(
    "options", [(), ("-v", "2.1.0"), ("--mode", "auto", "--entry", "amg.py"), ("--target", "portable")]
)
def test_torchvision_detection_ops_name_the_adapter_they_need_on_the_npu(tmp_path, options):
    """segment-anything's batched_nms ran on the model's device with no row and `check` passed:
    torchvision registers CPU and CUDA kernels only; torchvision_npu adds nms, roi_align, roi_pool
    and deform_conv2d, not the position-sensitive ones. The pure-torch box helpers need nothing."""
    write(tmp_path / "proj" / "amg.py", DETECTION_OPS)
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    found = rows(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[1], row[3], row[5], row[-1]) for row in found[1:]] == DETECTION_OP_ROWS
    assert "torchvision_npu" in found[1][4] and "torchvision_npu" not in found[-1][4]


def test_check_fails_on_a_detection_op_the_npu_adapter_lacks(tmp_path):
    write(tmp_path / "proj" / "amg.py", DETECTION_OPS)
    result = run_cli("check", tmp_path / "proj", "--no-cache", "--format", "json")
    assert result.returncode == 1, result.stderr
    blocking = [f for f in json.loads(result.stdout)["findings"] if f["category"] == "unsupported"]
    assert [(f["line"], f["rule"]) for f in blocking] == [(13, "G2N987")]
    write(tmp_path / "ok" / "amg.py", DETECTION_OPS.replace("from torchvision.ops import PSRoIAlign\n", ""))
    assert run_cli("check", tmp_path / "ok", "--no-cache").returncode == 0
    assert run_cli("check", tmp_path / "ok", "--no-cache", "--fail-on", "any").returncode == 1


ONNX_SESSION = """\
import numpy as np
import onnxruntime as ort
import torch


def session(path, device="cuda"):
    provider = ["CUDAExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    return ort.InferenceSession(path, providers=provider)


def bound(img):
    value = ort.OrtValue.ortvalue_from_numpy(img, "cuda", 0)
    out = ort.OrtValue.ortvalue_from_shape_and_type([1, 2], np.float32, device_type="cuda")
    return value, out, torch.tensor(img).cuda()
"""
ONNX_ROWS = [  # manual_work.csv
    ["onnx.py", "7", "CUDAExecutionProvider", "limited", "G2N991"],
    ["requirements.txt", "1", "onnxruntime-gpu", "unsupported", "G2N503"],
]
ONNX_KEPT = [  # unsupported_api.csv
    ["onnx.py", "12", "device_type='cuda'", "unsupported", "rules:G2N992"],
    ["onnx.py", "13", "device_type='cuda'", "unsupported", "rules:G2N993"],
]


@pytest.mark.parametrize("options", [(), ("--target", "portable")])
def test_onnxruntime_s_cuda_devices_stay_and_its_cuda_provider_is_reported(tmp_path, options):
    """efficientvit's ONNX paths: onnxruntime's "cuda" became "npu" (none of onnxruntime's
    devices) and its CUDA execution provider had no row: onnxruntime's own device strings stay,
    and each CUDA side of onnxruntime is a row naming its CANN build."""
    write(tmp_path / "proj" / "onnx.py", ONNX_SESSION)
    write(tmp_path / "proj" / "requirements.txt", "onnxruntime-gpu==1.18\n")
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "proj_msft" / "onnx.py").read_text()
    assert migrated.count('"cuda", 0)') == 1 and migrated.count('device_type="cuda"') == 1
    assert ('device="cuda"' in migrated, "torch.tensor(img).cuda()" in migrated) == (False, False)
    reports = tmp_path / "out" / "proj_msft" / "transplant_result_file"
    found = [row for row in rows(reports / "manual_work.csv") if row[6] in ("G2N991", "G2N503")]
    kept = rows(reports / "unsupported_api.csv")[1:]
    assert [[row[0], row[1], row[3], row[5], row[6]] for row in found] == ONNX_ROWS
    assert [[row[0], row[1], row[3], row[5], row[-1]] for row in kept] == ONNX_KEPT
    assert all("CANN" in row[4] or "cann" in row[4] for row in found + kept)


ENV_INFO = """\
import torch


def collect_env_info():
    has_gpu = torch.cuda.is_available()
    has_cuda = has_gpu and torch.version.hip is None
    data = []
    if not has_gpu:
        data.append("No: torch.cuda.is_available() == False")
    if has_gpu:
        for k in range(torch.cuda.device_count()):
            data.append(str(torch.cuda.get_device_capability(k)))
    if has_cuda:
        data.append("nvcc")
    return data


def placing(x):
    has_gpu = torch.cuda.is_available()
    if has_gpu:
        print(torch.cuda.get_device_capability())
    return x.to("cuda") if has_gpu else x


print(collect_env_info())
"""


def test_a_name_bound_to_a_cuda_test_that_only_chooses_what_is_shown_keeps_the_test(tmp_path):
    """detectron2's collect_env.py: ``has_gpu = torch.cuda.is_available()`` guards a kept
    ``torch.cuda.get_device_capability`` and is read elsewhere only by branchings that show text
    (and through ``has_cuda``): the test stays CUDA's, so the NPU skips the CUDA-only call (a
    limit, with the skipped call's row saying so). Where another read places a tensor the test
    changes, and the kept call's row no longer claims the NPU skips it."""
    project = tmp_path / "proj"
    write(project / "collect_env.py", ENV_INFO)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    expected = ENV_INFO.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    expected = expected.replace("range(torch.cuda.device_count", "range(torch.npu.device_count")
    placing = expected[expected.index("def placing") :]
    expected = expected.replace(
        placing,
        placing.replace("torch.cuda.is_available", "torch.npu.is_available").replace('"cuda"', '"npu"'),
    )
    assert (out / "collect_env.py").read_text() == expected
    kept = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [(row[1], row[3], row[5], row[-1]) for row in kept] == [
        ("5", "torch.cuda.is_available", "supported_with_limits", "rules:G2N090"),
        ("12", "torch.cuda.get_device_capability", "supported_with_limits", "rules:G2N296"),
        ("21", "torch.cuda.get_device_capability", "unsupported", "rules:G2N296"),
    ]
    require_torch()
    run = run_cli("run", "--", sys.executable, "collect_env.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "['No: torch.cuda.is_available() == False']\n"), run.stderr


MERGE = """\
import torch
from mergekit.merge import MergeOptions, run_merge


def merge(config):
    cuda = torch.cuda.is_available()
    run_merge(config, options=MergeOptions(cuda=cuda))
    return run_merge(config, options=MergeOptions(device="auto", cuda=torch.cuda.is_available()))


def place(x):
    return x.cuda() if torch.cuda.is_available() else x


print(merge(torch.ones(2)), torch.cuda.is_available())
"""

MERGEKIT = """\
import torch


class MergeOptions:
    def __init__(self, cuda=False, device="cpu"):
        self.cuda = cuda


def run_merge(config, options):
    return f"merged on {(config * 2).to('cuda' if options.cuda else 'cpu').device.type}"
"""


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_a_cuda_test_given_to_a_librarys_cuda_switch_stays_a_cuda_test(tmp_path, target):
    """trl's merge_model_callback: ``MergeOptions(cuda=torch.cuda.is_available())`` makes mergekit
    compute on "cuda"; the NPU's test there is True on an NPU host, where mergekit's "cuda" fails.
    The test stays CUDA's (given directly, or through a name nothing else reads), reported as a
    limit, and mergekit merges on the CPU; the program's own device test still changes."""
    project = tmp_path / "proj"
    write(project / "merge.py", MERGE)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    test = {"npu": "torch.npu.is_available", "portable": "torch.accelerator.is_available"}[target]
    migrated = (out / "merge.py").read_text()
    assert MERGE[MERGE.index("def merge") : MERGE.index("def place")] in migrated
    assert f"print(merge(torch.ones(2)), {test}())" in migrated
    kept = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [(row[1], row[3], row[5], row[-1]) for row in kept if row[-1] == "rules:G2N378"] == [
        ("6", "torch.cuda.is_available", "supported_with_limits", "rules:G2N378"),
        ("8", "torch.cuda.is_available", "supported_with_limits", "rules:G2N378"),
    ]
    require_torch()
    write(tmp_path / "lib" / "mergekit" / "merge.py", MERGEKIT)
    env = plain_env(PYTHONPATH=str(tmp_path / "lib"))
    run = run_cli("run", "--devices", "1", "--", sys.executable, "merge.py", cwd=out, env=env)
    assert (run.returncode, run.stdout) == (0, "merged on cpu True\n"), run.stderr


NVIDIA_ONLY = """\
import torch


def wrap(step, device_type):
    if not (device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is None):
        print("eager")
        return step
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def fa3_ready():
    return (
        torch.cuda.is_available() and torch.version.hip is None and torch.cuda.get_device_capability() > (8,)
    )


wrap(lambda: None, "cuda")
print("fa3:", fa3_ready())
"""


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_a_cuda_test_that_also_excludes_rocm_stays_a_cuda_test(tmp_path, target):
    """torchtitan's ``wrap_with_cuda_graph``: ``if not (device_type == "cuda" and
    torch.cuda.is_available() and torch.version.hip is None): return eager``. The author kept ROCm,
    which speaks torch.cuda too, off the CUDA-graph path; migrated to an NPU test, the NPU captured
    the whole training step in an NPUGraph (portable: in torch.cuda.CUDAGraph, which fails). The
    test stays, as a limit: the NPU takes ROCm's way, and the program runs eager as off CUDA."""
    write(tmp_path / "graphs.py", NVIDIA_ONLY)
    result = run_cli("migrate", "-i", tmp_path / "graphs.py", "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "graphs_msft"
    migrated = (out / "graphs.py").read_text()
    assert (
        'if not (device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is None):'
        in migrated
    )
    assert (
        "        torch.cuda.is_available() and torch.version.hip is None and torch.cuda.get_device_capabil"
        in migrated
    )
    kept = [
        (row[1], row[3], row[5], row[4].split(":")[1].split("(")[0].strip())
        for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
        if row[1] in ("5", "16") and row[3] in ("'cuda'", "torch.cuda.is_available")
    ]
    rocm = "the test also excludes ROCm"
    assert kept == [
        ("5", "'cuda'", "supported_with_limits", rocm),
        ("5", "torch.cuda.is_available", "supported_with_limits", rocm),
        ("16", "torch.cuda.is_available", "supported_with_limits", rocm),
    ]
    require_torch()
    run = run_cli("run", "--", sys.executable, "graphs.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "eager\nfa3: False\n"), run.stderr


PROFILED_ACTIVITIES = """\
import torch

activities = [torch.profiler.ProfilerActivity.CPU]
if torch.cuda.is_available():
    activities.append(torch.profiler.ProfilerActivity.CUDA)
elif torch.xpu.is_available():
    activities.append(torch.profiler.ProfilerActivity.XPU)
print([activity.name for activity in activities])
"""


def test_cuda_only_code_on_the_side_the_npu_takes_anyway_keeps_no_test(tmp_path):
    """torchtitan's profiler: the test was kept because its ``elif`` branch names XPU's activity,
    which torch_npu lacks; kept, it sent the NPU into that branch, and the profile had no NPU
    activity. Only the side a test selects on CUDA can keep it."""
    write(tmp_path / "prof.py", PROFILED_ACTIVITIES)
    result = run_cli("migrate", "-i", tmp_path / "prof.py", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "prof_msft"
    assert (out / "prof.py").read_text() == (
        "import torch\n"
        "import torch_npu\n"
        "\n"
        "activities = [torch_npu.profiler.ProfilerActivity.CPU]\n"
        "if torch.npu.is_available():\n"
        "    activities.append(torch_npu.profiler.ProfilerActivity.NPU)\n"
        "elif torch.xpu.is_available():\n"
        "    activities.append(torch.profiler.ProfilerActivity.XPU)\n"
        "print([activity.name for activity in activities])\n"
    )
    require_torch()
    run = run_cli("run", "--", sys.executable, "prof.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "['CPU', 'NPU']\n"), run.stderr


PEER_FLAGS = """\
import torch


def is_torch_npu_available():
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return False
    return torch.npu.is_available()


is_cuda_available = torch.cuda.is_available()
is_npu_available = is_torch_npu_available()


def get_resource_name():
    return "GPU" if is_cuda_available else "NPU"


def get_capability():
    major, minor = None, None
    if is_cuda_available:
        major, minor = torch.cuda.get_device_capability()
    return major, minor


def get_device_name() -> str:
    if is_cuda_available:
        device = "cuda"
    elif is_npu_available:
        device = "npu"
    else:
        device = "cpu"
    return device


print(get_resource_name(), get_device_name(), get_capability(), torch.zeros(1).to(get_device_name()).sum())
"""


def test_a_cuda_flag_beside_the_projects_own_npu_flag_stays_a_cuda_flag(tmp_path):
    """verl's ``utils/device.py``: ``is_cuda_available = torch.cuda.is_available()`` beside its own
    ``is_npu_available``. Flipped to ``torch.npu.is_available()``, the flag said CUDA on the NPU, so
    Ray was asked for "GPU" and the kept torch.cuda calls behind the flag ran. Kept, with the device
    string its branch gives (and no int-device wrapper on a function annotated ``-> str``), the file
    stays as it is and picks the NPU under the stand-in."""
    write(tmp_path / "proj" / "device.py", PEER_FLAGS)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "device.py").read_text() == PEER_FLAGS
    found = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [(row[1], row[3], row[5], row[-1]) for row in found] == [
        ("12", "torch.cuda.is_available", "supported_with_limits", "rules:G2N090"),
        ("23", "torch.cuda.get_device_capability", "supported_with_limits", "rules:G2N296"),
        ("29", "'cuda'", "supported_with_limits", "rules:G2N090"),
    ]  # the capability is read only where the kept flag says CUDA: the NPU never reads it
    require_torch()
    run = run_cli("run", "--", sys.executable, "device.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "NPU npu (None, None) tensor(0.)\n"), run.stderr


NPU_FIRST_DISPATCH = """\
import torch
from transformers.utils import is_torch_cuda_available, is_torch_npu_available


def physical_count():
    if is_torch_npu_available():
        return torch.npu.device_count()
    elif is_torch_cuda_available():
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount()
    return 0


def empty_cache():
    if is_torch_npu_available():
        torch.npu.empty_cache()
    elif is_torch_cuda_available():
        torch.cuda.empty_cache()
"""


def test_transformers_cuda_test_keeps_its_side_and_a_cuda_only_import_there_is_a_limit(tmp_path):
    """ms-swift's ``torch_utils.py``: ``elif is_torch_cuda_available():`` (transformers', which is
    ``torch.cuda.is_available()``) then ``import pynvml``: the NPU never gets there, yet pynvml's row
    was an error and check failed. (A side with no CUDA-only code is renamed, as everywhere: it runs
    nowhere on the NPU, so the rename is harmless.)"""
    write(tmp_path / "proj" / "utils.py", NPU_FIRST_DISPATCH)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "utils.py").read_text() == NPU_FIRST_DISPATCH.replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    ).replace("torch.cuda.empty_cache()", "torch.npu.empty_cache()")
    found = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [(row[1], row[3], row[5], row[-1]) for row in found] == [
        ("8", "transformers.utils.is_torch_cuda_available", "supported_with_limits", "rules:G2N090"),
        ("9", "pynvml", "supported_with_limits", "rules:G2N062"),
    ]
    assert found[1][4].startswith("kept on CUDA: it runs only where the CUDA test before it is true")
    assert run_cli("check", tmp_path / "proj", "--no-cache").returncode == 0


GETTER = """\
import torch


def get_device():
    if hasattr(torch, "npu") and torch.npu.is_available():
        return "npu"
    return "cuda" if torch.cuda.is_available() else "cpu"
"""
GETTER_USER = """\
import torch
from pkg.utils import get_device
from pkg.ray import accelerator

DEVICE = get_device()


def attention():
    if get_device() == "cuda":
        return "flash_attn"
    return "sdpa"


def fp8():
    return DEVICE == "cuda" and torch.cuda.get_device_capability() >= (8, 9)


x = torch.ones(2, device=DEVICE)
print(DEVICE, attention(), accelerator(), fp8(), x.sum().item())
"""
GETTER_RELATIVE = """\
def accelerator():
    from .utils.device import get_device

    return "GPU" if str(get_device()) == "cuda" else "NPU"
"""


def test_a_cuda_compared_with_the_projects_own_npu_getter_stays_cuda(tmp_path):
    """InternVideo's xtuner v1: ``get_device()`` returns "npu" on the NPU itself (it tests for it),
    and other modules test ``get_device() == "cuda"`` (through the package's re-export, a relative
    import, a module-level ``DEVICE``). Renamed to "npu", those tests took the CUDA branch on the
    NPU: flex attention instead of the NPU's, Ray asked for "GPU". Kept, they are limits, and the
    program takes its NPU branches under the stand-in."""
    proj = tmp_path / "proj"
    write(proj / "pkg" / "__init__.py", "")
    write(proj / "pkg" / "utils" / "__init__.py", "from .device import get_device\n")
    write(proj / "pkg" / "utils" / "device.py", GETTER)
    write(proj / "pkg" / "ray.py", GETTER_RELATIVE)
    write(proj / "train.py", GETTER_USER)
    result = run_cli("migrate", "-i", proj, "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    migrated = GETTER_USER.replace("import torch\n", "import torch\nimport torch_npu\n", 1).replace(
        "device=DEVICE)", "device=f'npu:{DEVICE}' if isinstance(DEVICE, int) else DEVICE)"
    )  # a project function's result may be a card's number: the wrapper is harmless
    assert (out / "train.py").read_text() == migrated
    assert (out / "pkg" / "ray.py").read_text() == GETTER_RELATIVE
    found = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    kept = [row for row in found if row[3] == "'cuda'"]
    assert [(row[0], row[1], row[5], row[-1]) for row in kept] == [
        ("pkg/ray.py", "4", "supported_with_limits", "rules:G2N162"),
        ("train.py", "9", "supported_with_limits", "rules:G2N162"),
        ("train.py", "15", "supported_with_limits", "rules:G2N162"),
    ]
    assert all(row[4].startswith("kept: it is compared with a project function that names") for row in kept)
    require_torch()
    run = run_cli("run", "--", sys.executable, "train.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "npu sdpa NPU False 2.0\n"), run.stderr
