"""Correct before complete, part 2, through the installed CLI, on a project made of
``tests/projects/correct_part2`` and two fixtures (``loader.py``, ``capability.py``):

* a device string compared with data (a checkpoint's ``ckpt['device_type'] == 'cuda'``, a parsed
  graph's ``str(node['value']).startswith('cuda')``, the environment) keeps its text and is
  reported; the program's own comparisons (``args.device == 'cuda'``) still change;
* a compute-capability read (``torch.cuda.get_device_properties(i).major``) stays on CUDA, with the
  CUDA test before it; ``total_memory`` still moves to the NPU;
* APIs the target torch removed: ``torch._six`` names move to their documented replacements, the
  rest (``torch._six.PY3``, ``torch.solve``) are reported with the release that removed them, and
  nothing of it happens for ``-v 1.11.0``, where they still exist;
* every kept line makes its file "needs manual work", a row with limits "needs testing", and
  ``check`` shows each one as a finding (an error for what breaks, a warning for a kept string).
"""

import json
import shutil

import pytest
from helpers import FIXTURES, REPO, rows, run_cli

FIXTURE_FILES = {
    "loader.py": FIXTURES / "compared_strings" / "data_comparisons.py",
    "capability.py": FIXTURES / "kept_on_cuda" / "device_properties_major.py",
}
GUARD_TIP = (
    "kept on CUDA: the branch it selects runs only on CUDA (a CUDA-only library, the project's CUDA "
    "kernels, or a torch.cuda API without an NPU counterpart), so on NPU the other branch runs; port "
    "that code to NPU, then test for the NPU here"
)
SKIPPED_TIP = (
    "kept on CUDA: it runs only where the CUDA test before it is true, which it is not on NPU, so the NPU "
    "skips it as any machine without CUDA does; port it where the NPU needs what it does"
)
READ_TIP = (
    "kept on CUDA: it reads the compute capability (major/minor), which the NPU's device properties "
    "do not give (absent or None), so the test would fail there; guard it with "
    "torch.cuda.is_available() (False on NPU), or test an NPU feature instead (torch.npu.is_bf16_supported())"
)
SIX_TIP = (
    "removed in torch 2.0.0: torch's Python 2/3 compatibility module: use the builtins and torch names "
    "(str, int, collections.abc, torch.inf)"
)
SOLVE_TIP = (
    "removed in torch 2.0.0: use torch.linalg.solve(A, B): the arguments are swapped and it returns the "
    "solution only"
)
FLOAT64_TIP = (
    "float64 is not generally supported on NPU (some operators compute in float32 or fall back to the "
    "CPU, and HCCL's all_reduce, reduce and reduce_scatter refuse it): use float32 where the precision allows"
)
STRING_TIP = (
    "kept: compared with data from outside the program (a loaded checkpoint or config, a parsed graph, "
    "the environment, an exception's message), which still says 'cuda' after the migration; if data "
    "written on the NPU must "
    "match too, compare with both ('cuda', 'npu')"
)
LOAD_TIP = (
    "at this target torch (2.6 or later) torch.load reads only tensors and plain containers unless told "
    "otherwise (weights_only=True by default since torch 2.6): a checkpoint that holds more (a whole model, "
    "an argparse.Namespace of the run's options, numpy values) fails with UnpicklingError 'Weights only load "
    "failed'; pass weights_only=False for checkpoints you trust, or allow their classes with "
    "torch.serialization.add_safe_globals"
)
PROPERTIES = "torch.cuda.get_device_properties"
UNSUPPORTED_ROWS = [
    ["File", "Start Line", "End Line", "OP", "Tips", "Status", "Confidence", "Source"],
    ["capability.py", "5", "5", "torch.cuda.is_available", GUARD_TIP, "supported_with_limits", "listed",
     "rules:G2N090"],
    ["capability.py", "7", "7", PROPERTIES, SKIPPED_TIP, "supported_with_limits", "listed", "rules:G2N091"],
    ["capability.py", "12", "12", PROPERTIES, READ_TIP, "unsupported", "listed", "rules:G2N091"],
    ["legacy.py", "3", "3", "torch._six.PY3", SIX_TIP, "unsupported", "listed", "rules:G2N400"],
    ["legacy.py", "9", "9", "torch.solve", SOLVE_TIP, "unsupported", "listed", "rules:G2N406"],
    ["limited.py", "5", "5", "torch.float64", FLOAT64_TIP, "supported_with_limits", "listed", "rules:M054"],
    ["loader.py", "10", "10", "'cuda'", STRING_TIP, "supported_with_limits", "listed", "rules:G2N092"],
    ["loader.py", "15", "15", "torch.load", LOAD_TIP, "supported_with_limits", "listed", "rules:G2N183"],
    ["loader.py", "16", "16", "'cuda'", STRING_TIP, "supported_with_limits", "listed", "rules:G2N092"],
    ["loader.py", "19", "19", "'cuda'", STRING_TIP, "supported_with_limits", "listed", "rules:G2N092"],
    ["loader.py", "25", "25", "'cuda:'", STRING_TIP, "supported_with_limits", "listed", "rules:G2N092"],
]  # fmt: skip
LEGACY_AFTER = """\
import torch
import torch_npu
from torch import inf
from builtins import str as string_classes
from torch._six import PY3


def norm(grads, norm_type):
    if norm_type == inf and PY3:
        return max(g.abs().max() for g in grads)
    return torch.solve(grads[0], grads[1])


def is_name(x):
    return isinstance(x, string_classes)
"""


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "correct_part2"
    shutil.copytree(REPO / "tests" / "projects" / "correct_part2", root)
    for name, fixture in FIXTURE_FILES.items():
        shutil.copyfile(fixture, root / name)
    return root


def migrate(project, tmp_path, version="2.8.0"):
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", version, "-j", "1")
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "correct_part2_msft"


def test_kept_lines_are_reported_with_what_to_do(project, tmp_path):
    tree = migrate(project, tmp_path)
    assert rows(tree / "transplant_result_file" / "unsupported_api.csv") == UNSUPPORTED_ROWS
    assert (tree / "legacy.py").read_text() == LEGACY_AFTER
    loader = (tree / "loader.py").read_text()
    assert 'saved_on_gpu = ckpt["device_type"] == "cuda"' in loader
    assert 'return torch.device("npu" if saved_on_gpu else "cpu")' in loader
    capability = (tree / "capability.py").read_text()
    assert "props = torch.cuda.get_device_properties(torch.cuda.current_device())" in capability
    assert "return torch.npu.get_device_properties(i).total_memory / 2**30" in capability


def test_verdicts_follow_every_kept_line_and_every_limit(project, tmp_path):
    report = json.loads((migrate(project, tmp_path) / "transplant_result_file" / "report.json").read_text())
    verdicts = {f["file"]: (f["status"], f["first_blocking_api"]) for f in report["files"]}
    assert verdicts == {
        "capability.py": ("needs manual work", "torch.cuda.is_available (line 5)"),
        "legacy.py": ("needs manual work", "torch._six.PY3 (line 3)"),
        "limited.py": ("needs testing", ""),
        "loader.py": ("needs manual work", "'cuda' (line 10)"),
        "train.py": ("fully migrated", ""),
    }


def test_check_shows_each_kept_line_with_its_severity(project):
    result = run_cli("check", project, "-v", "2.8.0", "--format", "json")
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    kept = sorted(
        (f["file"].rsplit("/", 1)[-1], f["line"], f["rule"], f["severity"], f["fails"])
        for f in findings
        if f["rule"] in {"G2N090", "G2N091", "G2N092", "G2N400", "G2N406"}
    )
    assert kept == [
        ("capability.py", 5, "G2N090", "warning", False),
        ("capability.py", 7, "G2N091", "warning", False),
        ("capability.py", 12, "G2N091", "error", True),
        ("legacy.py", 3, "G2N400", "error", True),
        ("legacy.py", 9, "G2N406", "error", True),
        ("loader.py", 10, "G2N092", "warning", False),
        ("loader.py", 16, "G2N092", "warning", False),
        ("loader.py", 19, "G2N092", "warning", False),
        ("loader.py", 25, "G2N092", "warning", False),
    ]


def test_analyse_torch_apis_reports_the_removed_apis_too(project, tmp_path):
    result = run_cli("analyse", "-i", project, "-o", tmp_path / "an", "-v", "2.8.0", "-m", "torch_apis")
    assert result.returncode == 0, result.stderr
    analysed = rows(tmp_path / "an" / "correct_part2_analysis" / "unsupported_api.csv")
    assert analysed == UNSUPPORTED_ROWS


def test_removed_apis_are_left_alone_for_a_torch_that_has_them(project, tmp_path):
    tree = migrate(project, tmp_path, "1.11.0")
    assert (tree / "legacy.py").read_bytes() == (project / "legacy.py").read_bytes()
    reported = rows(tree / "transplant_result_file" / "unsupported_api.csv")
    assert not [row for row in reported if row[0] == "legacy.py"]


MULTIGPU = (
    "import torch.distributed as dist\n\n\ndef reduce(tensors):\n    dist.all_reduce_multigpu(tensors)\n"
)


@pytest.mark.parametrize(
    "version,source", [("2.8.0", "rules:G2N412"), ("2.2.0", "rules:G2N412"), ("2.1.0", "msprobe@2.1.0")]
)
def test_the_multi_gpu_collectives_are_removed_from_torch_2_2(tmp_path, version, source):
    """fairseq's pgslm metrics call ``all_reduce_multigpu``, which torch 2.2 removed
    (pytorch#114156): from 2.2 on the row says so and what to call instead, not "not validated"."""
    (tmp_path / "m.py").write_text(MULTIGPU)
    result = run_cli("check", "m.py", "-v", version, "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    [finding] = json.loads(result.stdout)["findings"]
    assert (finding["line"], finding["api"], finding["category"]) == (
        5,
        "torch.distributed.all_reduce_multigpu",
        "unsupported",
    )
    assert source in finding["message"]
