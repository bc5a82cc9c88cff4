"""The versioned API status knowledge base: generated table, lookups, user overrides and
`gpu2npu rules explain`. Expected answers are taken from the real facts under kb/."""

import csv
import re
import subprocess
import sys

import pytest
from helpers import REPO, builtin_index, run_cli, write

from gpu2npu.api_support import STATUSES, KnowledgeBase
from gpu2npu.errors import RuleFileError
from gpu2npu.rules.index import compile_index
from gpu2npu.rules.loader import load_rule_file, load_rule_files

FACTS = r"[a-z]+@[0-9.]+([+~][a-z]+@[0-9.]+)*"
CELL = re.compile(
    rf"^(supported|supported_with_limits|unsupported)/(listed|inferred)/{FACTS}$|^unknown/none/-$"
)


@pytest.fixture(scope="module")
def kb():
    return KnowledgeBase.load()


def answer(kb, api, version):
    found = kb.lookup(api, version)
    return (found.status, found.confidence, found.source)


def test_generated_table_is_up_to_date():
    command = [sys.executable, str(REPO / "tools" / "gen_kb.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_aliases_are_what_torch_gives():
    pytest.importorskip("torch")
    command = [sys.executable, str(REPO / "tools" / "gen_aliases.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "alias, listed",
    [
        ("torch.nn.Parameter", "torch.nn.parameter.Parameter"),
        ("torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"),
        ("torch.utils.data.sampler.BatchSampler", "torch.utils.data.BatchSampler"),
        ("torch.nn.modules.module.Module.double", "torch.nn.Module.double"),
    ],
)
def test_another_spelling_of_a_listed_name_gets_its_answer(kb, alias, listed):
    """Code names a class where a package exports it, the lists where it is defined (or the
    other way round): the answer is the listed name's, and the chain says why."""
    for version in ("2.1.0", "2.8.0"):
        found, table = kb.lookup(alias, version), kb.lookup(listed, version)
        assert (found.api, found.status, found.source, found.tip) == (
            alias,
            table.status,
            table.source,
            table.tip,
        )
        assert found.chain == (f"{alias} is {listed} (the same object in torch); the lists name it so",) + (
            table.chain
        )
    assert alias in kb and answer(kb, "torch.nn.Parameter", "2.1.0") == (
        "supported",
        "listed",
        "msprobe@2.1.0",
    )


def test_host_side_apis_are_supported_by_gpu2npus_own_rule():
    found = lookup_in(KnowledgeBase.load(), "torch.Size", builtin_index("2.8.0"))
    assert (found.status, found.source) == ("supported", "rules:G2N170")
    assert found.chain == (
        "gpu2npu's rule G2N170 (host_apis.yaml: rules.ApiStatusRule[0]): supported",
        "overrides the built-in answer unknown/none/-",
    )


def test_table_format():
    with open(
        REPO / "src" / "gpu2npu" / "api_support" / "api_support.csv", newline="", encoding="utf-8"
    ) as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == [
        "api",
        "npu_api",
        "1.11.0",
        "2.1.0",
        "2.2.0",
        "2.3.1",
        "2.4.0",
        "2.5.1",
        "2.6.0",
        "2.7.1",
        "2.8.0",
    ]
    names = [row[0] for row in rows[1:]]
    assert names == sorted(set(names)) and len(names) > 3000
    for row in rows[1:]:
        for cell in row[2:]:
            assert CELL.match(cell), (row[0], cell)
            if "~" in cell:  # a conflict of two facts is never reported as unsupported
                assert re.match("supported_with_limits/(listed|inferred)/", cell), (row[0], cell)


@pytest.mark.parametrize(
    "api,version,expected",
    [
        # msprobe lists it for 2.1.0; 2.6.0 docs (and msprobe) say unsupported; 2.4.0 sits between
        ("torch.export.export", "2.1.0", ("supported", "listed", "msprobe@2.1.0")),
        ("torch.export.export", "2.6.0", ("unsupported", "listed", "docs@2.6.0")),
        ("torch.export.export", "2.4.0", ("unknown", "none", "-")),
        # docs 2.7.1 supported with limits, msprobe 2.7.1 unsupported: a conflict, kept usable
        ("torch.cdist", "2.7.1", ("supported_with_limits", "listed", "docs@2.7.1~msprobe@2.7.1")),
        # docs 2.6.0 say unsupported, but torch_npu 2.6.0 has NPU kernels for aten's cdist: a conflict
        ("torch.cdist", "2.6.0", ("supported_with_limits", "listed", "docs@2.6.0~aten@2.6.0")),
        (
            "torch.cdist",
            "2.3.1",
            ("supported_with_limits", "inferred", "msprobe@2.1.0+docs@2.6.0~aten@2.3.1"),
        ),
        # a module by its functional form (adaptive_max_pool2d); max_pool2d by max_pool2d_with_indices
        ("torch.nn.AdaptiveMaxPool2d", "2.8.0", ("supported_with_limits", "listed", "docs@2.8.0~aten@2.8.0")),
        ("torch.nn.MaxPool2d", "2.1.0", ("supported_with_limits", "listed", "msprobe@2.1.0~aten@2.1.0")),
        ("torch.nn.Transformer", "2.8.0", ("supported_with_limits", "listed", "docs@2.8.0~msprobe@2.8.0")),
        # kb/api_operators.csv: an API named apart from its operators (nanoGPT's clip_grad_norm_ made
        # `check -v 2.1.0` fail), a container whose one operator of its own is its LayerNorm (timm)
        (
            "torch.nn.utils.clip_grad_norm_",
            "2.1.0",
            ("supported_with_limits", "listed", "msprobe@2.1.0~aten@2.1.0"),
        ),
        (
            "torch.nn.functional.grid_sample",
            "2.1.0",
            ("supported_with_limits", "listed", "msprobe@2.1.0~aten@2.1.0"),
        ),
        (
            "torch.nn.TransformerDecoder",
            "2.8.0",
            ("supported_with_limits", "listed", "docs@2.8.0~aten@2.8.0"),
        ),
        # ... and all of them must have kernels: torch_npu 2.2.0 has none for _native_multi_head_attention
        (
            "torch.nn.MultiheadAttention",
            "2.1.0",
            ("supported_with_limits", "listed", "msprobe@2.1.0~aten@2.1.0"),
        ),
        ("torch.nn.MultiheadAttention", "2.2.0", ("unsupported", "inferred", "msprobe@2.1.0+docs@2.6.0")),
        # the 2023 list and msprobe 2.1.0 disagree on the SDP switches
        (
            "torch.backends.cuda.sdp_kernel",
            "2.1.0",
            ("supported_with_limits", "listed", "msprobe@2.1.0~apimd@2.1.0"),
        ),
        # no list for 2.4.0: both neighbours agree
        ("torch.compile", "2.4.0", ("supported_with_limits", "inferred", "msprobe@2.1.0+docs@2.6.0")),
        ("torch.nn.DataParallel", "2.4.0", ("unsupported", "inferred", "msprobe@2.1.0+docs@2.6.0")),
        # torch_npu 2.2.0-2.5.1 make nested_tensor raise; docs 2.6.0 list it with limits
        ("torch.nested.nested_tensor", "2.3.1", ("unsupported", "listed", "intercept@2.3.1")),
        ("torch.nested.nested_tensor", "2.6.0", ("supported_with_limits", "listed", "docs@2.6.0")),
        # 1.11.0: the 2.1.0 answer needs agreeing operator evidence
        ("torch.add", "1.11.0", ("supported_with_limits", "inferred", "msprobe@2.1.0+aten@1.11.0")),
        ("torch.nn.Module.train", "1.11.0", ("unknown", "none", "-")),
        ("torch.Tensor.cholesky", "1.11.0", ("unsupported", "inferred", "aten@1.11.0")),
        ("torch.Tensor.lgamma", "1.11.0", ("supported_with_limits", "inferred", "cpu@1.11.0")),
    ],
)
def test_answers_from_the_facts(kb, api, version, expected):
    assert answer(kb, api, version) == expected


def test_tips_are_actionable(kb):
    assert (
        kb.lookup("torch.Tensor.lgamma", "1.11.0").tip
        == "runs on the CPU with torch_npu for torch 1.11.0: expect it to be slow"
    )
    assert (
        kb.lookup("torch.cdist", "2.8.0").tip
        == "supported with limits on NPU for torch 2.8.0 (see the Ascend API list)"
    )
    assert kb.lookup("torch.export.export", "2.6.0").tip == (
        "not supported on NPU for torch 2.6.0: replace it, or run this part on the CPU"
    )
    synchronize = kb.lookup("torch.cuda.synchronize", "2.8.0")
    assert (synchronize.status, synchronize.npu_api) == ("supported", "torch_npu.npu.synchronize")
    names = list(kb.names())
    for api in names[::97]:
        for version in kb.versions:
            found = kb.lookup(api, version)
            assert found.status in STATUSES and found.tip and found.tip != "NA" and found.chain, (
                api,
                version,
            )


def test_curated_tips(kb):
    data_parallel = kb.lookup("torch.nn.DataParallel", "2.8.0")
    assert data_parallel.status == "unsupported"
    assert data_parallel.tip.startswith("use torch.nn.parallel.DistributedDataParallel")
    assert data_parallel.chain[-1] == "CUR: curated tip for torch.nn.DataParallel"
    assert "npugraphs" in kb.lookup("torch.compile", "2.6.0").tip
    assert "npugraphs" not in kb.lookup("torch.compile", "2.1.0").tip
    assert (
        kb.lookup("torch.jit.script", "2.1.0").tip == "TorchScript is not run on NPU; keep the eager module"
    )


def test_absent_and_foreign_names(kb):
    absent = kb.lookup("torch.not_a_real_api", "2.8.0")
    assert (absent.status, absent.confidence, absent.source) == ("unknown", "none", "-")
    assert absent.tip == "not validated on NPU for torch 2.8.0: test it before relying on it"
    assert kb.lookup("numpy.add", "2.8.0") is None
    assert kb.lookup("torch.nn.Linear.__init__", "2.6.0").api == "torch.nn.Linear"
    with pytest.raises(ValueError):
        kb.lookup("torch.add", "3.0.0")


def test_decision_chains(kb):
    assert kb.lookup("torch.compile", "2.4.0").chain[:4] == (
        "torch 2.4.0: no API list exists for this version",
        "torch 2.1.0: supported (msprobe@2.1.0)",
        "torch 2.6.0: supported_with_limits (docs@2.6.0~msprobe@2.6.0)",
        "both neighbours agree -> supported_with_limits (inferred)",
    )
    assert kb.lookup("torch.export.export", "2.4.0").chain[-1] == "the neighbours disagree -> unknown"
    msprobe_only = "torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.PowerSGDState.__getstate__"
    assert kb.lookup(msprobe_only, "2.6.0").chain == (
        "docs@2.6.0: no status for this name",
        "msprobe@2.6.0: unsupported in msFmkTransplt's API list for torch 2.6.0",
    )


OVERRIDES = """\
rules:
  ApiStatusRule:
    - id: LAB1
      api: torch.cdist
      status: supported
      versions: ">=2.7.1"
      tip: tested on our cluster
    - api: mylib.fused_op
      status: unsupported
"""


def lookup_in(kb, api, index):
    """The answer for the version of a compiled rule index, with its status overrides."""
    return kb.lookup(api, index.version, index.overrides_for(api))


def test_user_override_with_a_version_range(kb, tmp_path):
    rules = load_rule_files([write(tmp_path / "lab.yaml", OVERRIDES)])
    for version in ("2.7.1", "2.8.0"):
        found = lookup_in(kb, "torch.cdist", compile_index(rules, version))
        assert (found.status, found.confidence, found.source, found.tip) == (
            "supported",
            "listed",
            "user:LAB1",
            "tested on our cluster",
        )
        assert (
            found.chain[1]
            == f"overrides the built-in answer supported_with_limits/listed/docs@{version}~msprobe@{version}"
        )
    assert answer(kb, "torch.cdist", "2.6.0") == ("supported_with_limits", "listed", "docs@2.6.0~aten@2.6.0")
    assert lookup_in(kb, "torch.cdist", compile_index(rules, "2.6.0")).source == "docs@2.6.0~aten@2.6.0"
    # passed directly, an override still applies only to its own versions
    assert (
        kb.lookup(
            "torch.cdist", "2.6.0", overrides=compile_index(rules, "2.7.1").overrides_for("torch.cdist")
        ).source
        == "docs@2.6.0~aten@2.6.0"
    )
    foreign = lookup_in(kb, "mylib.fused_op", compile_index(rules, "2.1.0"))
    assert (foreign.status, foreign.source) == ("unsupported", "user:lab.yaml:ApiStatusRule[1]")
    assert foreign.tip == "not supported on NPU for torch 2.1.0: replace it, or run this part on the CPU"


@pytest.mark.parametrize(
    "entry,problem",
    [
        (
            "{api: torch.cdist, status: maybe}",
            "rules.ApiStatusRule[0]: 'status' must be one of "
            "supported, supported_with_limits, unsupported, unknown, not 'maybe'",
        ),
        (
            "{api: torch..cdist, status: supported}",
            "rules.ApiStatusRule[0].api: 'torch..cdist' is not a dotted Python name",
        ),
        ("{status: supported}", "rules.ApiStatusRule[0]: missing required field 'api'"),
    ],
)
def test_bad_override_entries(tmp_path, entry, problem):
    path = write(tmp_path / "bad.yaml", f"rules:\n  ApiStatusRule:\n    - {entry}\n")
    with pytest.raises(RuleFileError) as error:
        load_rule_file(path, id_prefix=path.name)
    assert f"bad.yaml: {problem}" in str(error.value)


def test_explain_command(tmp_path):
    result = run_cli("rules", "explain", "torch.cdist", "-v", "2.7")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:6] == [
        "torch.cdist (torch 2.7.1)",
        "status:     supported_with_limits",
        "confidence: listed",
        "source:     docs@2.7.1~msprobe@2.7.1",
        "tip:        supported with limits on NPU for torch 2.7.1 (see the Ascend API list)",
        "chain:",
    ]
    assert "  1. docs@2.7.1 and msprobe@2.7.1 disagree" in result.stdout
    rules = write(tmp_path / "lab.yaml", OVERRIDES)
    overridden = run_cli("rules", "explain", "torch.cdist", "-v", "2.8.0", "-r", rules)
    assert (
        "source:     user:LAB1" in overridden.stdout
        and "tip:        tested on our cluster" in overridden.stdout
    )
    foreign = run_cli("rules", "explain", "numpy.add")
    assert foreign.returncode == 0 and "not judged" in foreign.stdout
    bad_version = run_cli("rules", "explain", "torch.add", "-v", "9.9")
    assert bad_version.returncode == 2 and "unknown torch version '9.9'" in bad_version.stderr
