"""--target portable on patterns of real repositories: what the portable tree made of them could
fail on an NPU or on the CPU, or was left unreported.

* legacy CUDA tensor types (``isinstance(x, torch.cuda.HalfTensor)``,
  ``set_default_tensor_type(torch.cuda.FloatTensor)``) are reported wherever they are named;
  ``torch.cuda.default_generators`` and names imported from torch.cuda (``from torch.cuda import
  empty_cache``) move to the device module, which is torch.cuda where there is no accelerator
  (torch.cpu has no empty_cache: the portable tree failed on the CPU);
* ``'nccl' if dist.is_nccl_available() else 'gloo'`` picks the accelerator's backend;
* implementation selectors (stylegan2-ada's ``impl='cuda'``) stay, as in the npu target;
* CLIP's JIT patching compares graph strings with 'cuda': kept, as in the npu target;
* a notebook's bindings come before the first cell that uses them;
* an Enum member ``CUDA = "cuda"`` and Lightning's ``accelerator="cuda"`` stay (reported).
"""

import subprocess
import sys
import textwrap

import pytest
from helpers import migrate as migrate_code
from helpers import migrate_file, rows, run_cli, write
from test_filekind_notebook import notebook, sources
from test_standin import standin_python

from gpu2npu.rewrite.engine import migrate_source
from gpu2npu.rewrite.kept import file_kept
from gpu2npu.rules.index import compile_index
from gpu2npu.rules.loader import load_builtin_rules
from gpu2npu.source.parse import parse_ast
from gpu2npu.styles import style_named
from gpu2npu.targets import target_named

ACCELERATOR_27 = (
    "ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else None"
)
ACCELERATOR_25 = (
    "ACCELERATOR = next((t for t in ('cuda', 'npu') if getattr(torch, t, None) and "
    "getattr(torch, t).is_available()), None)"
)


def portable_index(version: str = "2.8.0"):
    rules = load_builtin_rules(target_named("portable").rules_for(style_named("full")))
    return compile_index(rules, version)


def portable(code: str, version: str = "2.8.0") -> str:
    code = textwrap.dedent(code)
    result = migrate_source(code.encode(), portable_index(version), path="a.py")
    assert not result.skipped, result.skipped
    return result.new_bytes.decode() if result.new_bytes is not None else code


def kept(code: str, version: str = "2.8.0"):
    """(line, reported name, rule) of what the rules keep in a snippet."""
    data = textwrap.dedent(code).encode()
    return [(k.line, k.name, k.rule_id) for k in file_kept(data, parse_ast(data), portable_index(version))]


def run_on_the_cpu(code: str):
    """Run migrated code with plain torch (no torch_npu, no CUDA device)."""
    pytest.importorskip("torch")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


# -- 1. torch.cuda names with a device-agnostic counterpart, or reported --------------------------


def test_names_imported_from_torch_cuda_move_with_their_calls_and_the_import_goes():
    assert portable(
        """\
        import torch
        from torch.cuda import synchronize, empty_cache


        def free():
            synchronize()
            empty_cache()
        """
    ) == textwrap.dedent(
        f"""\
        import torch
        from torch.accelerator import synchronize
        {ACCELERATOR_27}
        DEVICE_MODULE = torch.get_device_module(ACCELERATOR or 'cuda')


        def free():
            synchronize()
            DEVICE_MODULE.empty_cache()
        """
    )
    assert portable("import torch\nfrom torch.cuda import synchronize\nsynchronize()\n", "2.4.0").endswith(
        "DEVICE_MODULE = getattr(torch, ACCELERATOR or 'cuda')\nDEVICE_MODULE.synchronize()\n"
    )


def test_a_name_imported_from_torch_cuda_and_read_otherwise_keeps_its_import_and_is_reported():
    code = "import torch\nfrom torch.cuda import empty_cache\nhooks = [empty_cache]\nempty_cache()\n"
    result = migrate_source(code.encode(), portable_index(), path="a.py")
    assert result.new_bytes.decode().splitlines()[1] == "from torch.cuda import empty_cache"
    assert result.new_bytes.decode().endswith("hooks = [empty_cache]\nDEVICE_MODULE.empty_cache()\n")
    assert [(k.line, k.name, k.rule_id) for k in result.kept] == [(2, "torch.cuda.empty_cache", "G2N950")]
    assert "write DEVICE_MODULE.empty_cache there" in result.kept[0].tip


def test_the_device_module_and_the_generators_answer_on_the_cpu_as_the_original_did():
    """torch.get_device_module('cpu') has no empty_cache or default_generators: without an
    accelerator the device module is torch.cuda, whose calls do nothing there."""
    original = textwrap.dedent(
        """\
        import torch
        from torch.cuda import empty_cache
        torch.cuda.empty_cache()
        empty_cache()
        print(torch.cuda.memory_allocated(), len(torch.cuda.default_generators))
        """
    )
    migrated = portable(original)
    assert "torch.cuda" not in migrated
    assert run_on_the_cpu(migrated) == run_on_the_cpu(original) == "0 0\n"


def test_legacy_cuda_tensor_types_are_reported_wherever_they_are_named(tmp_path):
    project = tmp_path / "proj"
    write(
        project / "types.py",
        "import torch\n"
        "def half(x):\n"
        "    return isinstance(x, torch.cuda.HalfTensor)\n"
        "torch.set_default_tensor_type(torch.cuda.FloatTensor)\n"
        "y = torch.cuda.LongTensor([1])\n",
    )
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--target", "portable")
    assert result.returncode == 0, result.stderr
    table = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    found = [(row[1], row[3], row[7]) for row in table[1:]]
    assert found == [
        ("3", "torch.cuda.HalfTensor", "rules:G2N158"),
        ("4", "torch.cuda.FloatTensor", "rules:G2N158"),
        ("5", "torch.cuda.LongTensor", "rules:G2N158"),  # a call: the type's own tip, not torch.cuda's
    ]
    assert table[1][4] == table[3][4]
    assert table[1][4].startswith("a legacy CUDA tensor type, CUDA only (no device-agnostic spelling)")
    # one tip for every type: it names each type's dtype (PyTorch-GAN's FloatTensor is no float16)
    assert "(FloatTensor: torch.float32, HalfTensor: torch.float16, LongTensor: torch.int64," in table[1][4]


# -- 2. the backend chosen by is_nccl_available -------------------------------------------------


def test_a_backend_chosen_by_is_nccl_available_is_the_accelerators():
    code = "import torch.distributed as dist\nbackend = 'nccl' if dist.is_nccl_available() else 'gloo'\n"
    assert portable(code).endswith("backend = DIST_BACKEND if torch.accelerator.is_available() else 'gloo'\n")
    migrated = portable(code, "2.6.0")
    assert migrated.endswith("backend = DIST_BACKEND if DEVICE_MODULE.is_available() else 'gloo'\n")
    assert run_on_the_cpu(portable(code) + "print(backend)\n") == "gloo\n"
    enum = "import torch.distributed as dist\nb = dist.Backend.NCCL if dist.is_nccl_available() else 'gloo'\n"
    assert portable(enum).endswith("b = DIST_BACKEND if torch.accelerator.is_available() else 'gloo'\n")


# -- 3. implementation selectors, 4. strings compared with data ---------------------------------------

BIAS_ACT = """\
import torch

def _init():
    return get_plugin('bias_act_plugin', sources=['bias_act.cpp', 'bias_act.cu'])

def bias_act(x, b=None, impl='cuda'):
    assert impl in ['ref', 'cuda']
    if impl == 'cuda' and x.device.type == 'cuda' and _init():
        return _bias_act_cuda(x, b)
    return _bias_act_ref(x, b)

def filter2d(x, f, impl='cuda'):
    return bias_act(x.cuda(), f, impl=impl)
"""


@pytest.mark.parametrize("version", ["2.8.0", "2.4.0"])
def test_an_implementation_selector_keeps_naming_the_cuda_kernels(version):
    """stylegan2-ada: impl='cuda' made impl=DEVICE_TYPE, so `assert impl in ['ref', ACCELERATOR]`
    failed on the CPU; the CUDA test before _init() (which builds .cu sources) stays."""
    migrated = portable(BIAS_ACT, version)
    assert (
        migrated.replace("x.to(DEVICE_TYPE)", "x.cuda()").split("def _init")[1]
        == BIAS_ACT.split("def _init")[1]
    )
    assert [(line, name) for line, name, _ in kept(BIAS_ACT, version)] == [
        (6, "'cuda'"),
        (7, "'cuda'"),
        (8, "'cuda'"),
        (8, "'cuda'"),
        (12, "'cuda'"),
    ]


def test_strings_compared_with_a_parsed_graph_keep_their_text():
    """openai/CLIP's JIT patching: the graph loaded from the archive still says cuda."""
    code = (
        "import torch\n"
        "def patch(graph, device):\n"
        "    for node in graph.findAllNodes('prim::Constant'):\n"
        "        if 'value' in node.attributeNames() and str(_node_get(node, 'value')).startswith('cuda'):\n"
        "            node.copyAttributes(device)\n"
        "    return torch.device('cuda')\n"
    )
    migrated = portable(code)
    assert ".startswith('cuda'):" in migrated
    assert migrated.endswith("return torch.device(DEVICE_TYPE)\n")
    assert kept(code) == [(4, "'cuda'", "G2N092")]


# -- 5. notebooks: the bindings before the first cell using them --------------------------------------


def test_a_notebooks_bindings_come_before_the_first_cell_that_uses_them():
    outcome = migrate_file(
        "nb.ipynb",
        notebook(
            "import torch\nx = torch.ones(2).cuda()\nprint(x)",
            "import torch\ny = torch.zeros(2, device='cuda')",
        ),
        index=portable_index(),
    )
    assert sources(outcome.new_bytes) == [
        f"import torch\n{ACCELERATOR_27}\nDEVICE_TYPE = ACCELERATOR or 'cpu'\n"
        "x = torch.ones(2).to(DEVICE_TYPE)\nprint(x)",
        "import torch\ny = torch.zeros(2, device=DEVICE_TYPE)",
    ]


def test_a_scripts_bindings_come_before_their_first_use_and_import_torch_where_it_comes_later():
    assert portable("import torch\nx = torch.ones(1).cuda()\nimport torch.nn as nn\n") == (
        f"import torch\n{ACCELERATOR_27}\nDEVICE_TYPE = ACCELERATOR or 'cpu'\n"
        "x = torch.ones(1).to(DEVICE_TYPE)\nimport torch.nn as nn\n"
    )
    migrated = portable("import os\nDEV = 'cuda'\nimport torch\n", "2.6.0")
    assert migrated == (
        f"import os\nimport torch\n{ACCELERATOR_25}\nDEVICE_TYPE = ACCELERATOR or 'cpu'\nDEV = DEVICE_TYPE\n"
        "import torch\n"
    )
    run_on_the_cpu(migrated)


# -- 7. Enum members, 8. Lightning's accelerator --------------------------------------------------------


def test_an_enum_member_keeps_its_device_string():
    """huggingface/accelerate's RNGType: CUDA = DEVICE_TYPE is an alias of NPU (or of CPU) there;
    Triton's toolkits name Triton's accelerators in a module without torch."""
    code = (
        "import enum\nimport torch\n"
        "class BaseEnum(enum.Enum):\n    pass\n"
        "class RNGType(BaseEnum):\n    CUDA = 'cuda'\n    NPU = 'npu'\n"
        "class Devices:\n    GPU = 'cuda'\n    NPU = 'npu'\n"
        "class Config:\n    device = 'cuda'\n"
    )
    migrated = portable(code)
    assert "    CUDA = 'cuda'\n" in migrated and "    GPU = 'cuda'\n" in migrated
    assert migrated.endswith("class Config:\n    device = DEVICE_TYPE\n")
    assert kept(code) == [(6, "'cuda'", "G2N159"), (9, "'cuda'", "G2N159")]
    toolkit = "from enum import Enum\nclass Accelerator(Enum):\n    NONE = 'none'\n    CUDA = 'cuda'\n"
    assert kept(toolkit) == [(4, "'cuda'", "G2N159")]


def test_an_enum_of_torch_devices_without_an_npu_member_follows_the_programs_strings():
    """nanotron's TimerType (CPU, CUDA) is looked up by the strings its callers pass, which become
    'npu': its kept 'cuda' made every training step raise "'npu' is not a valid TimerType"."""
    code = (
        "import enum\nimport torch\n"
        "class TimerType(enum.Enum):\n    CPU = 'cpu'\n    CUDA = 'cuda'\n"
        "def timer(kind='cuda'):\n    kind = TimerType(kind)\n"
        "    return kind, torch.ones(1, device=kind.value).sum().item()\n"
        "print(*timer())\n"
    )
    assert kept(code) == []
    migrated = portable(code)
    assert "    CUDA = DEVICE_TYPE\n" in migrated and "def timer(kind=DEVICE_TYPE):" in migrated
    assert run_on_the_cpu(migrated) == "TimerType.CPU 1.0\n"  # CUDA is an alias of CPU on a CPU host
    full = migrate_code(code)
    assert "    CUDA = 'npu'\n" in full and "def timer(kind='npu'):" in full
    assert standin_python(full) == "TimerType.CUDA 1.0\n"


def test_lightnings_accelerator_is_kept_and_reported_as_in_a_config(tmp_path):
    """Lightning has no NPU accelerator: 'npu' (or DEVICE_TYPE) fails in its registry."""
    project = tmp_path / "proj"
    write(
        project / "fit.py",
        "import lightning as L\nfrom lightning.fabric import Fabric\n"
        "trainer = L.Trainer(accelerator='cuda', devices=1)\nfabric = Fabric(accelerator='gpu')\n",
    )
    write(project / "config.yaml", "trainer:\n  accelerator: cuda\n")
    for target in ("portable", "npu"):
        out = tmp_path / target
        result = run_cli("migrate", "-i", project, "-o", out, "--target", target)
        assert result.returncode == 0, result.stderr
        assert (out / "proj_msft" / "fit.py").read_bytes() == (project / "fit.py").read_bytes()
        reports = out / "proj_msft" / "transplant_result_file"
        python = [(r[0], r[1], r[3], r[5], r[7]) for r in rows(reports / "unsupported_api.csv")[1:]]
        assert python == [  # the literal kept, and the call that picks the device (G2N076)
            ("fit.py", "3", "accelerator='cuda'", "supported_with_limits", "rules:G2N160"),
            ("fit.py", "3", "lightning.Trainer", "unsupported", "rules:G2N076"),
            ("fit.py", "4", "accelerator='gpu'", "supported_with_limits", "rules:G2N160"),
            ("fit.py", "4", "lightning.fabric.Fabric", "unsupported", "rules:G2N076"),
        ]
        config = rows(reports / "manual_work.csv")[1]
        assert config[:4] == ["config.yaml", "2", "2", "accelerator: cuda"]
        assert rows(reports / "unsupported_api.csv")[1][4] == config[4]  # the same tip


PORTABLE_HEADER = (
    "ACCELERATOR = torch.accelerator.current_accelerator().type"
    " if torch.accelerator.is_available() else None\n"
    "DEVICE_TYPE = ACCELERATOR or 'cpu'\n"
)
FASTCHAT_ADAPTER = """\
import torch


def load_model(device="cuda", cpu_offloading=False):
    if cpu_offloading and device != "cuda":
        cpu_offloading = False  # bitsandbytes offloads from CUDA only
    if device == "cuda":
        kwargs = {"device_map": "auto"}
    elif device == "npu":
        import torch_npu
        kwargs = {}
    return kwargs


def on_gpu(device):
    return device == "cuda"


CHOICES = ["cpu", "cuda", "mps", "xpu", "npu"]
MEMORY = {"cuda": "13GiB", "npu": "30GiB"}
"""


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_cuda_string_beside_the_projects_own_npu_branch_is_kept(target):
    """FastChat's model_adapter: renamed, ``device == "cuda"`` would take the NPU before the
    project's own ``elif device == "npu":`` (dead then), the choices would name the NPU twice and
    the dict would lose a key. A comparison in a function without an NPU branch still changes,
    and so does the default, which sends the NPU down the project's NPU branch."""
    index = portable_index() if target == "portable" else compile_index(load_builtin_rules(), "2.8.0")
    data = FASTCHAT_ADAPTER.encode()
    result = migrate_source(data, index, path="model_adapter.py")
    default, other = ("DEVICE_TYPE", "ACCELERATOR") if target == "portable" else ('"npu"', '"npu"')
    expected = FASTCHAT_ADAPTER.replace('device="cuda"', f"device={default}").replace(
        'return device == "cuda"', f"return device == {other}"
    )
    header = PORTABLE_HEADER if target == "portable" else "import torch_npu\n"
    assert result.new_bytes.decode() == expected.replace("import torch\n", "import torch\n" + header, 1)
    assert [(k.line, k.name, k.rule_id) for k in file_kept(data, parse_ast(data), index)] == [
        (5, "'cuda'", "G2N162"),
        (7, "'cuda'", "G2N162"),
        (19, "'cuda'", "G2N162"),
        (20, "'cuda'", "G2N162"),
    ]
