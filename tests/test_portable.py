"""--target portable: one device-agnostic tree for CUDA, NPU and CPU.

Snapshot pairs per version family (tests/fixtures_portable/<family>/<case>.py with
<case>.expected.py beside it; the first line names -v), and the proof by running: the portable
copy of each small training program prints the original's losses on the CPU with plain torch (no
torch_npu importable) and on the stand-in's NPU, whose torch_npu torch loads by itself."""

import io
import json
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from helpers import REPO, gpu2npu_command, run_cli
from test_standin import PROGRAMS, RUNNABLE, finish, free_port, losses, plain_env, require_torch, start

from gpu2npu.rewrite.engine import migrate_source
from gpu2npu.rules.index import compile_index
from gpu2npu.rules.loader import load_builtin_rules
from gpu2npu.styles import style_named
from gpu2npu.targets import target_named

FIXTURES = REPO / "tests" / "fixtures_portable"
# one version per family: before torch's autoload (guarded import), before torch.accelerator,
# the first torch.accelerator line torch_npu documents, the newest
FAMILIES = ("2.1.0", "2.5.1", "2.7.1", "2.8.0")
INPUTS = sorted(p for p in FIXTURES.glob("*.py") if not p.name.endswith(".expected.py"))
CASES = [(case, version) for case in INPUTS for version in FAMILIES]


def portable_index(version: str):
    rules = load_builtin_rules(target_named("portable").rules_for(style_named("full")))
    return compile_index(rules, version)


@pytest.mark.parametrize("case,version", CASES, ids=[f"{c.stem}-{v}" for c, v in CASES])
def test_portable_fixture(case, version):
    """<case>.py migrated for -v VERSION is <case>.VERSION.expected.py, and stays so."""
    data = case.read_bytes()
    index = portable_index(version)
    result = migrate_source(data, index, path=case.name)
    assert not result.skipped, result.skipped
    expected = case.with_name(f"{case.stem}.{version}.expected.py").read_bytes()
    assert result.new_bytes.decode() == expected.decode()
    again = migrate_source(result.new_bytes, index, path=case.name)
    assert again.new_bytes is None, f"a second migration changed {case.name}: {again.changes}"


def test_every_fixture_has_an_expected_file_per_family():
    expected = sorted(p.name for p in FIXTURES.glob("*.expected.py"))
    assert expected == sorted(f"{case.stem}.{version}.expected.py" for case, version in CASES)
    assert len(CASES) == 8


# -- the programs: cuda words a portable tree must not hold ------------------------------------------


def cuda_uses(code: str):
    """(line, text) of each CUDA-specific use outside comments and docstrings: torch.cuda,
    .cuda(, a 'cuda' device string, a 'nccl' backend string."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type != tokenize.NL]
    found = []
    for number, token in enumerate(tokens):
        following = [t.string for t in tokens[number + 1 : number + 3]]
        if token.type == tokenize.STRING and not token.string.startswith(('"""', "'''")):
            value = token.string.strip("'\"rbfu")
            if value in ("cuda", "nccl") or value.startswith("cuda:"):
                found.append((token.start[0], token.string))
        elif token.string == "cuda" and number and tokens[number - 1].string == ".":
            before = tokens[number - 2].string if number > 1 else ""
            if before == "torch" or following[:1] == ["("]:
                found.append((token.start[0], f"{before}.cuda{following[0]}"))
    return found


def portable_copy(name: str, version: str, tmp_path: Path) -> Path:
    original = tmp_path / name
    shutil.copytree(PROGRAMS / name, original)
    result = run_cli("migrate", "-i", original, "-o", tmp_path / "out", "-v", version, "--target", "portable")
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / f"{name}_msft"


PROOF = ["mnist", "word_language_model", "ddp", "amp"]


@pytest.mark.parametrize("version", ["2.8.0", "2.1.0"])
@pytest.mark.parametrize("name", PROOF)
def test_portable_program_runs_on_the_cpu_and_on_the_npu_with_the_original_losses(name, version, tmp_path):
    require_torch()
    arguments, devices, original_first, npu_first = RUNNABLE[name]
    portable = portable_copy(name, version, tmp_path)
    code = "\n".join(p.read_text() for p in sorted(portable.glob("*.py")))
    assert "import torch_npu\n" not in code.replace("    import torch_npu  # noqa: F401\n", "")
    if version == "2.8.0":
        assert [use for p in portable.glob("*.py") for use in cuda_uses(p.read_text())] == []

    def command(program: Path, prefix=()):
        filled = [a.format(out=".", port=free_port()) for a in arguments]
        return [*prefix, sys.executable, str(program / "main.py"), *filled]

    standin = gpu2npu_command() + ["run", "--devices", str(devices), "--"]
    runs = [
        start(command(PROGRAMS / name), tmp_path / "original_run", plain_env()),
        start(command(portable), tmp_path / "cpu_run", plain_env()),
        start(command(portable, standin), tmp_path / "npu_run", plain_env()),
    ]
    original_out, _ = finish(runs[0])
    cpu_out, _ = finish(runs[1])
    npu_out, _ = finish(runs[2])
    assert original_out.splitlines()[0] == original_first
    assert cpu_out.splitlines()[0] == original_first  # no accelerator: the CPU, as the original
    assert npu_out.splitlines()[0] == npu_first  # the stand-in's NPU: tensors report npu
    assert cpu_out.splitlines()[1:] == original_out.splitlines()[1:]
    assert npu_out.splitlines()[1:] == original_out.splitlines()[1:]
    assert len(losses(original_out)) >= 10


def test_check_portable_passes_the_portable_copy_and_finds_each_cuda_use_of_the_original(tmp_path):
    portable = portable_copy("ddp", "2.8.0", tmp_path)
    clean = run_cli("check", "--target", "portable", portable)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.splitlines()[-1].startswith("0 finding(s)")
    found = run_cli("check", "--target", "portable", "--format", "json", tmp_path / "ddp")
    assert found.returncode == 1
    rows = [(f["line"], f["rule"]) for f in json.loads(found.stdout)["findings"]]
    assert rows == [(22, "G2N906"), (22, "G2N920"), (52, "G2N920"), (54, "G2N923"), (55, "G2N905")]


def test_portable_refuses_the_npu_only_modes(tmp_path):
    result = run_cli(
        "migrate", "-i", PROGRAMS / "mnist", "-o", tmp_path, "--target", "portable", "--mode", "auto"
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "gpu2npu: error: --target portable does not work with --mode auto; use --mode full, or --target npu"
    )
    assert not (tmp_path / "mnist_msft").exists()


def test_the_example_goes_portable_and_its_utilities_import_on_cpu_and_npu(tmp_path):
    require_torch()
    result = run_cli(
        "migrate", "-i", REPO / "examples" / "cifar_resnet", "-o", tmp_path, "--target", "portable"
    )
    assert result.returncode == 0, result.stderr
    tree = tmp_path / "cifar_resnet_msft"
    assert [use for p in tree.glob("*.py") for use in cuda_uses(p.read_text())] == []
    probe = [sys.executable, "-c", "import utils; print(utils.DEVICE_TYPE, utils.get_device(0))"]
    cpu = subprocess.run(probe, cwd=tree, env=plain_env(), capture_output=True, text=True)
    npu = subprocess.run(
        gpu2npu_command() + ["run", "--", *probe], cwd=tree, env=plain_env(), capture_output=True, text=True
    )
    assert (cpu.returncode, cpu.stdout) == (0, "cpu cpu\n"), cpu.stderr
    assert (npu.returncode, npu.stdout) == (0, "npu npu:0\n"), npu.stderr
