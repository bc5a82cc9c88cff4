"""The dependency plan and the dependency file kinds (requirements, conda-env, packaging):
which files they claim, the torch pin and torch_npu release for every target version, what
stays as written, the plan rows, setup.py, hostile input, and the facts in kb/ agreeing with
the generated rules."""

import csv
import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest
import yaml
from helpers import builtin_index, index_with, migrate_file, run_cli
from helpers import rows as csv_rows

from gpu2npu.filekinds import classify
from gpu2npu.filekinds._dependencies import only_older
from gpu2npu.filekinds.packaging import poetry_specifier, setup_py_dependencies
from gpu2npu.rules.loader import load_builtin_rules
from gpu2npu.versions import known_versions

REPO = Path(__file__).resolve().parent.parent
KB = REPO / "kb"

FLASH_ROUTE = (
    "torch_npu.npu_fusion_attention (torch_npu for torch 2.1.0 and later; its argument layout differs), "
    "torch.nn.functional.scaled_dot_product_attention, or transformers' NPU flash attention"
)
FLASH_ACTION = (
    "take flash-attn out of the NPU environment (it has no NPU build) and replace its calls with "
    "torch_npu.npu_fusion_attention or scaled_dot_product_attention"
)
XFORMERS_ROUTE = (
    "torch.nn.functional.scaled_dot_product_attention or torch_npu.npu_fusion_attention "
    "(xformers has no NPU build)"
)
XFORMERS_ACTION = (
    "take xformers out of the NPU environment and replace xformers.ops.memory_efficient_attention with "
    "scaled_dot_product_attention or torch_npu.npu_fusion_attention"
)
APEX_ROUTE = (
    "Ascend apex (github.com/Ascend/apex): apex.amp and apex.optimizers.NpuFused*, built from source into an "
    "apex-0.1+ascend wheel; or torch_npu.optim.NpuFused* without apex"
)
APEX_ACTION = (
    "build Ascend's apex from source after torch and torch_npu (bash scripts/build.sh) and install its wheel "
    "instead of NVIDIA apex; its CUDA extensions (FusedLayerNorm, fused kernels) are not there: use "
    "torch.nn.LayerNorm and torch_npu ops"
)
TRITON_ROUTE = (
    "triton-ascend (pip install triton-ascend): Triton kernels on Atlas A2/A3, with chip-target limits"
)
TRITON_ACTION = (
    "install triton-ascend after torch_npu in place of triton (for triton-ascend 3.2.0 and earlier uninstall "
    "triton first); if triton is reinstalled later, uninstall triton and triton-ascend and install "
    "triton-ascend again; check the kernels against its limits"
)
TRITON_CONFLICTS = (
    "triton: triton-ascend installs into the same triton package folder, and installing triton again "
    "(directly or as another package's dependency) overwrites it"
)
DEEPSPEED_ROUTE = (
    "DeepSpeed 0.10.0 or later, which supports the NPU through torch_npu (its npu accelerator; the "
    "deepspeed_npu plugin is retired)"
)
DEEPSPEED_ACTION = (
    "require deepspeed>=0.10.0 and install it after torch and torch_npu: an older release knows no NPU "
    "accelerator, so its engine runs on CUDA only; remove deepspeed_npu and its import if the project "
    "has them"
)
NPU_ROUTE = "torch_npu==2.1.0.post17 (for torch 2.1.0, CANN 8.3.RC1)"
NPU_ACTION = "install after torch, with CANN 8.3.RC1 installed and its set_env.sh sourced"
DEEPSPEED_CONFLICTS = "deepspeed_npu (the retired plugin for DeepSpeed 0.9.2): uninstall it"
APEX_CONFLICTS = "NVIDIA apex installs the same apex package: uninstall it first"
APEX_URL = "apex @ git+https://github.com/NVIDIA/apex"
CPU_BUILD = "(x86_64: 2.1.0+cpu from https://download.pytorch.org/whl/cpu; aarch64: from PyPI or that index)"
ACCELERATOR_BUILDS = "CUDA or ROCm builds of torch (torch_npu does not load beside another accelerator build)"


def rows(outcome_or_rows):
    found = getattr(outcome_or_rows, "dependencies", outcome_or_rows)
    return [dataclasses.astuple(row) for row in found]


def reported(outcome_or_rows):
    found = getattr(outcome_or_rows, "reported", outcome_or_rows)
    return [(r.line, r.end_line, r.subject, r.tip, r.rule, r.category) for r in found]


# -- the plan -------------------------------------------------------------------------------------------


def test_the_plan_lists_flash_attn_xformers_apex_triton_and_deepspeed_with_an_action_each():
    data = b"flash-attn==2.5.8\nxformers\napex @ git+https://github.com/NVIDIA/apex\ntriton>=2.1\ndeepspeed\n"
    outcome = migrate_file("requirements.txt", data, "2.1.0")
    assert outcome.new_bytes is None  # CUDA-only requirements stay: the code importing them still needs them
    flash = (
        "flash-attn==2.5.8",
        1,
        "no NPU equivalent",
        FLASH_ROUTE,
        FLASH_ACTION,
        "",
        "DROP; OPP",
        "G2N870",
    )
    xformers = ("xformers", 2, "no NPU equivalent", XFORMERS_ROUTE, XFORMERS_ACTION, "", "DROP", "G2N871")
    torch = (
        "torch==2.1.0",
        0,
        "to install",
        f"torch==2.1.0 {CPU_BUILD}",
        "install torch==2.1.0 first, before torch_npu",
    )
    apex = (APEX_URL, 3, "drop-in", APEX_ROUTE, APEX_ACTION, APEX_CONFLICTS, "APEX; PTG; DROP", "G2N872")
    triton = (
        "triton>=2.1",
        4,
        "drop-in",
        TRITON_ROUTE,
        TRITON_ACTION,
        TRITON_CONFLICTS,
        "TRA; DROP",
        "G2N873",
    )
    deepspeed = (
        "deepspeed",
        5,
        "works",
        DEEPSPEED_ROUTE,
        DEEPSPEED_ACTION,
        DEEPSPEED_CONFLICTS,
        "DSN; DSACC; DROP",
    )
    assert rows(outcome) == [
        (0, "flash-attn", *flash),
        (0, "xformers", *xformers),
        (1, "torch", *torch, ACCELERATOR_BUILDS, "TNPU; REL", "G2N861"),
        (
            2,
            "torch_npu",
            "torch_npu==2.1.0.post17",
            0,
            "to install",
            NPU_ROUTE,
            NPU_ACTION,
            "",
            "REL",
            "G2N861",
        ),
        (4, "apex", *apex),
        (4, "triton", *triton),
        (4, "deepspeed", *deepspeed, "G2N874"),
    ]
    assert reported(outcome) == [
        (1, 1, "flash-attn", FLASH_ACTION, "G2N870", "unsupported"),
        (2, 2, "xformers", XFORMERS_ACTION, "G2N871", "unsupported"),
        (3, 3, "apex", f"{APEX_ACTION} (conflicts: {APEX_CONFLICTS})", "G2N872", "limited"),
        (4, 4, "triton", f"{TRITON_ACTION} (conflicts: {TRITON_CONFLICTS})", "G2N873", "limited"),
    ]  # deepspeed works as is: planned, not reported


def test_a_file_with_torch_plans_what_it_writes():
    outcome = migrate_file("requirements.txt", b"torch>=1.13\ntorchvision\n", "2.1.0")
    assert outcome.new_bytes == b"torch==2.1.0\ntorch_npu==2.1.0.post17\ntorchvision\n"
    assert [row[:5] for row in rows(outcome)] == [
        (1, "torch", "torch==2.1.0", 1, "pinned"),
        (2, "torch_npu", "torch_npu==2.1.0.post17", 1, "added"),
        (3, "torchvision", "torchvision", 2, "works"),
    ]
    assert rows(outcome)[2][5:7] == (
        "torchvision==0.16.0 (pairs with torch 2.1.0)",
        "install after torch, from the same index (the CPU build)",
    )


def test_a_file_without_requirements_plans_nothing():
    assert rows(migrate_file("requirements.txt", b"# nothing yet\n\n", "2.1.0")) == []
    outcome = migrate_file("pyproject.toml", b"[tool.ruff]\nline-length = 110\n", "2.1.0")
    assert (outcome.new_bytes, rows(outcome), reported(outcome), outcome.skipped) == (None, [], [], "")


# -- the torch pin ---------------------------------------------------------------------------------------


def cann_key(cann):
    return [(0, int(part[2:])) if part.startswith("RC") else (1, int(part)) for part in cann.split(".")]


def newest_in_the_csv(torch):
    with open(KB / "torch_npu_release_matrix.csv", newline="", encoding="utf-8") as handle:
        releases = [row for row in csv.DictReader(handle) if row["torch"] == torch]
    return max(releases, key=lambda row: cann_key(row["cann"]))["torch_npu_package"]


@pytest.mark.parametrize("version", known_versions())
def test_the_torch_pin_of_every_version_is_the_newest_release_for_it(version):
    outcome = migrate_file("requirements.txt", b"torch\n", version)
    assert outcome.new_bytes == f"torch=={version}\ntorch_npu=={newest_in_the_csv(version)}\n".encode()


def test_the_newest_releases_by_cann_version():
    expected = {
        "1.11.0": "1.11.0.post14",
        "2.1.0": "2.1.0.post17",
        "2.2.0": "2.2.0.post2",
        "2.3.1": "2.3.1.post6",
        "2.4.0": "2.4.0.post4",
        "2.5.1": "2.5.1.post1",
        "2.6.0": "2.6.0.post5",
        "2.7.1": "2.7.1.post8",
        "2.8.0": "2.8.0.post4",
    }
    assert {version: newest_in_the_csv(version) for version in known_versions()} == expected


@pytest.mark.parametrize(
    "before,after",
    [
        ("torch>=1.13\n", "torch==2.1.0\ntorch_npu==2.1.0.post17\n"),
        ("torch[opt-einsum] ~= 2.0\n", "torch[opt-einsum] ==2.1.0\ntorch_npu==2.1.0.post17\n"),
        ("torch (>=2.0)\n", "torch ==2.1.0\ntorch_npu==2.1.0.post17\n"),
        ("torch==2.1.0+cu118\n", "torch==2.1.0\ntorch_npu==2.1.0.post17\n"),
        ("torch==2.1.0+cpu\n", "torch==2.1.0+cpu\ntorch_npu==2.1.0.post17\n"),
        ("Torch==2.1.*\n", "Torch==2.1.0\ntorch_npu==2.1.0.post17\n"),
        ("torch\ntorch_npu\n", "torch==2.1.0\ntorch_npu\n"),
        ("torch==2.1.0\ntorch-npu==2.1.0.post4\n", None),  # an older release for the same torch fits
    ],
)
def test_pins(before, after):
    new = migrate_file("requirements.txt", before.encode(), "2.1.0").new_bytes
    assert (new.decode() if new is not None else None) == after


def test_a_cuda_label_after_a_range_which_pip_refuses_is_pinned_and_reported():
    """SRGAN's ``torch>=2.0.1+cu118``: pip 24.1 refuses a local label after >=, so the file read
    as having no torch (not pinned, no torch_npu, only a mention); it is pinned as ==2.0.1+cu118 is."""
    before = b"numpy\ntorch>=2.0.1+cu118\ntorchvision>=0.15.2+cu118\n"
    outcome = migrate_file("requirements.txt", before, "2.1.0")
    assert outcome.new_bytes == b"numpy\ntorch==2.1.0\ntorch_npu==2.1.0.post17\ntorchvision>=0.15.2+cu118\n"
    assert [(c.start_line, c.message) for c in outcome.changes] == [
        (
            2,
            "pin torch>=2.0.1+cu118 to torch==2.1.0 (torch_npu 2.1.0.post17 is built for it); "
            "+cu118 was a CUDA build",
        ),
        (3, "add torch_npu==2.1.0.post17 after torch (the torch_npu release for torch 2.1.0, CANN 8.3.RC1)"),
    ]
    assert [(r.line, r.subject, r.rule, r.category) for r in outcome.reported] == [
        (3, "torchvision>=0.15.2+cu118", "G2N896", "limited")
    ]


def test_markers_comments_and_crlf_stay():
    before = b'torch>=2 ; python_version < "3.12"  # the framework\r\nnumpy\r\n'
    outcome = migrate_file("requirements.txt", before, "2.1.0")
    assert outcome.new_bytes == (
        b'torch==2.1.0 ; python_version < "3.12"  # the framework\r\n'
        b'torch_npu==2.1.0.post17 ; python_version < "3.12"\r\nnumpy\r\n'
    )


def test_torch_on_the_last_line_without_a_line_ending():
    outcome = migrate_file("requirements.txt", b"numpy\r\ntorch", "2.1.0")
    assert outcome.new_bytes == b"numpy\r\ntorch==2.1.0\r\ntorch_npu==2.1.0.post17"


def test_torch_npu_is_added_once_per_marker():
    before = b'torch==2.1.0; sys_platform == "linux"\ntorch==2.1.0; sys_platform == "darwin"\n'
    new = migrate_file("requirements.txt", before, "2.1.0").new_bytes.decode()
    assert new.splitlines() == [
        'torch==2.1.0; sys_platform == "linux"',
        'torch_npu==2.1.0.post17 ; sys_platform == "linux"',
        'torch==2.1.0; sys_platform == "darwin"',
        'torch_npu==2.1.0.post17 ; sys_platform == "darwin"',
    ]


def test_a_spec_that_excludes_the_target_is_kept_and_reported():
    outcome = migrate_file("requirements.txt", b"torch<2.0  # old driver\n", "2.1.0")
    assert outcome.new_bytes is None
    assert reported(outcome) == [
        (
            1,
            1,
            "torch<2.0",
            "torch <2.0 excludes the target 2.1.0: pin torch==2.1.0 and add torch_npu==2.1.0.post17 if the "
            "code runs with that torch, or migrate with -v 1.11.0 (allowed by it)",
            "G2N861",
            "limited",
        )
    ]


def test_a_pinned_release_the_known_versions_lack_suggests_its_release_line():
    """torch==2.1.2 allows no known -v; the tip names 2.1.0, whose torch_npu is built for 2.1."""
    outcome = migrate_file("requirements.txt", b"torch==2.1.2\n", "2.8.0")
    assert [row[3] for row in reported(outcome)] == [
        "torch ==2.1.2 excludes the target 2.8.0: pin torch==2.8.0 and add torch_npu==2.8.0.post4 if the "
        "code runs with that torch, or migrate with -v 2.1.0 (the release line of torch 2.1.2)"
    ]


PORTABLE_TIP = (
    "excludes torch 2.8.0, which this portable copy is written for (-v 2.8.0): code for a newer torch "
    "may call what the pinned one lacks (torch.accelerator came in 2.6); "
)


@pytest.mark.parametrize(
    "data,reported_rows",
    [
        (b"torch==2.8.0\nnumpy\n", []),
        (b"torch>=2.1\n", []),
        (b"torch @ https://example.com/torch.whl\n", []),
        (b"torch>=2.9\n", []),  # the copy for 2.8 runs on the newer torch the project requires
        (
            b"numpy\ntorch==2.1.2  # LLaVA's pin\n",
            [
                (
                    2,
                    2,
                    "torch==2.1.2",
                    "torch==2.1.2 "
                    + PORTABLE_TIP
                    + "migrate with -v 2.1.0 (the release line of torch 2.1.2)",
                    "G2N965",
                    "limited",
                )
            ],
        ),
        (
            b"torch<2.3,>=2.0\n",
            [
                (
                    1,
                    1,
                    "torch<2.3,>=2.0",
                    "torch<2.3,>=2.0 " + PORTABLE_TIP + "migrate with -v 2.2.0 (allowed by it)",
                    "G2N965",
                    "limited",
                )
            ],
        ),
    ],
    ids=["allows", "open range", "url", "newer range", "older pin", "older range"],
)
def test_portable_reports_a_torch_requirement_that_excludes_the_target_and_pins_nothing(data, reported_rows):
    """The portable tree runs on CUDA too: no torch_npu is added and no pin changes, but a project
    whose torch lacks what the copy calls is told which -v fits it."""
    outcome = migrate_file("requirements.txt", data, "2.8.0", index=builtin_index("2.8.0", target="portable"))
    assert outcome.new_bytes is None
    assert reported(outcome) == reported_rows


def test_a_torch_npu_for_another_torch_is_reported():
    outcome = migrate_file("requirements.txt", b"torch\ntorch_npu==2.4.0\n", "2.1.0")
    assert outcome.new_bytes == b"torch==2.1.0\ntorch_npu==2.4.0\n"
    assert reported(outcome) == [
        (
            2,
            2,
            "torch_npu==2.4.0",
            "torch_npu==2.4.0 does not match the target torch 2.1.0: "
            "require torch_npu==2.1.0.post17 (CANN 8.3.RC1)",
            "G2N861",
            "limited",
        )
    ]


@pytest.mark.parametrize(
    "version,torchvision,torchaudio",
    [("1.11.0", "0.12.0", "0.11.0"), ("2.1.0", "0.16.0", "2.1.0"), ("2.8.0", "0.23.0", "2.8.0")],
)
def test_torchvision_and_torchaudio_pins_are_reported_with_the_release_that_pairs(
    version, torchvision, torchaudio
):
    outcome = migrate_file("requirements.txt", b"torchvision==0.1.0\ntorchaudio==0.1.0\n", version)
    pairs = "does not pair with torch " + version
    assert [(r[2], r[3]) for r in reported(outcome)] == [
        ("torchvision==0.1.0", f"torchvision==0.1.0 {pairs}: require torchvision=={torchvision}"),
        ("torchaudio==0.1.0", f"torchaudio==0.1.0 {pairs}: require torchaudio=={torchaudio}"),
    ]


def test_torchtext_pairs_up_to_torch_2_3_and_has_no_release_after():
    """torchtext's development stopped at 0.18.0 (torch 2.3): an older pin is told the release that
    pairs, a newer torch gets a row saying none does, with where to go (ConvNeXt-V2's era of code)."""
    outcome = migrate_file("requirements.txt", b"torch\ntorchtext==0.15.2\n", "2.1.0")
    assert reported(outcome) == [
        (
            2,
            2,
            "torchtext==0.15.2",
            "torchtext==0.15.2 does not pair with torch 2.1.0: require torchtext==0.16.0",
            "G2N861",
            "limited",
        )
    ]
    outcome = migrate_file("requirements.txt", b"torch\ntorchtext\n", "2.8.0")
    assert outcome.new_bytes == b"torch==2.8.0\ntorch_npu==2.8.0.post4\ntorchtext\n"
    tip = (
        "no torchtext release pairs with torch 2.8.0: the last, torchtext==0.18.0, pairs with torch "
        "2.3.1: replace what the code uses of it (datasets, vocab, tokenizers), or migrate for torch "
        "2.3.1 (-v 2.3.1)"
    )
    assert reported(outcome) == [(2, 2, "torchtext", tip, "G2N868", "unsupported")]
    [row] = [d for d in outcome.dependencies if d.package == "torchtext"]
    assert (row.status, row.npu_route, row.source) == (
        "kept",
        "none: no torchtext release pairs with torch 2.8.0",
        "TTX",
    )


def test_a_disabled_pin_rule_changes_nothing():
    index = index_with(version="2.1.0", disabled=["G2N861"])
    outcome = migrate_file("requirements.txt", b"torch\n", "2.1.0", index=index)
    assert (outcome.new_bytes, outcome.dependencies) == (None, [])


def test_pyproject_quoting_and_indentation():
    before = (
        "[project]\n"
        "dependencies = [\n    \"numpy\",\n    'torch>=2.0',  # fw\n]\n"
        "[project.optional-dependencies]\n"
        'gpu = ["torch", "xformers"]\n'
    )
    after = (
        "[project]\n"
        "dependencies = [\n    \"numpy\",\n    'torch==2.1.0',  # fw\n    'torch_npu==2.1.0.post17',\n]\n"
        "[project.optional-dependencies]\n"
        'gpu = ["torch==2.1.0", "torch_npu==2.1.0.post17", "xformers"]\n'
    )
    assert migrate_file("pyproject.toml", before.encode(), "2.1.0").new_bytes == after.encode()


def test_poetry_specifiers():
    assert poetry_specifier("^2.1") == ">=2.1,<3"
    assert poetry_specifier("^0.2.3") == ">=0.2.3,<0.3"
    assert poetry_specifier("~2.1.0") == ">=2.1.0,<2.2"
    assert poetry_specifier("2.1.0") == "==2.1.0"
    assert poetry_specifier(">=1.13,<3") == ">=1.13,<3"
    assert poetry_specifier("*") == ""
    assert poetry_specifier("^1.0 || ^2.0") is None


# -- idempotence -----------------------------------------------------------------------------------------

SAMPLES = [
    ("requirements.txt", b"torch>=1.11 ; python_version>'3.8'  # c\r\nflash-attn\r\n"),
    ("requirements.txt", b"torch\\\n  >=1.11\nnumpy"),
    ("environment.yml", b"dependencies:\n  - pip:\n    - torch\n    - xformers\n"),
    (
        "pyproject.toml",
        b'[project]\ndependencies = ["torch"]\n[tool.poetry.dependencies]\ntorch = ">=1.11"\n',
    ),
    ("setup.cfg", b"[options]\ninstall_requires =\n    torch\n[options.extras_require]\nx = torch; y\n"),
]


@pytest.mark.parametrize("name,data", SAMPLES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SAMPLES)])
@pytest.mark.parametrize("version", ["1.11.0", "2.1.0", "2.8.0"])
def test_a_second_migration_changes_nothing(name, data, version):
    first = migrate_file(name, data, version)
    assert first.new_bytes is not None and not first.skipped
    second = migrate_file(name, first.new_bytes, version)
    assert second.new_bytes is None
    assert [r for r in second.reported if r.rule.startswith("G2N86")] == []


# -- setup.py --------------------------------------------------------------------------------------------

SETUP_PY = b"""\
import os
from setuptools import find_packages, setup

REQUIRES = [
    "numpy>=1.21",
    "torch>=1.13,<2.3",
]
EXTRAS = {"fast": ["flash-attn>=2.3", "xformers"], "dist": ["deepspeed"]}

setup(
    name="trainer",
    packages=find_packages(),
    install_requires=REQUIRES + ["apex @ git+https://github.com/NVIDIA/apex"],
    extras_require=EXTRAS,
)
"""


def test_setup_py_dependencies():
    dependencies, found = setup_py_dependencies(SETUP_PY, builtin_index("2.1.0"))
    assert [row[:5] + (row[-1],) for row in rows(dependencies)] == [
        (0, "flash-attn", "flash-attn>=2.3", 8, "no NPU equivalent", "G2N870"),
        (0, "xformers", "xformers", 8, "no NPU equivalent", "G2N871"),
        (1, "torch", "torch>=1.13,<2.3", 6, "kept", "G2N861"),
        (2, "torch_npu", "torch_npu==2.1.0.post17", 0, "to install", "G2N861"),
        (4, "deepspeed", "deepspeed", 8, "works", "G2N874"),
        (4, "apex", "apex @ git+https://github.com/NVIDIA/apex", 13, "drop-in", "G2N872"),
    ]
    assert reported(found)[0] == (
        6,
        6,
        "torch>=1.13,<2.3",
        "setup.py is left as it is: require torch_npu==2.1.0.post17 next to torch in install_requires "
        "(and torch==2.1.0 where it is installed for the NPU)",
        "G2N861",
        "limited",
    )
    assert [r[2] for r in reported(found)] == ["torch>=1.13,<2.3", "flash-attn", "xformers", "apex"]


HF_SETUP_PY = b"""import re
from setuptools import setup

_deps = [
    "numpy",
    "torch>=2.6",
    "xformers>=0.0.20",
    "classifiers-are-not-looked-up",
]
deps = {b: a for a, b in (re.findall(r"^(([^!=<>~ ]+)(?:[!=<>~ ].*)?$)", x)[0] for x in _deps)}


def deps_list(*pkgs):
    return [deps[pkg] for pkg in pkgs]


extras = {}
extras["torch"] = deps_list("torch", "accelerate")
extras["fast"] = [deps["xformers"]]
extras["dev"] = extras["torch"] + extras["fast"]
install_requires = [deps["numpy"]]

setup(name="hf", install_requires=install_requires, extras_require=extras)
"""


def test_setup_py_dependencies_named_from_a_lookup_table():
    """diffusers' and alignment-handbook's setup.py name their requirements from a list
    (``deps["torch"]``, ``deps_list("torch")``): the rows point at the list's lines."""
    dependencies, _ = setup_py_dependencies(HF_SETUP_PY, builtin_index("2.1.0"))
    assert [row[:5] + (row[-1],) for row in rows(dependencies)] == [
        (0, "xformers", "xformers>=0.0.20", 7, "no NPU equivalent", "G2N871"),
        (1, "torch", "torch>=2.6", 6, "kept", "G2N861"),
        (2, "torch_npu", "torch_npu==2.1.0.post17", 0, "to install", "G2N861"),
    ]


@pytest.mark.parametrize("data", [b"def (", b"\xff\xfe\x00", b"setup(install_requires=[x for x in y])", b""])
def test_setup_py_that_says_nothing(data):
    assert setup_py_dependencies(data, builtin_index("2.1.0")) == ([], [])


# -- which files ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel,head,kind",
    [
        ("requirements.txt", b"", "requirements"),
        ("docs/requirements-dev.txt", b"", "requirements"),
        ("dev-requirements.txt", b"", "requirements"),
        ("test_requirements.txt", b"", "requirements"),
        ("requirements/base.txt", b"", "requirements"),
        ("requirements.in", b"", "requirements"),
        ("constraints-gpu.txt", b"", "requirements"),
        ("environment.yml", b"", "conda-env"),
        ("envs/environment.yaml", b"", "conda-env"),
        ("env-cuda.yml", b"name: x\ndependencies:\n  - pip\n", "conda-env"),
        ("pyproject.toml", b"", "packaging"),
        ("pkg/setup.cfg", b"", "packaging"),
    ],
)
def test_claims(rel, head, kind):
    assert classify(rel, len(head), lambda: head) == kind


@pytest.mark.parametrize(
    "rel,head", [("README.txt", b""), ("CMakeLists.txt", b""), ("env.yml", b"lr: 0.1\n")]
)
def test_not_claimed(rel, head):
    assert classify(rel, len(head), lambda: head) not in ("requirements", "conda-env", "packaging")


# -- hostile input ---------------------------------------------------------------------------------------


COPIED = "; copied unchanged"


@pytest.mark.parametrize(
    "name,data,skipped",
    [
        ("requirements.txt", b"torch\x00\x01", "binary data (NUL bytes), not a requirements file" + COPIED),
        (
            "requirements.txt",
            "torch\n".encode("utf-16"),
            "UTF-16 text (only UTF-8 is read)" + COPIED,
        ),
        (
            "requirements.txt",
            b"torch\n" * 800_000,
            "larger than 4 MiB, more than a requirements file holds" + COPIED,
        ),
        (
            "environment.yml",
            b"dependencies: [\n",
            "invalid YAML (line 2: expected the node content, but found '<stream end>')" + COPIED,
        ),
        (
            "environment.yml",
            b"dependencies: " + b"[" * 300,
            "invalid YAML (nested deeper than 100 levels)" + COPIED,
        ),
        (
            "pyproject.toml",
            b"[project\n",
            "invalid TOML (Unexpected character: '\\n' at line 1 col 8)" + COPIED,
        ),
        (
            "setup.cfg",
            b"install_requires = torch\n",
            "invalid setup.cfg (File contains no section headers.)" + COPIED,
        ),
    ],
)
def test_unreadable_files_are_skipped_with_a_reason(name, data, skipped):
    outcome = migrate_file(name, data, "2.1.0")
    assert (outcome.new_bytes, outcome.skipped) == (None, skipped)


def test_a_large_requirements_file_is_read():
    data = b"".join(b"package%d>=1.0  # c\n" % number for number in range(50_000)) + b"torch\n"
    assert len(data) > 1_000_000
    outcome = migrate_file("requirements.txt", data, "2.1.0")
    assert outcome.new_bytes == data.replace(b"\ntorch\n", b"\ntorch==2.1.0\ntorch_npu==2.1.0.post17\n")


SPACES = b" " * 100_000


@pytest.mark.parametrize(
    "data,after",
    [
        (b"% not a requirement %\n==2.0\nfoo[bar\n>>>\n-x\ntorch >= >= 2\n" + b"a" * 10_000 + b"\n", None),
        (b"torch" + SPACES + b"#\n", b"torch==2.1.0" + SPACES + b"#\ntorch_npu==2.1.0.post17\n"),
        (b"torch\\\n" * 10_000, None),  # one line of 10,000 torch: no requirement
        (b"\xef\xbb\xbftorch\xff\n", None),
        (b"\xef\xbb\xbftorch\n", b"\xef\xbb\xbftorch==2.1.0\ntorch_npu==2.1.0.post17\n"),
    ],
)
def test_nonsense_lines_are_left_alone(data, after):
    outcome = migrate_file("requirements.txt", data, "2.1.0")
    assert (outcome.new_bytes, outcome.skipped) == (after, "")


def test_non_utf8_bytes_survive():
    data = b"# caf\xe9\ntorch  # \xff\xfe\n"
    outcome = migrate_file("requirements.txt", data, "2.1.0")
    assert outcome.new_bytes == b"# caf\xe9\ntorch==2.1.0  # \xff\xfe\ntorch_npu==2.1.0.post17\n"


# -- facts and rules ---------------------------------------------------------------------------------------


def gen_rules():
    spec = importlib.util.spec_from_file_location("gen_rules", REPO / "tools" / "gen_rules.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_rules", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["torch_npu_pins.yaml", "dependencies.yaml"])
def test_the_rules_are_what_the_generator_makes_of_the_kb(name):
    module = gen_rules()
    path = REPO / "rules" / "every_mode" / name
    assert module.outputs()[path] == path.read_text(encoding="utf-8"), "run python tools/gen_rules.py"


def test_every_dependency_row_of_the_kb_is_a_rule():
    with open(KB / "cuda_only_dependencies.csv", newline="", encoding="utf-8") as handle:
        facts = {row["package"]: row for row in csv.DictReader(handle)}
    rules = {r["package"]: r for r in load_builtin_rules().rules if r.kind == "DependencyRule"}
    assert set(rules) == set(facts)
    for package, rule in rules.items():
        row = facts[package]
        assert (rule["status"], rule["action"], rule["install_order"], rule["source"]) == (
            row["status"],
            row["action"],
            int(row["install_order"]),
            row["source"],
        )


def test_rule_ids_stay_in_their_block():
    ids = [
        rule.id
        for rule in load_builtin_rules().rules
        if rule.kind in ("TorchNpuPinRule", "DependencyRule", "PackageSourceRule")
    ]
    assert len(ids) == len(set(ids))
    assert all("G2N860" <= rule_id <= "G2N899" or "G2N500" <= rule_id <= "G2N559" for rule_id in ids)


def test_a_full_id_block_continues_in_the_next_and_skips_the_ids_of_other_files(tmp_path, monkeypatch):
    """The dependency block G2N870-G2N899 was full: the next entry would have taken G2N900,
    portable's; devices.yaml's next id, G2N155, is a hand-written rule's. A new entry takes the
    first number of the next block that no other rule file uses, after the last one handed out."""
    module = gen_rules()
    rules = tmp_path / "rules"
    (rules / "every_mode").mkdir(parents=True)
    (rules / "other.yaml").write_text("rules:\n  X:\n    - id: G2N501\n")
    path = rules / "every_mode" / "dependencies.yaml"
    known = [{"id": f"G2N{n}", "package": f"p{n}"} for n in range(870, 900)]
    path.write_text(yaml.safe_dump({"rules": {"DependencyRule": known}}))
    monkeypatch.setattr(module, "RULES", rules)
    entries = [{"package": f"p{n}"} for n in range(870, 900)] + [{"package": "horovod"}, {"package": "new"}]
    assert [e["id"] for e in module.assign_ids(path, "DependencyRule", entries)][-3:] == [
        "G2N899",
        "G2N500",
        "G2N502",
    ]
    monkeypatch.setattr(module, "ID_BLOCKS", {"dependencies.yaml": (range(870, 900),)})
    with pytest.raises(SystemExit, match="dependencies.yaml: its id blocks are full"):
        module.assign_ids(path, "DependencyRule", entries)


def planned(tmp_path, files, version: str) -> list:
    """The first six columns of each dependency plan row of a project of ``files`` (path -> text)
    with a training script, migrated for ``version``."""
    project = tmp_path / "proj"
    for rel, text in {**files, "train.py": "import torch\nx = torch.ones(1).cuda()\n"}.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", version)
    assert result.returncode == 0, result.stderr
    plan = csv_rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "dependency_plan.csv")
    return [row[:6] for row in plan[1:]]


def test_horovod_is_planned_as_having_no_npu_build(tmp_path):
    """DALLE-pytorch's Horovod backend: G2N188 reported its import, but its requirement had no
    plan row (the generated id block was full)."""
    assert planned(tmp_path, {"requirements.txt": "horovod>=0.21\n"}, "2.1.0")[0] == [
        "0",
        "horovod",
        "horovod>=0.21",
        "requirements.txt",
        "1",
        "no NPU equivalent",
    ]


def test_torch_no_file_lists_is_planned_once_for_the_top_file_and_not_called_added(tmp_path):
    """qlora: neither requirements.txt nor eval/requirements.txt lists torch. The plan said torch
    and torch_npu were "added" to eval/requirements.txt (line 0), which stayed unchanged."""
    files = {
        "eval/requirements.txt": "shortuuid\nray\n",
        "requirements.txt": "transformers==4.31.0\nbitsandbytes==0.40.0\n",
    }
    assert planned(tmp_path, files, "2.1.0") == [
        ["0", "bitsandbytes", "bitsandbytes==0.40.0", "requirements.txt", "2", "no NPU equivalent"],
        ["1", "torch", "torch==2.1.0", "requirements.txt", "0", "to install"],
        ["2", "torch_npu", "torch_npu==2.1.0.post17", "requirements.txt", "0", "to install"],
        # qlora pins a transformers release from before the NPU's (4.32.0)
        ["3", "transformers", "transformers==4.31.0", "requirements.txt", "1", "kept"],
    ]
    for name, text in files.items():
        assert (tmp_path / "out" / "proj_msft" / name).read_text() == text


def test_a_torch_range_that_excludes_the_target_still_plans_torch_npu(tmp_path):
    """llm-foundry's setup.py pins torch>=2.7.0,<2.7.1: the plan said to install torch 2.8.0
    "before torch_npu" and had no torch_npu row."""
    setup = "from setuptools import setup\n\nsetup(name='p', install_requires=['torch>=2.7.0,<2.7.1'])\n"
    assert planned(tmp_path, {"setup.py": setup}, "2.8.0") == [
        ["1", "torch", "torch>=2.7.0,<2.7.1", "setup.py", "3", "kept"],
        ["2", "torch_npu", "torch_npu==2.8.0.post4", "setup.py", "0", "to install"],
    ]


@pytest.mark.parametrize(
    "spec,older",
    [
        ("==4.2.1", True),
        ("<4.20", True),
        ("~=4.30.0", True),
        (">4.31.0,<4.32", True),
        ("", False),
        (">=4.2", False),
        ("==4.40", False),
        ("~=4.30", False),
        ("<5", False),
        ("==not-a-version", False),
    ],
)
def test_a_requirement_allowing_only_releases_older_than_another_is_told_apart(spec, older):
    assert only_older(spec, "4.32.0") is older


def test_a_library_pinned_before_it_knew_the_npu_is_kept_and_reported(tmp_path):
    """SimCSE pins transformers==4.2.1, whose TrainingArguments refuse --fp16 off CUDA: every
    documented training command stopped at its arguments on the NPU, with no row. A release that
    knows the NPU gets no row, as before. esm pins deepspeed==0.5.9, from before DeepSpeed's NPU
    accelerator."""
    files = {
        "requirements.txt": "transformers==4.2.1\naccelerate<0.21\ndeepspeed==0.5.9\n",
        "dev.txt": "transformers>=4.40\ndeepspeed>=0.14\n",
    }
    assert [row for row in planned(tmp_path, files, "2.8.0") if row[0] in ("3", "4")] == [
        ["3", "accelerate", "accelerate<0.21", "requirements.txt", "2", "kept"],
        ["3", "transformers", "transformers==4.2.1", "requirements.txt", "1", "kept"],
        ["4", "deepspeed", "deepspeed==0.5.9", "requirements.txt", "3", "kept"],
    ]
    manual = csv_rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "manual_work.csv")
    assert [row[:5] for row in manual if row[0] in ("requirements.txt", "dev.txt")] == [
        [
            "requirements.txt",
            "1",
            "1",
            "transformers==4.2.1",
            "require transformers>=4.32.0: an older release knows no NPU, so its Trainer keeps CUDA-only "
            "paths there (with --fp16 its TrainingArguments raise ValueError: ... can only be used on "
            "CUDA devices)",
        ],
        [
            "requirements.txt",
            "2",
            "2",
            "accelerate<0.21",
            "require accelerate>=0.21.0: an older release knows no NPU, so Accelerator() places the model "
            "and batches on CUDA or the CPU",
        ],
        [
            "requirements.txt",
            "3",
            "3",
            "deepspeed==0.5.9",
            "require deepspeed>=0.10.0 and install it after torch and torch_npu: an older release knows no "
            "NPU accelerator, so its engine runs on CUDA only; remove deepspeed_npu and its import if the "
            "project has them",
        ],
    ]


def test_cuda_kernel_dsls_are_planned_as_having_no_npu_build(tmp_path):
    """mamba's pyproject requires TileLang and QuACK, whose kernels compile for NVIDIA GPUs; its
    plan listed torch, torch_npu, triton and causal-conv1d only."""
    requirements = "tilelang==0.1.8\nquack-kernels>=0.3.4\nnvidia-cutlass-dsl\n"
    assert [row[1:] for row in planned(tmp_path, {"requirements.txt": requirements}, "2.8.0")[:3]] == [
        ["nvidia-cutlass-dsl", "nvidia-cutlass-dsl", "requirements.txt", "3", "no NPU equivalent"],
        ["quack-kernels", "quack-kernels>=0.3.4", "requirements.txt", "2", "no NPU equivalent"],
        ["tilelang", "tilelang==0.1.8", "requirements.txt", "1", "no NPU equivalent"],
    ]
