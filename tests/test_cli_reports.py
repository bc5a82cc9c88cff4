"""The API reports of `gpu2npu migrate`: exact rows, versions, C++ extensions, determinism."""

import json
import shutil

import pytest
from helpers import REPO, rows, run_cli, tree_files, write

PROJECT = REPO / "tests" / "projects" / "apis"
FP64_TIP = (
    "float64 is not generally supported on NPU (some operators compute in float32 or fall back to the CPU, "
    "and HCCL's all_reduce, reduce and reduce_scatter refuse it): use float32 where the precision allows"
)


def migrate(tmp_path, version="2.8.0", source=PROJECT, jobs="1"):
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", version, "-j", jobs)
    assert result.returncode == 0, result.stderr
    return result, tmp_path / "out" / f"{source.name}_msft" / "transplant_result_file"


def test_unsupported_rows_through_aliases_extensions_and_libraries(tmp_path):
    _, reports = migrate(tmp_path)
    assert rows(reports / "unsupported_api.csv") == [
        ["File", "Start Line", "End Line", "OP", "Tips", "Status", "Confidence", "Source"],
        [
            "setup.py",
            "6",
            "6",
            "torch.utils.cpp_extension.CUDAExtension",
            "CUDA kernels do not build for NPU: port them (Ascend C custom operator) and build with "
            "torch_npu.utils.cpp_extension.NpuExtension",
            "unsupported",
            "listed",
            "rules:G2N072",
        ],
        [
            "train.py",
            "3",
            "3",
            "flash_attn",
            "flash-attn is CUDA-only: use torch_npu.npu_fusion_attention "
            "(or torch.nn.functional.scaled_dot_product_attention)",
            "unsupported",
            "listed",
            "rules:G2N056",
        ],
        [
            "train.py",
            "9",
            "9",
            "my_ext.fused_add",
            "user-defined CUDA operator: port it to the NPU "
            "(Ascend C custom operator or torch/torch_npu operators)",
            "unsupported",
            "listed",
            "cuda_op_list:csrc/ops.cpp",
        ],
        [
            "train.py",
            "9",
            "9",
            "torch.Tensor.double",
            FP64_TIP,
            "supported_with_limits",
            "listed",
            "rules:M054",
        ],
        [
            "train.py",
            "13",
            "13",
            "torch.nn.DataParallel",
            (
                "kept: torch.nn.DataParallel is not supported on the NPU, and this file reads the wrapper's "
                ".module, which the model alone lacks; remove the wrapper and read the model itself, or "
                "migrate with the distributed mode (DistributedDataParallel, one process per NPU)"
            ),
            "unsupported",
            "listed",
            "rules:G2N730",
        ],
        [
            "train.py",
            "14",
            "14",
            "torch.cuda.get_arch_list",
            (
                "no NPU counterpart for torch 2.8.0, so it stays on CUDA: "
                "remove it, or run it only when torch.cuda.is_available()"
            ),
            "unsupported",
            "listed",
            "rules:G2N294",
        ],
        [
            "train.py",
            "15",
            "15",
            "torch.export.export",
            "not supported on NPU for torch 2.8.0: replace it, or run this part on the CPU",
            "unsupported",
            "listed",
            "docs@2.8.0",
        ],
        ["train.py", "18", "18", "torch.float64", FP64_TIP, "supported_with_limits", "listed", "rules:M054"],
        [
            "train.py",
            "21",
            "21",
            "torch.jit.script",
            "TorchScript gains nothing on NPU "
            "(transfer_to_npu turns torch.jit.script into a no-op from torch 2.1): "
            "keep the eager module, or try torch.compile",
            "supported_with_limits",
            "listed",
            "rules:G2N070",
        ],
    ]
    assert rows(reports / "unknown_api.csv")[1:] == [
        [
            "train.py",
            "16",
            "16",
            "torch.quantile",
            "not validated on NPU for torch 2.8.0: test it before relying on it",
            "unknown",
            "none",
            "not listed",
        ],
    ]
    assert rows(reports / "cuda_op_list.csv") == [
        ["File", "Api"],
        ["csrc/ops.cpp", "fused_add"],
        ["setup.py", "my_ext (CUDAExtension)"],
    ]


def test_no_row_says_na(tmp_path):
    _, reports = migrate(tmp_path)
    for name in ("unsupported_api.csv", "unknown_api.csv"):
        for row in rows(reports / name)[1:]:
            assert row[4] and row[4] != "NA", row


@pytest.mark.parametrize("version,expected", [("2.1.0", []), ("2.6.0", ["docs@2.6.0"])])
def test_an_api_whose_status_differs_by_version(tmp_path, version, expected):
    _, reports = migrate(tmp_path, version)
    sources = [row[7] for row in rows(reports / "unsupported_api.csv") if row[3] == "torch.export.export"]
    assert sources == expected


def test_summary_counts_rows_and_report_json_has_verdicts(tmp_path):
    result, reports = migrate(tmp_path)
    assert "| unsupported_api.csv           |    9 |" in result.stdout
    assert "| cuda_op_list.csv              |    2 |" in result.stdout
    assert "| code files: needs manual work |    2 |" in result.stdout
    assert "  train.py: flash_attn (line 3)" in result.stdout
    report = json.loads((reports / "report.json").read_text())
    assert report["report_rows"] == {
        "unsupported_api.csv": 9,
        "unknown_api.csv": 1,
        "cuda_op_list.csv": 2,
        "api_precision_advice.csv": 0,
        "api_performance_advice.csv": 3,
        "manual_work.csv": 0,
        "dependency_plan.csv": 0,
    }
    verdicts = {f["file"]: (f["status"], f["first_blocking_api"]) for f in report["files"]}
    assert verdicts == {
        "setup.py": ("needs manual work", "torch.utils.cpp_extension.CUDAExtension (line 6)"),
        "train.py": ("needs manual work", "flash_attn (line 3)"),
    }
    assert [r["OP"] for r in report["unsupported_api"]][1:3] == ["flash_attn", "my_ext.fused_add"]


def test_reports_are_identical_for_one_and_two_workers(tmp_path):
    source = tmp_path / "big"
    shutil.copytree(PROJECT, source)
    for number in range(30):  # enough files for the worker pool to start
        shutil.copy(PROJECT / "train.py", source / f"train_{number:02d}.py")
    one = tmp_path / "one"
    two = tmp_path / "two"
    one.mkdir()
    two.mkdir()
    migrate(one, source=source, jobs="1")
    migrate(two, source=source, jobs="2")
    assert tree_files(one / "out") == tree_files(two / "out")
    assert (
        len(rows(one / "out" / "big_msft" / "transplant_result_file" / "unsupported_api.csv"))
        == 1 + 1 + 8 * 31
    )


def test_an_undecodable_cpp_file_is_reported_not_fatal(tmp_path):
    source = tmp_path / "proj"
    shutil.copytree(PROJECT, source)
    (source / "csrc" / "broken.cu").write_bytes(b"// \xff\xfe not text\nPYBIND11_MODULE(x, m) {}\n")
    _, reports = migrate(tmp_path, source=source)
    skipped = rows(reports / "skipped_files.csv")
    assert [row[0] for row in skipped[1:]] == ["csrc/broken.cu"]
    assert skipped[1][1].startswith("C++ source ") and skipped[1][1].endswith("; not analysed")
    assert (tmp_path / "out" / "proj_msft" / "csrc" / "broken.cu").read_bytes() == (
        source / "csrc" / "broken.cu"
    ).read_bytes()
    assert rows(reports / "cuda_op_list.csv")[1:] == [
        ["csrc/ops.cpp", "fused_add"],
        ["setup.py", "my_ext (CUDAExtension)"],
    ]


def migrate_file(tmp_path, name, text):
    """The reports of a project of one file."""
    source = tmp_path / "project"
    source.mkdir()
    (source / name).write_text(text)
    return migrate(tmp_path, source=source)[1]


def test_what_python_gives_every_module_is_no_api_to_report(tmp_path):
    reports = migrate_file(
        tmp_path,
        "versions.py",
        "import torch\n"
        "import torch.nn as nn\n"
        'if torch.__version__.startswith("2"):\n'
        "    layers = dict(nn.__dict__.items())\n"
        "print(torch.__file__, torch.quantile(torch.ones(2), 0.5))\n",
    )
    assert rows(reports / "unknown_api.csv")[1:] == [
        [
            "versions.py",
            "5",
            "5",
            "torch.quantile",
            "not validated on NPU for torch 2.8.0: test it before relying on it",
            "unknown",
            "none",
            "not listed",
        ],
    ]


def test_an_extension_named_at_run_time_is_listed_by_where_it_is_built(tmp_path):
    reports = migrate_file(
        tmp_path,
        "ops.py",
        "import torch.utils.cpp_extension\n"
        "def build(name):\n"
        '    torch.utils.cpp_extension.load(name=name, sources=["op.cu"])\n'
        'fused = torch.utils.cpp_extension.load(name="fused", sources=["fused.cu"])\n',
    )
    assert rows(reports / "cuda_op_list.csv") == [
        ["File", "Api"],
        ["ops.py", "extension built at line 3 (load)"],
        ["ops.py", "fused (load)"],
    ]


def test_a_library_rule_does_not_speak_of_the_project_itself(tmp_path):
    """Composer's and mamba-ssm's own modules import their package: no G2N069 or G2N163 row
    there (1,365 and 127 false errors on those repositories), while a project that only uses
    the library keeps the row at its import."""
    source = tmp_path / "mamba"
    write(source / "src" / "mamba_ssm" / "__init__.py", "")
    write(source / "src" / "mamba_ssm" / "config.py", "from dataclasses import dataclass\n")
    write(source / "src" / "mamba_ssm" / "model.py", "import torch\nfrom mamba_ssm.config import dataclass\n")
    write(source / "tests" / "test_model.py", "import mamba_ssm.model\n")
    write(source / "train.py", "import torch\nimport composer\nimport mamba_ssm\n")
    _, reports = migrate(tmp_path, source=source)
    found = [(row[0], row[1], row[3], row[7]) for row in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [("train.py", "2", "composer", "rules:G2N069")]


def test_cuda_kernel_dsls_and_flash_attention_3_are_unsupported_at_their_import(tmp_path):
    """mamba's CuTe and TileLang kernels and fairseq2's FlashAttention-3 had no row."""
    reports = migrate_file(
        tmp_path,
        "kernels.py",
        "import torch\n"
        "import cuda.bindings.driver as cuda\n"
        "import cutlass.cute as cute\n"
        "from quack.compile_utils import make_fake_tensor\n"
        "import tilelang\n"
        "import flash_attn_3_cuda\n"
        "from flash_attn_interface import flash_attn_func\n",
    )
    found = [(row[1], row[3], row[5], row[7]) for row in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [
        ("2", "cuda.bindings.driver", "unsupported", "rules:G2N389"),
        ("3", "cutlass.cute", "unsupported", "rules:G2N389"),
        ("4", "quack.compile_utils", "unsupported", "rules:G2N390"),
        ("5", "tilelang", "unsupported", "rules:G2N391"),
        ("6", "flash_attn_3_cuda", "unsupported", "rules:G2N167"),
        ("7", "flash_attn_interface", "unsupported", "rules:G2N056"),
    ]


def test_memory_snapshot_rendering_runs_on_the_host(tmp_path):
    """torch.cuda._memory_viz renders a snapshot dict in Python (composer's OOM observer): no
    "stays on CUDA" row, while a name of that module no rule speaks of keeps it."""
    reports = migrate_file(
        tmp_path,
        "oom.py",
        "import torch\n"
        "from torch.cuda import _memory_viz\n"
        "def plot(snapshot):\n"
        "    html = torch.cuda._memory_viz.trace_plot(snapshot)\n"
        "    segments = _memory_viz.segment_plot(snapshot)\n"
        "    return html, segments, torch.cuda._memory_viz._block_extra(snapshot)\n",
    )
    found = [(row[1], row[3], row[7]) for row in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [("6", "torch.cuda._memory_viz._block_extra", "rules:G2N200")]


def test_host_switches_are_no_blocking_error_and_tensorrt_llm_is(tmp_path):
    """OLMo's SDPA switches and torch.compiler.reset() failed `check` as unsupported (the Ascend
    lists' word): they run on the host, the switches with no effect on the NPU's kernels (a
    limit); verl's TensorRT-LLM rollout had no row."""
    reports = migrate_file(
        tmp_path,
        "model.py",
        "import torch\n"
        "torch.backends.cuda.enable_flash_sdp(True)\n"
        "torch.backends.cuda.enable_mem_efficient_sdp(False)\n"
        "torch.compiler.reset()\n"
        "from tensorrt_llm import AsyncLLM\n",
    )
    found = [(row[1], row[3], row[5], row[7]) for row in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [
        ("2", "torch.backends.cuda.enable_flash_sdp", "supported_with_limits", "rules:G2N600"),
        ("3", "torch.backends.cuda.enable_mem_efficient_sdp", "supported_with_limits", "rules:G2N600"),
        ("5", "tensorrt_llm", "unsupported", "rules:G2N086"),
    ]


def test_apex_built_cuda_extensions_are_unsupported_at_their_import(tmp_path):
    """Megatron-LM imports the kernels NVIDIA apex builds, inside functions and in a try: they
    had no row, and `check` passed them at 100 % readiness."""
    reports = migrate_file(
        tmp_path,
        "fused.py",
        "import torch\n"
        "try:\n"
        "    import fused_weight_gradient_mlp_cuda\n"
        "except ImportError:\n"
        "    fused_weight_gradient_mlp_cuda = None\n"
        "def softmax(x, mask, scale):\n"
        "    import scaled_masked_softmax_cuda\n"
        "    return scaled_masked_softmax_cuda.forward(x, mask, scale)\n",
    )
    found = [(row[1], row[3], row[5], row[7]) for row in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [
        ("3", "fused_weight_gradient_mlp_cuda", "supported_with_limits", "rules:G2N603"),
        ("7", "scaled_masked_softmax_cuda", "unsupported", "rules:G2N603"),
    ]
