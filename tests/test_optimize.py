"""migrate --optimize (issue 16, first part: the fused optimizers of rules/optimize/).

The snapshot pair of tests/fixtures_optimize/, the calls kept (and why), the CLI's choice of
rules (alone, =all, =ID) and its errors. That optimized programs train exactly like the originals
is tested by running them under the stand-in (tests/test_standin.py, mode "optimize")."""

import csv

import pytest
from helpers import REPO, builtin_index, run_cli

from gpu2npu.rewrite.engine import migrate_source

FIXTURES = REPO / "tests" / "fixtures_optimize"
CASES = sorted(p for p in FIXTURES.glob("*.py") if not p.name.endswith(".expected.py"))
PROGRAM = """import torch
from torch import optim

model = torch.nn.Linear(4, 2).cuda()
sgd = torch.optim.SGD(model.parameters(), lr=0.1)
adamw = optim.AdamW(model.parameters(), foreach=True)
adam = optim.Adam(model.parameters())
"""


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_optimized_fixture(case):
    index = builtin_index(optimize=True)
    result = migrate_source(case.read_bytes(), index)
    expected = case.with_name(case.name[:-3] + ".expected.py").read_bytes()
    assert result.new_bytes == expected
    assert migrate_source(expected, index).new_bytes is None  # a second run changes nothing


def test_calls_the_fused_optimizer_cannot_take_are_kept_and_reported():
    result = migrate_source((FIXTURES / "fused_optimizers.py").read_bytes(), builtin_index(optimize=True))
    kept = [(k.line, k.name, k.rule_id, k.works) for k in result.kept]
    assert kept == [
        (17, "torch.optim.Adam", "G2N2002", True),  # foreach=True
        (18, "torch.optim.SGD", "G2N2001", True),  # no lr
        (19, "torch.optim.AdamW", "G2N2003", True),  # **settings
        (20, "torch.optim.Adadelta", "G2N2004", True),  # a sixth positional argument
    ]


def test_without_optimize_no_optimization_rule_is_loaded():
    result = migrate_source((FIXTURES / "fused_optimizers.py").read_bytes(), builtin_index())
    assert b"torch_npu.optim" not in result.new_bytes
    assert not [c for c in result.changes if c.rule.startswith("G2N20")]


def migrated(tmp_path, *options):
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "train.py").write_text(PROGRAM)
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.1.0", "--no-cache", *options)
    return result, out / "proj_msft"


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))[1:]


def test_the_cli_applies_the_safe_optimizations_and_reports_each(tmp_path):
    result, tree = migrated(tmp_path, "--optimize")
    assert result.returncode == 0, result.stderr
    text = (tree / "train.py").read_text()
    assert "sgd = torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.1)\n" in text
    assert "adamw = optim.AdamW(model.parameters(), foreach=True)\n" in text
    assert "adam = torch_npu.optim.NpuFusedAdam(model.parameters())\n" in text
    reports = tree / "transplant_result_file"
    optimized = [row[:6] for row in rows(reports / "change_list.csv") if row[5].startswith("G2N20")]
    assert optimized == [
        [
            "train.py",
            "5",
            "5",
            "MODIFY",
            "optimize (fused optimizer): torch.optim.SGD to torch_npu.optim.NpuFusedSGD",
            "G2N2001",
        ],
        [
            "train.py",
            "7",
            "7",
            "MODIFY",
            "optimize (fused optimizer): torch.optim.Adam to torch_npu.optim.NpuFusedAdam",
            "G2N2002",
        ],
    ]
    kept = [row for row in rows(reports / "unsupported_api.csv") if row[7] == "rules:G2N2003"]
    assert [row[:3] + row[5:6] for row in kept] == [["train.py", "6", "6", "supported_with_limits"]]
    assert kept[0][4].startswith(
        "kept torch.optim.AdamW: the call passes arguments NpuFusedAdamW does not take"
    )


def test_optimize_by_id_applies_only_those_rules(tmp_path):
    result, tree = migrated(tmp_path, "--optimize=G2N2002")
    assert result.returncode == 0, result.stderr
    text = (tree / "train.py").read_text()
    assert "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n" in text
    assert "adam = torch_npu.optim.NpuFusedAdam(model.parameters())\n" in text


def test_without_optimize_the_tree_is_the_plain_migration(tmp_path):
    plain, plain_tree = migrated(tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "NpuFused" not in (plain_tree / "train.py").read_text()
    assert "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n" in (plain_tree / "train.py").read_text()


@pytest.mark.parametrize(
    "options,message",
    [
        (["--optimize=G2N9999"], "gpu2npu: error: --optimize names unknown optimization(s) G2N9999; "),
        (
            ["--optimize", "--target", "portable"],
            "gpu2npu: error: --optimize is for --target npu, not portable",
        ),
    ],
)
def test_a_wrong_optimize_choice_is_one_clear_error(tmp_path, options, message):
    result, tree = migrated(tmp_path, *options)
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert not tree.exists()
