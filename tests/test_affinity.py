"""`gpu2npu analyse -m affinity_apis`: affinity_api_call.csv on a fixture project, version
awareness, name resolution without jedi, and affinity.yaml against its generator."""

import ast
import importlib.util
import json
import sys
import textwrap

import pytest
from helpers import REPO, run_cli, run_cli_without, tree_files, write

from gpu2npu.errors import RuleFileError
from gpu2npu.modes.affinity_apis.match import base_matches, parameter_names, parse_affinity
from gpu2npu.source.imports import relative_base

PROJECT = REPO / "tests" / "projects" / "affinity"
HEADER = "File,Start Line,End Line,Api Type,Api Call Name,Affinity Api Name"
DROP_PATH = "class,pkg.layers.DropPath,torch_npu.contrib.module.NpuDropPath"
SHUFFLE = "function,pkg.layers.channel_shuffle,torch_npu.contrib.module.ChannelShuffle"
MISH = "class,pkg.layers.Mish,torch_npu.contrib.module.Mish"
MATMUL = "torch,torch.matmul,torch_npu.contrib.function.matmul_transpose"
ROPE = "pattern,pkg.layers.apply_rotary_pos_emb,torch_npu.npu_rotary_mul"
FLASH = "pkg/model.py,25,25,pattern,flash_attn.flash_attn_func,torch_npu.npu_fusion_attention"
SPECIAL = "special,input[condition] = value,torch_npu.contrib.function.npu_fast_condition_index_put"
# The rows every supported version gives (Mish, SiLU and flash_attn depend on the version).
COMMON = [
    f"pkg/layers.py,5,11,{DROP_PATH}",  # the definition itself
    "pkg/layers.py,31,33,pattern,pkg.layers.LlamaRMSNorm,torch_npu.npu_rms_norm",
    f"pkg/layers.py,36,37,{SHUFFLE}",
    f"pkg/layers.py,45,46,{ROPE}",
    f"pkg/layers.py,50,50,{SHUFFLE}",  # two calls on one line: one row
    f"pkg/model.py,14,14,{DROP_PATH}",  # from .layers import DropPath
    f"pkg/model.py,19,19,{MATMUL}",  # import torch as t; t.matmul
    f"pkg/model.py,20,21,{MATMUL}",  # from torch import matmul as mm; over two lines
    # not pkg/model.py line 22, a[mask] = value: mask is a parameter, not known to be a condition
    f"pkg/model.py,23,23,{SHUFFLE}",
    "pkg/model.py,23,23,pattern,torch.nn.functional.gelu,torch_npu.npu_fast_gelu",
    f"pkg/model.py,35,35,{SPECIAL}",  # negative = x < 0; x[negative] = 0
    f"scripts/star.py,5,5,{DROP_PATH}",  # from pkg.layers import *
    f"scripts/star.py,5,5,{ROPE}",
    f"train.py,5,5,{DROP_PATH}",  # from pkg import DropPath, re-exported by pkg/__init__.py
    "train.py,6,6,torch,torch.optim.AdamW,torch_npu.optim.NpuFusedAdamW",  # not the apex one
    f"train.py,7,7,{SHUFFLE}",  # import pkg.layers as L; L.channel_shuffle
    "train.py,7,7,torch,torch.roll,torch_npu.contrib.function.roll",
]
# torch_npu has contrib.module.Mish and SiLU for torch 1.11.0 and 2.2.0 only.
MISH_AND_SILU = [
    "pkg/layers.py,23,28," + MISH,
    "pkg/model.py,15,15," + MISH,  # from pkg.layers import Mish (absolute)
    "pkg/model.py,16,16,torch,torch.nn.SiLU,torch_npu.contrib.module.SiLU",
]
SKIPPED = [
    {
        "file": "scripts/py2.py",
        "reason": "cannot be parsed as Python 3 (syntax error at line 2); not analysed",
    }
]


def ordered(rows):
    """Rows in the report's order: by file, then start and end line as numbers, then the rest."""

    def key(row):
        file, start, end, *rest = row.split(",")
        return file, int(start), int(end), rest

    return sorted(rows, key=key)


def analyse(tmp_path, version, source=PROJECT, *extra):
    result = run_cli(
        "analyse", "-i", source, "-o", tmp_path / version, "-m", "affinity_apis", "-v", version, *extra
    )
    assert result.returncode == 0, result.stderr
    return result, tmp_path / version / f"{source.stem}_analysis"


def csv_rows(out):
    lines = (out / "affinity_api_call.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == HEADER
    return lines[1:]


def test_rows_of_the_fixture_project_for_the_newest_torch(tmp_path):
    before = tree_files(PROJECT)
    result, out = analyse(tmp_path, "2.8.0")
    assert csv_rows(out) == ordered(COMMON + [FLASH])
    assert result.stdout.splitlines()[0] == "affinity_api_call.csv: 18 row(s)"
    assert sorted(p.name for p in out.iterdir()) == [
        "affinity_api_call.csv",
        "pytorch_analysis.txt",
        "report.json",
    ]
    report = json.loads((out / "report.json").read_text())
    assert report["skipped_files"] == SKIPPED
    assert report["affinity_rows_by_type"] == {
        "class": 4,
        "function": 4,
        "pattern": 5,
        "special": 1,
        "torch": 4,
    }
    log = (out / "pytorch_analysis.txt").read_text().splitlines()
    assert (
        "scripts/py2.py: skipped: cannot be parsed as Python 3 (syntax error at line 2); not analysed" in log
    )
    assert "affinity_api_call.csv rows by Api Type: class 4, function 4, pattern 5, special 1, torch 4" in log
    assert tree_files(PROJECT) == before  # the input is only read


@pytest.mark.parametrize(
    "version,expected",
    [
        ("1.11.0", COMMON + MISH_AND_SILU),  # no npu_fusion_attention in 1.11.0
        ("2.2.0", COMMON + MISH_AND_SILU + [FLASH]),
        ("2.1.0", COMMON + [FLASH]),
    ],
)
def test_a_replacement_is_reported_only_for_the_versions_that_have_it(tmp_path, version, expected):
    assert csv_rows(analyse(tmp_path, version)[1]) == ordered(expected)


def test_works_when_jedi_cannot_be_imported(tmp_path):
    result = run_cli_without(
        "jedi",
        "analyse",
        "-i",
        PROJECT,
        "-o",
        "out",
        "-m",
        "affinity_apis",
        "-v",
        "2.8.0",
        "-j",
        "1",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert csv_rows(tmp_path / "out" / "affinity_analysis") == ordered(COMMON + [FLASH])


def test_single_file_input_names_the_file(tmp_path):
    _, out = analyse(tmp_path, "2.8.0", PROJECT / "train.py")
    assert csv_rows(out) == [
        "train.py,6,6,torch,torch.optim.AdamW,torch_npu.optim.NpuFusedAdamW",
        "train.py,7,7,torch,torch.roll,torch_npu.contrib.function.roll",
    ]


def test_input_root_inside_a_package_keeps_the_package_in_qualified_names(tmp_path):
    _, out = analyse(tmp_path, "2.8.0", PROJECT / "pkg")
    assert [row for row in csv_rows(out) if "DropPath" in row] == [
        f"layers.py,5,11,{DROP_PATH}",
        f"model.py,14,14,{DROP_PATH}",
    ]


def test_src_layout_forward_references_and_shadowing(tmp_path):
    project = tmp_path / "proj"
    write(project / "src" / "models" / "__init__.py", "")
    write(
        project / "src" / "models" / "ops.py",
        textwrap.dedent("""\
        def make():
            return channel_shuffle(1, 2)  # defined further down


        def channel_shuffle(x, groups):
            return x
        """),
    )
    write(
        project / "src" / "train.py",
        textwrap.dedent("""\
        from models.ops import channel_shuffle
        import torch


        def step(torch, channel_shuffle):
            return torch.matmul(channel_shuffle(1, 2), 3)  # parameters, not the imports
        channel_shuffle(torch.roll(1, 2), 3)
        """),
    )
    result = run_cli("analyse", "-i", project, "-o", tmp_path / "out", "-m", "affinity_apis", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    name = "src.models.ops.channel_shuffle,torch_npu.contrib.module.ChannelShuffle"
    assert csv_rows(tmp_path / "out" / "proj_analysis") == [
        f"src/models/ops.py,2,2,function,{name}",
        f"src/models/ops.py,5,6,function,{name}",
        f"src/train.py,7,7,function,{name}",
        "src/train.py,7,7,torch,torch.roll,torch_npu.contrib.function.roll",
    ]


# -- the special: only an index that is plausibly a boolean condition tensor ---------------------


def special_rows(tmp_path, files):
    project = tmp_path / "proj"
    for name, text in files.items():
        write(project / name, textwrap.dedent(text))
    result = run_cli("analyse", "-i", project, "-o", tmp_path / "out", "-m", "affinity_apis", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    return csv_rows(tmp_path / "out" / "proj_analysis")


def test_special_needs_a_condition_index(tmp_path):
    rows = special_rows(
        tmp_path,
        {
            "masks.py": """\
        import torch as t


        def clean(x, y, cache, key, keep):
            mask = x > 0
            y[mask] = x  # mask bound to a comparison
            x[x > 0] = 0  # the condition written inline
            x[t.isnan(x)] = 0  # a boolean torch function through the alias
            for k in cache:
                cache[k] = y  # a dict keyed by a loop variable
            cache[key] = y  # ... by a parameter
            cache["name"] = y  # ... by a string
            x[keep] = y  # a parameter: not known to be a condition
            mask = x.float()
            x[mask] = y  # rebound to a non-condition after being a mask
        """
        },
    )
    assert rows == [f"masks.py,6,6,{SPECIAL}", f"masks.py,7,7,{SPECIAL}", f"masks.py,8,8,{SPECIAL}"]


def test_special_condition_forms_and_scopes(tmp_path):
    rows = special_rows(
        tmp_path,
        {
            "forms.py": """\
        import numpy as np
        from torch import isin, bool as torch_bool


        def forms(x, y, valid, d, key):
            both = (x > 0) & valid
            x[both] = 0  # a mask combined with another
            x[~both] = 1  # its negation
            x[x.gt(0)] = 0  # a boolean tensor method
            x[y.to(torch_bool)] = 0  # cast to bool
            x[isin(x, y)] = 0  # from torch import isin
            x[np.isnan(x)] = 0  # numpy, not torch: no row
            d[key in d] = 0  # 'in' gives a Python bool: no row
            x[both, 0] = 0  # a tuple index: no row
            a, b = x > 0, y
            x[a] = 0  # bound by tuple unpacking: no row
            if (w := x < 1) is not None:
                x[w] = 0  # bound by := to a comparison


        def outer(x):
            m = x > 0

            def inner(m):
                x[m] = 0  # inner's own parameter: no row

            x[m] = 0  # outer's mask
            del m
            x[m] = 0  # deleted: no row
        """
        },
    )
    lines = [7, 8, 9, 10, 11, 18, 27]
    assert rows == [f"forms.py,{n},{n},{SPECIAL}" for n in lines]


def test_special_needs_a_file_that_imports_torch(tmp_path):
    rows = special_rows(
        tmp_path,
        {
            "plain.py": """\
            import numpy as np


            def clip(x):
                x[x > 0] = 0
                mask = np.isnan(x)
                x[mask] = 0
            """,
            "late.py": """\
            def clip(x):
                x[x > 0] = 0


            def helper():
                import torch.nn.functional as F  # an import anywhere in the file counts
                return F
            """,
        },
    )
    assert rows == [f"late.py,2,2,{SPECIAL}"]


# -- small pieces ----------------------------------------------------------------------------


def arguments(signature: str) -> ast.arguments:
    return ast.parse(f"def f({signature}): pass").body[0].args


def test_parameter_names_keep_order_keyword_only_and_stars():
    assert parameter_names(arguments("self, a, /, b=1, *rest, c, **options")) == (
        "self",
        "a",
        "b",
        "*rest",
        "c",
        "**options",
    )
    assert parameter_names(arguments("x, *groups")) != parameter_names(arguments("x, groups"))


def test_base_check_compares_resolved_names_and_falls_back_to_the_written_suffix():
    assert base_matches("torch.nn.Module", [("torch.nn.Module", "nn.Module")])
    assert base_matches("torch.nn.Module", [("", "nn.Module")])  # nn not imported: compared as written
    assert not base_matches("torch.nn.Module", [("pkg.Module", "Module")])  # a project class named Module
    assert not base_matches("torch.nn.Module", [("", "mynn.Module")])


def test_relative_imports_resolve_from_the_module_or_package():
    assert relative_base("pkg.sub.mod", False, 1, "layers") == "pkg.sub.layers"
    assert relative_base("pkg.sub", True, 1, "layers") == "pkg.sub.layers"
    assert relative_base("pkg.sub.mod", False, 2, None) == "pkg"
    assert relative_base("pkg.mod", False, 3, "x") is None


def test_a_malformed_affinity_file_is_a_clear_error(tmp_path):
    path = write(tmp_path / "affinity.yaml", "entries:\n- match: call\n  type: torch\n  api: torch.roll\n")
    with pytest.raises(RuleFileError) as caught:
        parse_affinity(path)
    assert str(caught.value) == (
        f"{path}: entries[0]: missing field(s) replacement, source, versions; "
        "fix the rule file (see 'Rule files' in README.md)"
    )


# -- the data file and its generator -------------------------------------------------------


def gen_kb():
    spec = importlib.util.spec_from_file_location("gen_kb", REPO / "tools" / "gen_kb.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_kb", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_affinity_yaml_is_what_gen_kb_makes_of_the_kb_csv(tmp_path):
    regenerated = write(tmp_path / "affinity.yaml", gen_kb().render_affinity())
    assert (
        regenerated.read_bytes()
        == (REPO / "src" / "gpu2npu" / "modes" / "affinity_apis" / "affinity.yaml").read_bytes()
    )
    entries = parse_affinity(regenerated)
    assert not [e for e in entries if e.replacement.startswith("apex.") or e.api == "torch.nn.Linear"]


def test_generator_decisions_on_apex_conditional_and_class_rows(tmp_path):
    facts = write(
        tmp_path / "map.csv",
        textwrap.dedent(
            """\
        match_kind,original,match_detail,replacement,replacement_present_in_torch,evidence
        user-defined class,DropPath,"base=nn.Module; __init__=self,p; forward=self,x",m.NpuDropPath,1.11.0 """
            """2.8.0,MSAFF
        torch api call,torch.optim.Adam,,apex.optimizers.NpuFusedAdam,n/a,MSADV
        torch api call,torch.nn.Linear,when input is 2-D or 3-D,torch_npu.npu_linear,2.8.0,MSADV
        """
        ),
    )
    text = gen_kb().render_affinity(facts)
    assert "#   torch.optim.Adam -> apex.optimizers.NpuFusedAdam: apex replacement only\n" in text
    assert (
        "#   torch.nn.Linear -> torch_npu.npu_linear: conditional (when input is 2-D or 3-D), "
        "cannot be decided"
    ) in text
    path = write(tmp_path / "affinity.yaml", text)
    (drop_path, special) = parse_affinity(path)
    assert (drop_path.base, drop_path.init, drop_path.forward, drop_path.versions) == (
        "torch.nn.Module",
        ("self", "p"),
        ("self", "x"),
        ("1.11.0", "2.8.0"),
    )
    assert (special.match, special.call_name, special.versions[0]) == (
        "subscript_assign",
        "input[condition] = value",
        "1.11.0",
    )
