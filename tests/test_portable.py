"""--target portable: one device-agnostic tree for CUDA, NPU and CPU.

Snapshot pairs per version family (tests/fixtures_portable/<family>/<case>.py with
<case>.expected.py beside it; the first line names -v), and the proof by running: the portable
copy of each small training program prints the original's losses on the CPU with plain torch (no
torch_npu importable) and on the stand-in's NPU, whose torch_npu torch loads by itself."""

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from helpers import REPO, gpu2npu_command, rows, run_cli, write
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
    assert len(CASES) == 20


# -- the programs: cuda words a portable tree must not hold ------------------------------------------


# The binding of DEVICE_MODULE names torch.cuda as the module of a machine without an accelerator
# (torch.cpu has no memory or seeding functions): the original's answers there, no CUDA use.
CPU_FALLBACK = "DEVICE_MODULE = torch.get_device_module(ACCELERATOR or 'cuda')"


def cuda_uses(code: str):
    """(line, text) of each CUDA-specific use outside comments and docstrings: torch.cuda,
    .cuda(, a 'cuda' device string, a 'nccl' backend string."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type != tokenize.NL]
    found = []
    for number, token in enumerate(tokens):
        if token.line.strip() == CPU_FALLBACK:
            continue
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


def example_copy(tmp_path: Path, target: str) -> Path:
    out = tmp_path / f"{target}_tree"
    result = run_cli(
        "migrate", "-i", REPO / "examples" / "cifar_resnet", "-o", out, "-v", "2.8.0", "--target", target
    )
    assert result.returncode == 0, result.stderr
    return out / "cifar_resnet_msft"


def without_timings(stdout: str):
    return [re.sub(r" \| [0-9.]+s$", "", line) for line in stdout.splitlines()]


def test_the_example_trains_portable_on_the_cpu_as_the_original_and_on_the_npu_as_the_npu_port(tmp_path):
    """The example on synthetic data, one epoch. On the CPU the portable tree takes the original's
    CPU path; on the stand-in's NPU it takes the accelerator path (warm-up steps, fp16 autocast in
    evaluation), which the original takes only on a GPU, so its twin there is the npu port."""
    require_torch()
    portable = example_copy(tmp_path, "portable")
    npu_port = example_copy(tmp_path, "npu")
    assert [use for p in portable.glob("*.py") for use in cuda_uses(p.read_text())] == []
    smoke = ["--synthetic", "--epochs", "1", "--workers", "0", "--batch-size", "16", "--out-dir", "."]
    standin = gpu2npu_command() + ["run", "--"]
    example = REPO / "examples" / "cifar_resnet"
    runs = [
        start(
            [sys.executable, example / "train.py", "--device", "cpu", *smoke],
            tmp_path / "original",
            plain_env(),
        ),
        start([sys.executable, portable / "train.py", *smoke], tmp_path / "cpu", plain_env()),
        start([*standin, sys.executable, portable / "train.py", *smoke], tmp_path / "npu", plain_env()),
        start(
            [*standin, sys.executable, npu_port / "train.py", "--device", "npu", *smoke],
            tmp_path / "npu_port",
            plain_env(),
        ),
    ]
    original, cpu, npu, npu_port_run = (without_timings(finish(run)[0]) for run in runs)
    assert "model on cpu" in original
    assert cpu == original
    assert "model on npu:0" in npu
    assert npu == npu_port_run
    assert len([line for line in original if " loss " in line]) == 2  # the first step, the epoch
    checkpoints = ["checkpoint.pth", "model_best.pth", "resnet18_cifar_fp16.pth"]
    for run in ("original", "cpu", "npu", "npu_port"):
        assert sorted(p.name for p in (tmp_path / run).iterdir()) == checkpoints


TRAIN_WITH_VARIABLES = '''import os

import torch

os.environ['CUDA_VISIBLE_DEVICES'] = '0'
os.environ.setdefault('NCCL_SOCKET_IFNAME', 'eth0')


def double(x):
    """Doubles on the GPU; reads nothing of CUDA_VISIBLE_DEVICES."""
    return x * 2 if x.is_cuda else torch.zeros_like(x)
'''
LOADER = """class Loader:
    def __init__(self, cuda):
        self.is_cuda = cuda

    def move(self, x):
        return x.pin_memory() if self.is_cuda else x
"""
VISIBLE_TIP = (
    "selects NVIDIA GPUs only: on Ascend NPUs set ASCEND_RT_VISIBLE_DEVICES as well (the same "
    "comma-separated ids), or the process sees every NPU"
)
IFNAME_TIP = (
    "NCCL's network interface; HCCL does not read it: set HCCL_SOCKET_IFNAME (or HCCL_IF_IP) for the "
    "interface HCCL uses to initialise (CANN environment variables)"
)


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_device_variables_and_is_cuda_reads_are_reported_where_no_rewrite_is_right(target, tmp_path):
    """Portable: CUDA_VISIBLE_DEVICES stays (it selects the GPUs) and is reported with the Ascend
    variable, in the launcher and in Python; x.is_cuda is reported. The npu target renames both.
    A variable no rule renames (NCCL_SOCKET_IFNAME) is reported in Python under either target;
    a docstring naming a variable is prose; is_cuda of a module assigning it is its own."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(TRAIN_WITH_VARIABLES)
    (project / "run.sh").write_text("export CUDA_VISIBLE_DEVICES=0,1\npython train.py\n")
    (project / "loader.py").write_text(LOADER)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    rows = list(csv.reader((out / "transplant_result_file" / "manual_work.csv").open()))
    assert rows[0] == [
        "File",
        "Start Line",
        "End Line",
        "Subject",
        "Tips",
        "Category",
        "Rule",
        "File Kind",
        "Cell",
    ]
    ifname = ["train.py", "6", "6", "NCCL_SOCKET_IFNAME", IFNAME_TIP, "limited", "G2N810", "python", ""]
    if target == "npu":
        assert rows[1:] == [ifname]
        assert "os.environ['ASCEND_RT_VISIBLE_DEVICES'] = '0'\n" in (out / "train.py").read_text()
        return
    is_cuda_tip = (
        "False for a tensor on an Ascend NPU (or any accelerator but CUDA): test x.device.type == "
        "ACCELERATOR (the accelerator's device type, bound by gpu2npu), or x.device.type != 'cpu'"
    )
    assert rows[1:] == [
        ["run.sh", "1", "1", "CUDA_VISIBLE_DEVICES", VISIBLE_TIP, "limited", "G2N970", "shell", ""],
        ["train.py", "5", "5", "CUDA_VISIBLE_DEVICES", VISIBLE_TIP, "limited", "G2N970", "python", ""],
        ifname,
        ["train.py", "11", "11", "x.is_cuda", is_cuda_tip, "limited", "G2N980", "python", ""],
    ]
    assert (out / "run.sh").read_bytes() == (project / "run.sh").read_bytes()
    check = run_cli("check", "--target", "portable", "--format", "json", ".", cwd=out)
    assert check.returncode == 1
    found = [(f["file"], f["line"], f["rule"]) for f in json.loads(check.stdout)["findings"]]
    assert found == [
        ("run.sh", 1, "G2N970"),
        ("train.py", 5, "G2N970"),
        ("train.py", 6, "G2N810"),
        ("train.py", 11, "G2N980"),
    ]


OPTIONAL_TORCH = """\
import os
try:
    import torch
    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False


def device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


OPTIONAL_TORCH_THEN_IMPORTS = """\
try:
    import torch
except ImportError:
    torch = None
try:
    import cv2
except ImportError:
    cv2 = None
import sys


def device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu"), sys.platform
"""


@pytest.mark.parametrize("version", ["2.8.0", "2.1.0"])
def test_the_imports_after_an_optional_torch_are_kept_where_the_bindings_go_into_it(version, tmp_path):
    """pytorchvideo's notebooks import torch in a try, then cv2 in another: the bindings went into
    the first try and the import blocks after it were dropped, so the copy failed with NameError
    on sys. Every statement stays."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "optional.py").write_text(OPTIONAL_TORCH_THEN_IMPORTS)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", "portable", "-v", version)
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "proj_msft" / "optional.py").read_text()
    before, after = OPTIONAL_TORCH_THEN_IMPORTS.split("except ImportError:\n    torch = None\n")
    assert migrated.startswith("try:\n    import torch\n")
    assert migrated.split("except ImportError:\n    torch = None\n")[1] == after.replace(
        'torch.device("cuda" if torch.cuda.is_available()',
        {"2.8.0": "torch.device(DEVICE_TYPE if torch.accelerator.is_available()"}.get(
            version, "torch.device(DEVICE_TYPE if DEVICE_MODULE.is_available()"
        ),
    )


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_module_whose_torch_is_optional_still_imports_where_torch_is_missing(target, tmp_path):
    """The portable bindings (and torch_npu) go into the ``try`` that imports torch: before, they
    went above it, and importing the copy raised NameError. Where torch is installed the copy
    still picks the CPU on a machine without an accelerator."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "optional.py").write_text(OPTIONAL_TORCH)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    copy = tmp_path / "out" / "proj_msft"
    without_torch = "import sys; sys.modules['torch'] = None; import optional; print(optional.HAS_TORCH)"
    ran = subprocess.run([sys.executable, "-c", without_torch], cwd=copy, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "False\n", "")
    if target == "portable":
        require_torch()
        with_torch = "import optional; print(optional.HAS_TORCH, optional.device())"
        ran = subprocess.run(
            [sys.executable, "-c", with_torch], cwd=copy, capture_output=True, text=True, env=plain_env()
        )
        assert (ran.returncode, ran.stdout) == (0, "True cpu\n"), ran.stderr


def migrated_body(source: str, path: str):
    """(the migration of a module to portable code, its text after the bound names)."""
    result = migrate_source(source.encode(), portable_index("2.8.0"), path=path)
    return result, result.new_bytes.decode().split("DEVICE_TYPE = ACCELERATOR or 'cpu'\n", 1)[1]


def run_in(folder: Path, name: str, code: bytes) -> subprocess.CompletedProcess:
    """Run a migrated module with plain torch (no stand-in) in ``folder``."""
    require_torch()
    (folder / name).write_bytes(code)
    return subprocess.run([sys.executable, name], cwd=folder, capture_output=True, text=True, env=plain_env())


def test_an_f_string_without_fields_is_named_like_the_plain_literal():
    """``th.device(f"cuda")`` (guided-diffusion's dist_util) stayed CUDA while its guard became the
    accelerator's, so an NPU machine got a CUDA device; it is the literal 'cuda'."""
    source = (
        "import torch\n\n\ndef dev():\n    if torch.cuda.is_available():\n"
        '        return torch.device(f"cuda")\n    return torch.device("cpu")\n\n\n'
        'def on_gpu(x):\n    return x == f"cuda"\n'
    )
    result, body = migrated_body(source, "util.py")
    assert body == (
        "\n\ndef dev():\n    if torch.accelerator.is_available():\n"
        "        return torch.device(DEVICE_TYPE)\n"
        '    return torch.device("cpu")\n\n\ndef on_gpu(x):\n    return x == ACCELERATOR\n'
    )
    assert [(c.start_line, c.message) for c in result.changes if c.rule == "G2N905"] == [
        (6, 'replace string f"cuda" with DEVICE_TYPE'),
        (11, 'replace string f"cuda" with ACCELERATOR'),
    ]


PREFIX_TEST = (
    "import torch\n"
    'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    'use_gpu = device.startswith("cuda")\n'
    'either = device.startswith(("cuda", "mps"))\n'
    'first = device.startswith("cuda:0")\n'
    "print(use_gpu, either, first)\n"
)


def test_a_device_string_tested_for_its_prefix_asks_for_the_accelerator_and_stays_false_on_the_cpu(tmp_path):
    """stylegan2's ``use_gpu=device.startswith("cuda")`` became ``startswith(DEVICE_TYPE)``, True on
    a CPU host, so lpips wrapped itself in DataParallel there; a prefix test compares, as ``==``."""
    result, body = migrated_body(PREFIX_TEST, "ppl.py")
    assert body == (
        'device = DEVICE_TYPE if torch.accelerator.is_available() else "cpu"\n'
        "use_gpu = device.startswith(str(ACCELERATOR))\n"
        'either = device.startswith((str(ACCELERATOR), "mps"))\n'
        'first = device.startswith(f"{ACCELERATOR}:0")\n'
        "print(use_gpu, either, first)\n"
    )
    ran = run_in(tmp_path, "ppl.py", result.new_bytes)
    assert (ran.returncode, ran.stdout) == (0, "False False False\n"), ran.stderr


INDEXED_LOADS = (
    "import torch\n"
    'gpu, p = 0, "m.pt"\n'
    'a = torch.load(p, map_location="cuda:" + str(gpu))\n'
    'b = torch.load(p, map_location=torch.device(f"cuda:{gpu}"))\n'
    'c = torch.load(p, map_location="cuda:0" if torch.cuda.is_available() else "cpu")\n'
    'd = torch.load(p, map_location="cuda")\n'
    "print(a + b + c + d)\n"
)


def test_an_indexed_map_location_falls_back_to_the_cpu_without_an_accelerator(tmp_path):
    """swav's ``map_location="cuda:" + str(gpu)`` became 'cpu:0' on a CPU host, which torch.load
    refuses (``don't know how to restore data location``); a program that picks the CPU itself
    and an unindexed device are left as they are."""
    result, body = migrated_body(INDEXED_LOADS, "eval.py")
    assert body == (
        'gpu, p = 0, "m.pt"\n'
        'a = torch.load(p, map_location=f"{DEVICE_TYPE}:" + str(gpu) if ACCELERATOR else "cpu")\n'
        'b = torch.load(p, map_location=torch.device(f"{DEVICE_TYPE}:{gpu}") if ACCELERATOR else "cpu")\n'
        'c = torch.load(p, map_location=f"{DEVICE_TYPE}:0" if torch.accelerator.is_available() else "cpu")\n'
        "d = torch.load(p, map_location=DEVICE_TYPE)\n"
        "print(a + b + c + d)\n"
    )
    fallback = ', or "cpu" without an accelerator (torch.load refuses an indexed cpu)'
    assert [c.message.endswith(fallback) for c in result.changes if c.rule == "G2N905"] == [
        True,
        True,
        False,
        False,
    ]
    require_torch()
    import torch

    torch.save(torch.ones(2), tmp_path / "m.pt")
    ran = run_in(tmp_path, "eval.py", result.new_bytes)
    assert (ran.returncode, ran.stdout) == (0, "tensor([4., 4.])\n"), ran.stderr


PCA_APPLY = """import torch


class PCA:
    def apply(self, x):
        if x.is_cuda:
            x -= torch.cuda.FloatTensor(self.mean)
            return torch.mm(torch.cuda.FloatTensor(self.dvt), x.transpose(0, 1)).transpose(0, 1)
        x -= torch.FloatTensor(self.mean)
        return torch.mm(torch.FloatTensor(self.dvt), x.transpose(0, 1)).transpose(0, 1)

    def norm(self, x):
        if x.is_cuda:
            return x / torch.cuda.FloatTensor(self.scale)
        return x / 2
"""


def test_a_tensors_cuda_test_whose_other_side_mixes_it_with_cpu_tensors_is_an_error(tmp_path):
    """dino's PCA.apply: on an NPU the features are on the NPU, x.is_cuda is False, and the CPU
    side multiplies them with a torch.FloatTensor: 'Expected all tensors to be on the same
    device'. The kept test was a warning saying the NPU skips the CUDA side as a CPU machine does."""
    write(tmp_path / "proj" / "pca.py", PCA_APPLY)
    out = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--target", "portable", "--no-cache"
    )
    assert out.returncode == 0, out.stderr
    found = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[1], row[3], row[5]) for row in found[1:]] == [
        ("6", "torch.Tensor.is_cuda", "unsupported"),
        ("7", "torch.cuda.FloatTensor", "supported_with_limits"),
        ("8", "torch.cuda.FloatTensor", "supported_with_limits"),
        ("13", "torch.Tensor.is_cuda", "supported_with_limits"),
        ("14", "torch.cuda.FloatTensor", "supported_with_limits"),
    ]


AUTOCAST_BY_POSITION = (
    "import torch\n"
    "from torch.cuda import amp\n\n\n"
    "def forward(net, x, use_amp):\n"
    "    with amp.autocast(use_amp):\n"
    "        return net(x)\n\n\n"
    "def forward_args(net, x, args):\n"
    "    with torch.cuda.amp.autocast(*args):\n"
    "        return net(x)\n"
)


def test_autocast_given_its_flag_by_position_gets_it_as_enabled_and_runs(tmp_path):
    """yolov9's ``torch.cuda.amp.autocast(amp)``: torch.autocast's second parameter is dtype, so
    ``torch.autocast(DEVICE_TYPE, amp)`` raised TypeError at the first forward, amp on or off."""
    result = migrate_source(AUTOCAST_BY_POSITION.encode(), portable_index("2.8.0"), path="train.py")
    new = result.new_bytes.decode()
    assert "    with torch.autocast(DEVICE_TYPE, enabled=use_amp):\n" in new
    assert "    with torch.autocast(DEVICE_TYPE, *args):\n" in new
    assert [(k.line, k.works, k.tip) for k in result.kept if k.rule_id == "G2N910"] == [
        (
            11,
            False,
            "positional arguments through *args: pass them by keyword (enabled, dtype, cache_enabled)",
        )
    ]
    require_torch()
    (tmp_path / "train.py").write_text(new)
    program = "import torch, train\nnet = torch.nn.Linear(2, 2)\nx = torch.ones(1, 2)\n" + "".join(
        f"print(train.forward(net, x, {flag}).dtype)\n" for flag in (True, False)
    )
    ran = subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, env=plain_env()
    )
    assert (ran.returncode, ran.stdout) == (0, "torch.bfloat16\ntorch.float32\n"), ran.stderr


NCCL_IN_CAPITALS = """\
import os

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
dist.init_process_group(backend="NCCL", world_size=1, rank=0)
x = torch.ones(2)
dist.all_reduce(x)
print(dist.get_backend(), x.tolist())
dist.destroy_process_group()
"""


def test_the_nccl_backend_named_in_capitals_becomes_the_device_s_backend(tmp_path):
    """vq-vae-2-pytorch's launcher passes backend="NCCL" (torch reads backend names in any case):
    the portable tree kept it, with no row, so every process stopped at init_process_group on the
    NPU ("Distributed package doesn't have NCCL built in"), as on a CPU host. It becomes the
    device's default backend, as 'nccl' does: on the CPU the portable program runs on gloo, where
    the original fails."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "launch.py").write_text(NCCL_IN_CAPITALS)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", "portable")
    assert result.returncode == 0, result.stderr
    portable = tmp_path / "out" / "proj_msft" / "launch.py"
    assert "dist.init_process_group(backend=DIST_BACKEND, world_size=1, rank=0)\n" in portable.read_text()
    require_torch()
    env = {**plain_env(), "MASTER_PORT": str(free_port())}
    runs = [
        subprocess.run([sys.executable, path], cwd=tmp_path, capture_output=True, text=True, env=env)
        for path in (project / "launch.py", portable)
    ]
    assert runs[0].returncode != 0 and "NCCL" in runs[0].stderr
    assert (runs[1].returncode, runs[1].stdout) == (0, "gloo [1.0, 1.0]\n"), runs[1].stderr


DEFAULT_TYPE = """\
import torch

if torch.cuda.is_available():
    torch.set_default_tensor_type('torch.cuda.FloatTensor')
else:
    torch.set_default_tensor_type("torch.FloatTensor")
\"\"\"Sets torch.cuda.FloatTensor as the default.\"\"\"
"""


def test_a_cuda_tensor_type_named_by_a_string_is_kept_and_reported(tmp_path):
    """ssd.pytorch: the accelerator guard ran set_default_tensor_type('torch.cuda.FloatTensor') on
    the NPU, where the string names no type, and no row said so. The string stays (no one string
    names a type of every device) and gets a row with the device-agnostic calls; the CPU's type and
    the docstring get none."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(DEFAULT_TYPE)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", "portable")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "train.py").read_text() == DEFAULT_TYPE.replace(
        "torch.cuda.is_available()", "torch.accelerator.is_available()"
    )
    rows = list(csv.reader((out / "transplant_result_file" / "manual_work.csv").open()))
    tip = (
        "a legacy CUDA tensor type by name, CUDA only (no one string names a type of every device): "
        "instead of torch.set_default_tensor_type('torch.cuda.FloatTensor'), "
        "torch.set_default_dtype(torch.float32) and torch.set_default_device(DEVICE_TYPE); instead of "
        "x.type('torch.cuda.HalfTensor'), x.to(DEVICE_TYPE, torch.float16) (DEVICE_TYPE: bound by "
        "gpu2npu, or torch.accelerator)"
    )
    assert rows[1:] == [
        ["train.py", "4", "4", "torch.cuda.FloatTensor", tip, "unsupported", "G2N982", "python", ""]
    ]
    check = run_cli("check", "--target", "portable", "--format", "json", ".", cwd=out)
    assert check.returncode == 1
    found = [(f["file"], f["line"], f["rule"]) for f in json.loads(check.stdout)["findings"]]
    assert found == [("train.py", 4, "G2N982")]


TENSORRT_STREAMS = """import torch


def run(context):
    s = torch.cuda.Stream()
    context.execute_async_v3(s.cuda_stream)
    handle = torch.cuda.current_stream().cuda_stream
    return handle, torch.cuda.Stream()
"""


def test_a_cuda_stream_whose_raw_handle_is_read_stays_a_cuda_stream(tmp_path):
    """flux's TensorRT engine passes ``s.cuda_stream`` to TensorRT: torch.Stream (and the stream
    torch.accelerator.current_stream gives) has no ``cuda_stream``, so the portable tree failed on
    CUDA. Those two stay torch.cuda's and are reported; a stream nobody reads that of changes."""
    write(tmp_path / "proj" / "engine.py", TENSORRT_STREAMS)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--target", "portable")
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "proj_msft" / "engine.py").read_text()
    assert migrated == TENSORRT_STREAMS.replace("handle, torch.cuda.Stream()", "handle, torch.Stream()")
    found = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[1], row[3], row[-1]) for row in found[1:]] == [
        ("5", "torch.cuda.Stream", "rules:G2N995"),
        ("7", "torch.cuda.current_stream", "rules:G2N996"),
    ]


COMPARED_BACKEND = """import sys
import torch
import torch.distributed as dist


def synchronize():
    if dist.get_backend() == dist.Backend.NCCL:
        dist.barrier(device_ids=[torch.cuda.current_device()])
    else:
        dist.barrier()


def extra_group():
    if dist.get_backend() == "nccl":
        return dist.new_group(backend="gloo")
    return dist.group.WORLD


if __name__ == "__main__":
    dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
    synchronize()
    print(extra_group() is dist.group.WORLD, "nccl" in dist.get_backend())
"""


def test_a_compared_nccl_backend_asks_for_the_accelerators_backend(tmp_path):
    """detectron2's comm.synchronize: ``dist.get_backend() == dist.Backend.NCCL`` became ``==
    DIST_BACKEND``, which is gloo on a CPU, so the NCCL-only barrier ran there and failed. Compared,
    NCCL becomes ACCELERATOR_BACKEND (None without an accelerator). Proof by running the portable
    program on this machine's CPU, where the original's answers must come back."""
    write(tmp_path / "proj" / "comm.py", COMPARED_BACKEND)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--target", "portable")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    bindings = (
        "ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() "
        "else None\nDEVICE_TYPE = ACCELERATOR or 'cpu'\n"
        "DIST_BACKEND = torch.distributed.get_default_backend_for_device(DEVICE_TYPE)\n"
        "ACCELERATOR_BACKEND = DIST_BACKEND if ACCELERATOR else None\n"
    )
    expected = (
        COMPARED_BACKEND.replace("as dist\n", "as dist\n" + bindings, 1)
        .replace("== dist.Backend.NCCL", "== ACCELERATOR_BACKEND")
        .replace('== "nccl"', "== ACCELERATOR_BACKEND")
        .replace('"nccl" in', "str(ACCELERATOR_BACKEND) in")
        .replace("torch.cuda.current_device()", "torch.accelerator.current_device_index()")
    )
    assert (out / "comm.py").read_text() == expected
    pytest.importorskip("torch")
    for tree in (tmp_path / "proj", out):
        run = subprocess.run(
            [sys.executable, "comm.py", tmp_path / f"store-{tree.name}"],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        assert (run.returncode, run.stdout) == (0, "True False\n"), run.stderr


HOST_ONLY = """\
import torch


@torch.inference_mode()
def evaluate(model, x):
    return model(torch.Size([2]) and x.cuda())


if __name__ == "__main__":
    print(evaluate(torch.nn.Linear(2, 2).cuda(), torch.ones(2)))
"""


@pytest.mark.parametrize("options", [["--target", "portable"], ["--mode", "auto"]])
def test_host_only_apis_are_supported_in_every_tree(tmp_path, options):
    """torch.inference_mode and torch.Size never reach a device: the portable and the auto trees
    read the host API rules too (G2N170) instead of calling them "not validated on NPU"."""
    write(tmp_path / "proj" / "train.py", HOST_ONLY)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", *options)
    assert result.returncode == 0, result.stderr
    reports = tmp_path / "out" / "proj_msft" / "transplant_result_file"
    assert [row[3] for row in rows(reports / "unknown_api.csv")] == ["OP"]


RNG_TRACKER = """\
import torch

torch.manual_seed(1234)
# Megatron's RNG tracker (GLM's mpu/random.py): the device draws from a per-rank seed, and only
# the device's state is restored
state = torch.cuda.get_rng_state() if torch.cuda.is_available() else None
torch.cuda.manual_seed(1234 + 2718 + 1)
torch.cuda.manual_seed_all(42)
if state is not None:
    torch.cuda.set_rng_state(state)
print(torch.randn(3).tolist())
"""


@pytest.mark.parametrize("version", ["2.8.0", "2.5.1"])
def test_seeding_the_device_leaves_the_cpus_generator_alone(version, tmp_path):
    """torch.cuda.manual_seed(_all) became torch.manual_seed from 2.7.1, which reseeds the CPU: GLM's
    replicated weights, built on the CPU after the tracker seeded each model-parallel rank's device,
    differed across ranks. The CPU draws of the portable copy are the original's, on the CPU and on
    the emulated NPU."""
    result = migrate_source(RNG_TRACKER.encode(), portable_index(version), path="tracker.py")
    new = result.new_bytes.decode()
    assert "DEVICE_MODULE.manual_seed(1234 + 2718 + 1)\nDEVICE_MODULE.manual_seed_all(42)\n" in new
    require_torch()
    (tmp_path / "original.py").write_text(RNG_TRACKER)
    (tmp_path / "portable.py").write_text(new)
    runs = [
        subprocess.run([sys.executable, name], cwd=tmp_path, capture_output=True, text=True, env=plain_env())
        for name in ("original.py", "portable.py")
    ]
    runs.append(run_cli("run", "--", sys.executable, "portable.py", cwd=tmp_path))
    assert [run.returncode for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    assert runs[1].stdout == runs[2].stdout == runs[0].stdout


SET_DEVICE_OF_A_MANAGER = """\
import os
import torch

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
if torch.cuda.is_available():
    torch.cuda.set_device(torch.cuda.device(local_rank))
    print("device", torch.cuda.current_device())
else:
    print("cpu")
"""


@pytest.mark.parametrize("version", ["2.8.0", "2.5.1"])
def test_set_device_of_a_device_manager_gets_its_index(version, tmp_path):
    """nanotron's ``torch.cuda.set_device(torch.cuda.device(i))``: torch.accelerator.set_device_index
    takes an int, a str or a torch.device and raised ValueError on the manager, at the start of every
    run, on CUDA as on NPU. The index is passed as it is; the copy runs on the CPU and the NPU."""
    result = migrate_source(SET_DEVICE_OF_A_MANAGER.encode(), portable_index(version), path="setup.py")
    new = result.new_bytes.decode()
    expected = {
        "2.8.0": "torch.accelerator.set_device_index(local_rank)",
        "2.5.1": "DEVICE_MODULE.set_device(local_rank)",
    }
    assert f"    {expected[version]}\n" in new
    require_torch()
    (tmp_path / "setup.py").write_text(new)
    cpu = subprocess.run(
        [sys.executable, "setup.py"], cwd=tmp_path, capture_output=True, text=True, env=plain_env()
    )
    npu = run_cli("run", "--", sys.executable, "setup.py", cwd=tmp_path)
    assert (cpu.returncode, cpu.stdout, npu.returncode, npu.stdout) == (0, "cpu\n", 0, "device 0\n"), (
        npu.stderr
    )


OPTION_RECORD = """\
import torch


def setup(cpu=True, cuda=False):
    return {"enabled": True, "cpu": cpu, "cuda": cuda}, torch.device("cuda" if cuda else "cpu")


print(setup()[0])
"""


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_a_dict_key_naming_the_variable_it_maps_is_no_device(target, tmp_path):
    """torchtune's profiler settings, ``DictConfig({"cpu": cpu, "cuda": cuda, ...})``: a record of
    the function's options. Portable made the key ACCELERATOR, None on a CPU, which OmegaConf
    refuses (KeyValidationError); the NPU target renamed an option ("npu": cuda)."""
    write(tmp_path / "profiler.py", OPTION_RECORD)
    result = run_cli("migrate", "-i", tmp_path / "profiler.py", "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "profiler_msft" / "profiler.py").read_text()
    device = {"npu": '"npu"', "portable": "DEVICE_TYPE"}[target]
    assert (
        f'    return {{"enabled": True, "cpu": cpu, "cuda": cuda}}, torch.device({device} if cuda else'
        in migrated
    )
    require_torch()
    run = subprocess.run(
        [sys.executable, "-c", migrated.replace("import torch_npu\n", "")],
        capture_output=True,
        text=True,
        env=plain_env(),
    )
    assert (run.returncode, run.stdout) == (0, "{'enabled': True, 'cpu': True, 'cuda': False}\n"), run.stderr


MATCH_ON_DEVICE = """\
import torch


def props(device_type):
    match device_type:
        case "cuda":
            return torch.cuda.get_device_properties(0).multi_processor_count
        case "xpu":
            return 1
        case _:
            return 0
"""


@pytest.mark.parametrize("target,pattern", [("portable", 'case "cuda":'), ("npu", 'case "npu":')])
def test_a_case_pattern_keeps_a_literal(tmp_path, target, pattern):
    """Megatron-LM's batch_invariant_kernels.py: portable wrote ``case DEVICE_TYPE:``, a capture
    pattern Python refuses before other cases (the file was copied with an internal error, exit 1)."""
    write(tmp_path / "proj" / "kernels.py", MATCH_ON_DEVICE)
    args = ("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache", "--target", target)
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert f"        {pattern}\n" in (out / "kernels.py").read_text()
    table = rows(out / "transplant_result_file" / "unsupported_api.csv")
    kept = [(row[1], row[3], row[5]) for row in table[1:] if row[3] == "'cuda'"]
    assert kept == ([("6", "'cuda'", "supported_with_limits")] if target == "portable" else [])
