"""`--mode auto`: the automatic migration of the Ascend documents, from the installed command.

The entry scripts get ``import torch_npu`` and ``from torch_npu.contrib import transfer_to_npu``
at their top; every other file stays byte for byte, except the documented restrictions of the
patcher (rules/auto/), each with its report row."""

import ast
import csv
import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers import python_change_rows, rows, run_cli, tree_files, write
from test_standin import require_torch

from gpu2npu.rewrite.imports import insert_at_top

PROJECT = Path(__file__).parent / "projects" / "auto"
BEFORE, AFTER = PROJECT / "before", PROJECT / "after"
ENTRY_LINES = "import torch_npu\nfrom torch_npu.contrib import transfer_to_npu\n"


def migrate_auto(tmp_path, *extra, source=BEFORE):
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.8.0", "--mode", "auto", *extra)
    return result, tmp_path / "out" / f"{source.stem}_msft"


def test_entry_scripts_get_the_imports_and_every_other_file_stays(tmp_path):
    result, out = migrate_auto(tmp_path)
    assert result.returncode == 0, result.stderr
    migrated = {
        rel: data for rel, data in tree_files(out).items() if not rel.startswith("transplant_result_file")
    }
    expected = tree_files(BEFORE) | tree_files(AFTER)
    # the entries changed (lib/helpers.py is imported and run); model.py, tools/fetch.py byte for byte
    assert migrated == expected
    reports = out / "transplant_result_file"
    assert python_change_rows(reports / "change_list.csv") == [
        ["File", "Start Line", "End Line", "Operation Type", "Message", "Rule"],
        ["evaluate.py", "1", "1", "INSERT", "insert import torch_npu (entry script)", "G2N700"],
        [
            "evaluate.py",
            "1",
            "1",
            "INSERT",
            "insert from torch_npu.contrib import transfer_to_npu (entry script)",
            "G2N701",
        ],
        ["lib/helpers.py", "1", "1", "INSERT", "insert import torch_npu (entry script)", "G2N700"],
        [
            "lib/helpers.py",
            "1",
            "1",
            "INSERT",
            "insert from torch_npu.contrib import transfer_to_npu (entry script)",
            "G2N701",
        ],
        ["tools/prepare.py", "1", "1", "INSERT", "insert import torch_npu (entry script)", "G2N700"],
        [
            "tools/prepare.py",
            "1",
            "1",
            "INSERT",
            "insert from torch_npu.contrib import transfer_to_npu (entry script)",
            "G2N701",
        ],
        ["train.py", "3", "3", "INSERT", "insert import torch_npu (entry script)", "G2N700"],
        [
            "train.py",
            "3",
            "3",
            "INSERT",
            "insert from torch_npu.contrib import transfer_to_npu (entry script)",
            "G2N701",
        ],
        ["train.py", "22", "22", "MODIFY", 'replace string "nccl" with "hccl" in a comparison', "G2N702"],
        [
            "train.py",
            "31",
            "31",
            "MODIFY",
            "change name torch.cuda.default_generators to torch_npu.npu.default_generators",
            "G2N704",
        ],
    ]
    found = [(r[0], r[1], r[3], r[5], r[7]) for r in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [
        ("train.py", "14", "torch.jit.script", "unsupported", "rules:G2N705"),
        # compared with the user's --backend, which still says nccl: kept, reported
        ("train.py", "20", "'nccl'", "supported_with_limits", "rules:G2N702"),
        ("train.py", "32", "torch.channels_last", "supported_with_limits", "rules:G2N706"),
    ]


CHANGE_HEADER = ["File", "Start Line", "End Line", "Operation Type", "Message", "Rule", "File Kind", "Cell"]


def test_a_second_automatic_migration_changes_nothing(tmp_path):
    _, out = migrate_auto(tmp_path)
    again = run_cli("migrate", "-i", out, "-o", tmp_path / "again", "-v", "2.8.0", "--mode", "auto")
    assert again.returncode == 0, again.stderr
    changes = rows(tmp_path / "again" / "before_msft_msft" / "transplant_result_file" / "change_list.csv")
    assert changes == [CHANGE_HEADER]


def test_entry_chosen_by_hand(tmp_path):
    result, out = migrate_auto(tmp_path, "--entry", BEFORE / "model.py")
    assert result.returncode == 0, result.stderr
    assert (out / "model.py").read_text() == ENTRY_LINES + (BEFORE / "model.py").read_text()
    assert (out / "tools" / "prepare.py").read_bytes() == (BEFORE / "tools" / "prepare.py").read_bytes()
    assert not (out / "train.py").read_text().startswith(ENTRY_LINES)
    # --entry may also be given from the input's root
    again, out = migrate_auto(tmp_path / "2", "--entry", "lib/helpers.py")
    assert again.returncode == 0, again.stderr
    assert (out / "lib" / "helpers.py").read_text() == ENTRY_LINES + (
        BEFORE / "lib" / "helpers.py"
    ).read_text()


def test_a_single_file_is_its_own_entry(tmp_path):
    result, out = migrate_auto(tmp_path, source=BEFORE / "model.py")
    assert result.returncode == 0, result.stderr
    assert (out / "model.py").read_text() == ENTRY_LINES + (BEFORE / "model.py").read_text()


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ["--entry", "nowhere.py"],
            "gpu2npu: error: --entry 'nowhere.py' is not a Python file of the input '{input}'; "
            "name a .py file inside the input",
        ),
        (
            ["--entry", "model.py", "--mode", "full"],
            "gpu2npu: error: --entry is not used by --mode full; "
            "drop --entry or use --mode auto or specify-device",
        ),
    ],
    ids=["entry outside the input", "entry without auto"],
)
def test_bad_entries_are_one_line_and_write_nothing(tmp_path, args, line):
    result = run_cli("migrate", "-i", BEFORE, "-o", tmp_path / "out", "-v", "2.8.0", "--mode", "auto", *args)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line.format(input=BEFORE)]
    assert not (tmp_path / "out").exists()


def test_a_tree_without_an_entry_script_is_one_line(tmp_path):
    library = tmp_path / "lib"
    shutil.copytree(BEFORE / "lib", library)
    (library / "helpers.py").write_text("import torch\n\ndef f():\n    return torch.zeros(1).cuda()\n")
    result = run_cli("migrate", "-i", library, "-o", tmp_path / "out", "-v", "2.8.0", "--mode", "auto")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"gpu2npu: error: no entry script found in '{library}' (a file that may use torch, with "
        "if __name__ == '__main__': or with a module-level main() call that no other file imports); "
        "name the script that starts the training with --entry FILE"
    ]
    assert not (tmp_path / "out").exists()


def test_check_in_auto_mode_reports_the_same_findings_and_writes_nothing(tmp_path):
    copy = tmp_path / "proj"
    shutil.copytree(BEFORE, copy)
    before = tree_files(copy)
    result = run_cli("check", copy, "-v", "2.8.0", "--mode", "auto", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # torch.jit.script: an error in automatic migration
    findings = json.loads(result.stdout)["findings"]
    summary = sorted((f["file"], f["line"], f["severity"], f["rule"]) for f in findings)
    assert summary == [
        ("proj/evaluate.py", 1, "note", "G2N700"),
        ("proj/evaluate.py", 1, "note", "G2N701"),
        ("proj/lib/helpers.py", 1, "note", "G2N700"),
        ("proj/lib/helpers.py", 1, "note", "G2N701"),
        ("proj/tools/prepare.py", 1, "note", "G2N700"),
        ("proj/tools/prepare.py", 1, "note", "G2N701"),
        ("proj/train.py", 3, "note", "G2N700"),
        ("proj/train.py", 3, "note", "G2N701"),
        ("proj/train.py", 14, "error", "G2N705"),
        ("proj/train.py", 20, "warning", "G2N702"),
        ("proj/train.py", 22, "note", "G2N702"),
        ("proj/train.py", 31, "note", "G2N704"),
        ("proj/train.py", 32, "warning", "G2N706"),
    ]
    assert tree_files(copy) == before
    full = run_cli("check", copy, "-v", "2.8.0", "--format", "json", cwd=tmp_path)
    assert "G2N705" not in full.stdout  # the full migration keeps torch.jit.script working


IMPORTS = ["import torch_npu", "from torch_npu.contrib import transfer_to_npu"]
BLOCK = b"import torch_npu\nfrom torch_npu.contrib import transfer_to_npu\n"


@pytest.mark.parametrize(
    "before,after",
    [
        (b"", BLOCK),
        (b"import os\n", BLOCK + b"import os\n"),
        (b'"""Doc."""\nimport os\n', b'"""Doc."""\n' + BLOCK + b"import os\n"),
        (
            b"#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nfrom __future__ import annotations\nx = 1\n",
            b"#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nfrom __future__ import annotations\n"
            + BLOCK
            + b"x = 1\n",
        ),
        (b"x = 1", BLOCK + b"x = 1"),  # no newline at the end: none added
        (b'"""Doc."""', b'"""Doc."""\n' + BLOCK),
        (b"import os\r\nx = 1\r\n", BLOCK.replace(b"\n", b"\r\n") + b"import os\r\nx = 1\r\n"),
        (b"\xef\xbb\xbfimport os\n", b"\xef\xbb\xbf" + BLOCK + b"import os\n"),  # the BOM stays first
        (b"# licence\n\nimport os\n", b"# licence\n\n" + BLOCK + b"import os\n"),
    ],
    ids=[
        "empty",
        "plain",
        "docstring",
        "shebang coding future",
        "no newline",
        "only a docstring",
        "crlf",
        "bom",
        "comment",
    ],
)
def test_entry_imports_go_after_the_docstring_and_future_imports(before, after):
    new, _ = insert_at_top(before, ast.parse(before), IMPORTS)
    assert new == after
    compile(new, "<entry>", "exec")


def test_rules_list_shows_the_rules_of_a_mode():
    auto = run_cli("rules", "list", "--mode", "auto", "-v", "2.8.0")
    assert auto.returncode == 0, auto.stderr
    ids = [line.split("|")[1].strip() for line in auto.stdout.splitlines() if line.startswith("| G2N")]
    # G2N8xx and the dependency block's overflow G2N5xx: the other file kinds'
    python_ids = [rule_id for rule_id in ids if rule_id < "G2N800" and not rule_id.startswith("G2N5")]
    # the APIs the target torch removed are fixed in every mode (ConvNeXt's torch._six.inf)
    removed = ["G2N400", "G2N401", "G2N402", "G2N403", "G2N404"] + [f"G2N4{n:02}" for n in range(6, 17)]
    # the patcher sets no environment variable (G2N036/G2N037 are the names before torch 2.8)
    environment = [f"G2N0{n}" for n in range(30, 42) if n not in (36, 37)] + ["G2N380"]
    # HCCL refuses a float64 reduction whatever patches the program (G2N174); torch 2.x's launcher
    # passes --local-rank whatever patches it (G2N176); the patcher's ProcessGroupHCCL.Options takes no
    # argument (G2N388); a newer torch refuses torch.load's and
    # torch.stft's old defaults whatever patches them (G2N183, G2N186); the patcher leaves
    # torch.version.cuda None (G2N187); Adam's default step runs on the NPU whatever patches it (G2N171);
    # host-only APIs are the same under any patcher (G2N170)
    newer_torch = ["G2N183", "G2N186", "G2N187"]
    # names a torch older than the project's lacks (every_mode/older_torch.yaml): at 2.8.0, only
    # torch.accelerator's memory calls (torch 2.9)
    older_torch = ["G2N195"]
    # CUDA-only libraries and CUDA extensions run under no patcher (every_mode/cuda_only.yaml,
    # cuda_extensions.yaml); the GradScaler classes transfer_to_npu aliases (G2N180, G2N185) are not here
    cuda_only = [f"G2N0{n}" for n in range(50, 69)] + ["G2N072", "G2N073", "G2N074"]
    cuda_only += ["G2N086", "G2N087", "G2N088", "G2N089", "G2N099"] + [f"G2N1{n}" for n in range(63, 69)]
    cuda_only += [
        "G2N172",
        "G2N173",
        "G2N175",
        "G2N181",
        "G2N184",
        "G2N188",
        "G2N189",
        "G2N190",
        "G2N198",
        "G2N199",
        "G2N295",
        "G2N389",
        "G2N390",
        "G2N391",
        "G2N607",
        "G2N608",
    ]  # not G2N191: the patcher sends timm Mixup's torch.full(device='cuda') to the NPU; not G2N069:
    # under the patcher Composer's DeviceGPU runs on the NPU
    assert python_ids == sorted(
        environment
        + cuda_only
        + ["G2N093", "G2N170", "G2N171", "G2N174", "G2N176", "G2N376", "G2N388", "G2N392"]
        + ["G2N600", "G2N601", "G2N602", "G2N603"]
        + newer_torch
        + older_torch
        + removed
    ) + [f"G2N70{n}" for n in range(10)] + [
        "G2N710",
        "G2N711",
        "G2N712",
        "G2N713",
        "G2N714",
        "G2N715",
        "G2N716",
        "G2N717",
        "G2N719",
        "G2N730",
        "G2N731",
        "G2N732",
    ]  # + every mode's
    assert {"G2N800", "G2N832", "G2N870"} <= set(ids)  # launchers, configs, requirements
    # config values stay 'cuda': the unchanged code compares them so, and transfer_to_npu redirects them
    assert not {"G2N830", "G2N831", "G2N845"} & set(ids)
    full = run_cli("rules", "list", "-v", "2.8.0")
    assert "| G2N001 " in full.stdout and "| G2N730 " in full.stdout and "| G2N700 " not in full.stdout
    specify = run_cli("rules", "list", "--mode", "specify-device", "-v", "2.8.0")
    assert "| G2N001 " in specify.stdout and "| G2N720 " in specify.stdout and "| G2N720 " not in full.stdout


def auto_copy(tmp_path, files, name: str = "proj"):
    """The automatic migration of a small tree of ``files`` (path -> text)."""
    source = tmp_path / name
    for rel, text in files.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    result, out = migrate_auto(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    return out


def entries_of(tmp_path, files):
    """The files of a small tree that the automatic migration took as entry scripts."""
    out = auto_copy(tmp_path, files, "tree")
    return sorted(rel for rel in files if (out / rel).read_text().startswith(ENTRY_LINES))


MAIN = '\nif __name__ == "__main__":\n    pass\n'


@pytest.mark.parametrize(
    "files,entries",
    [
        # torch through a package's __init__.py, and through a module beside the script
        (
            {
                "run.py": "import pkg" + MAIN,
                "pkg/__init__.py": "from .core import f\n",
                "pkg/core.py": "import torch\n",
                "tools/go.py": "import helper" + MAIN,
                "tools/helper.py": "import torch\n",
            },
            ["run.py", "tools/go.py"],
        ),
        # relative imports: two dots name the package above (torch there), one the script's own
        (
            {
                "pkg/__init__.py": "",
                "pkg/core.py": "import torch\n",
                "pkg/tools/__init__.py": "",
                "pkg/tools/run.py": "from ..core import f" + MAIN,
                "pkg/tools/plain.py": "from . import run_helpers" + MAIN,
                "pkg/tools/run_helpers.py": "import os\n",
                "pkg/tools/far.py": "from .... import x" + MAIN,
                "pkg/tools/init.py": "from . import defined_in_init" + MAIN,
            },
            ["pkg/tools/far.py", "pkg/tools/run.py"],
        ),
        # code run by name only (importlib, exec) may be torch's
        (
            {"a.py": "import importlib\nimportlib.import_module('m')" + MAIN, "b.py": "import os" + MAIN},
            ["a.py"],
        ),
        # a module outside the standard library and the project may import torch: it counts, unless
        # it is a library known never to use torch (numpy, requests, tqdm: a dataset script)
        (
            {
                "a.py": "import mylib" + MAIN,
                "b.py": "import os, json" + MAIN,
                "c.py": "import numpy, requests" + MAIN,
                # alignment-handbook's release.py, accelerate's GitHub-bot scripts
                "release.py": "import packaging.version\nfrom github import Github" + MAIN,
                # point-e's blender_script.py runs inside Blender, which has no torch_npu; deep-text-
                # recognition-benchmark's create_lmdb_dataset.py
                "blender_script.py": "import bpy\nfrom mathutils import Vector" + MAIN,
                "create_lmdb_dataset.py": "import fire, lmdb, cv2\nimport numpy as np" + MAIN,
            },
            ["a.py"],
        ),
        # an import cycle of project modules without torch
        (
            {"a.py": "import b" + MAIN, "b.py": "import a\nimport os\n", "c.py": "import torch" + MAIN},
            ["c.py"],
        ),
        # a guarded script that another file imports starts a program too
        (
            {"train.py": "import torch" + MAIN, "export.py": "from train import x" + MAIN},
            ["export.py", "train.py"],
        ),
        # a script whose top level runs the program: ChatGLM's gradio demo, a Lightning fit, a
        # server; a module that only defines what runs (and one another file imports) does not
        (
            {
                "web_demo.py": "import torch\nimport gradio as gr\ndemo.queue().launch(share=False)\n",
                "tutorial_train.py": "import torch\nimport lightning as L\ntrainer.fit(model)\n",
                "api.py": "import torch\nimport uvicorn\nuvicorn.run(app, port=8000)\n",
                "model.py": "import torch\n\n\ndef fit(x):\n    return x.launch()\n",
                "serve.py": "import torch\napp.run()\n",
                "uses_serve.py": "import serve\n",
            },
            ["api.py", "tutorial_train.py", "web_demo.py"],
        ),
        # nanoGPT's bench.py: its loops are in a top-level if/else (profile or not); one in a
        # function of a top-level if does not count
        (
            {
                "bench.py": "import torch\nif profile:\n    # docs\n\n    with prof:\n        pass\n"
                "else:\n    # simple\n    for stage in range(2):\n        pass\n",
                "lib.py": "import torch\nif HAVE_X:\n    def f():\n        for x in y:\n            pass\n",
            },
            ["bench.py"],
        ),
        # an import names a path, not a last name: pkg/sub/__init__.py's ``from .train import f``
        # and eval.py's ``from pkg.sub.train import f`` import pkg/sub/train.py, not the root's
        # train.py (Open-Sora, LAVIS), which stays an entry; ``from tools import run`` imports
        # tools/run.py
        (
            {
                "train.py": "import torch\nfor epoch in range(2):\n    pass\n",
                "pkg/__init__.py": "",
                "pkg/sub/__init__.py": "from .train import f\n",
                "pkg/sub/train.py": "def f():\n    return 1\n",
                "eval.py": "import torch\nfrom pkg.sub.train import f\nfor x in range(2):\n    pass\n",
                "tools/run.py": "import torch\nfor e in range(2):\n    pass\n",
                "launch.py": "from tools import run\n",
            },
            ["eval.py", "train.py"],
        ),
    ],
    ids=[
        "through project modules",
        "relative",
        "dynamic",
        "third-party",
        "cycle",
        "imported script",
        "top-level run",
        "loop in a top-level if",
        "same name in a package",
    ],
)
def test_entry_scripts_are_the_programs_that_may_use_torch(tmp_path, files, entries):
    assert entries_of(tmp_path, files) == entries


def test_a_configs_device_and_backend_stay_what_the_unchanged_code_compares(tmp_path):
    """MiniGPT-4: the auto copy renamed ``device: "cuda"`` in its configs while
    ``runner_base.py`` still tests ``device.type == "cuda"``: the model went to the NPU and every
    batch stayed on the CPU. transfer_to_npu redirects 'cuda' and nccl where they are used."""
    config = 'run:\n  device: "cuda"\n  dist_backend: nccl\n'
    train = (
        "import torch\nimport yaml\n\nif __name__ == '__main__':\n"
        "    device = torch.device(yaml.safe_load(open('train.yaml'))['run']['device'])\n"
        "    print(device.type == 'cuda')\n"
    )
    out = auto_copy(tmp_path, {"train.yaml": config, "train.py": train})
    assert (out / "train.yaml").read_text() == config
    assert (out / "train.py").read_text().startswith(ENTRY_LINES)


def test_a_device_capability_compared_is_reported_for_transfer_to_npu_answers_none(tmp_path):
    """nanochat's common.py and torchtune's import guard compare get_device_capability() with
    (8, 0) at import: under transfer_to_npu it returns None on an NPU (TypeError) unless
    TORCH_NPU_DEVICE_CAPABILITY is set. The automatic copy keeps the line; the report says so."""
    train = (
        "import torch\n\nif torch.cuda.is_available():\n"
        "    BF16 = torch.cuda.get_device_capability() >= (8, 0)\n"
        "\nif __name__ == '__main__':\n    print(BF16)\n"
    )
    out = auto_copy(tmp_path, {"train.py": train})
    reported = [row[:4] + row[5:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert reported == [
        ["train.py", "4", "4", "torch.cuda.get_device_capability", "unsupported", "listed", "rules:G2N709"]
    ]


def test_an_api_the_target_torch_removed_is_fixed_as_in_the_full_migration(tmp_path):
    """ConvNeXt's utils.py kept ``from torch._six import inf`` under --mode auto while the full
    migration fixed it: on torch 2.8 (and every torch torch_npu 2.x pairs with) the import fails."""
    files = {
        "utils.py": "import torch\nfrom torch._six import inf\n\nnorm = inf\n",
        "main.py": "import utils\n\nif __name__ == '__main__':\n    print(utils.norm)\n",
    }
    out = auto_copy(tmp_path, files)
    assert (out / "utils.py").read_text() == "import torch\nfrom torch import inf\n\nnorm = inf\n"
    changes = python_change_rows(out / "transplant_result_file" / "change_list.csv")
    assert [row for row in changes if row[0] == "utils.py"] == [
        ["utils.py", "2", "2", "MODIFY", "change import torch._six.inf to torch.inf", "G2N401"]
    ]


def test_cuda_environment_variables_are_renamed_as_in_the_full_migration(tmp_path):
    """yolov7's ``--device 1`` sets CUDA_VISIBLE_DEVICES in Python: transfer_to_npu changes no
    environment variable, so the NPU runtime never saw the mask and trained on card 0."""
    files = {
        "train.py": "import os\nimport torch\n\n\ndef select(device):\n"
        '    os.environ["CUDA_VISIBLE_DEVICES"] = device\n    return torch.device("cuda:0")\n\n\n'
        'if __name__ == "__main__":\n    print(select("1"))\n',
        "run.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1 python train.py\n",
    }
    out = auto_copy(tmp_path, files)
    assert (out / "train.py").read_text() == ENTRY_LINES + files["train.py"].replace(
        "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"
    )
    assert (out / "run.sh").read_text() == "#!/bin/bash\nASCEND_RT_VISIBLE_DEVICES=0,1 python train.py\n"
    rows = [row[:6] for row in csv.reader(open(out / "transplant_result_file" / "change_list.csv"))]
    message = "change environment variable CUDA_VISIBLE_DEVICES to ASCEND_RT_VISIBLE_DEVICES"
    assert [row for row in rows if row[5] == "G2N030"] == [
        ["run.sh", "2", "2", "MODIFY", message, "G2N030"],
        ["train.py", "6", "6", "MODIFY", message, "G2N030"],
    ]


def test_a_mask_set_in_python_narrows_the_cards_of_the_migrated_run(tmp_path):
    """Proof by running the migrated program under the stand-in with two cards: the renamed mask
    leaves one visible card; the CUDA name would have left both."""
    pytest.importorskip("torch")
    program = (
        'import os\nimport torch\n\nif __name__ == "__main__":\n'
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
        "    print(torch.cuda.device_count(), torch.ones(1).cuda().is_cuda)\n"
    )
    out = auto_copy(tmp_path, {"train.py": program})
    run = run_cli("run", "--devices", "2", "--", sys.executable, out / "train.py")
    assert (run.returncode, run.stdout) == (0, "1 True\n"), run.stderr


HALF_TEST = """import torch


def infer(x):
    if x.type() == 'torch.cuda.HalfTensor':
        return x
    return x.half()


if __name__ == "__main__":
    print(infer(torch.ones(2).cuda()))
"""


def test_a_tensor_type_named_by_a_string_is_reported_where_the_patcher_leaves_it(tmp_path):
    """waveglow tests x.type() == 'torch.cuda.HalfTensor' to pick its half-precision path:
    transfer_to_npu patches neither Tensor.type nor the string, so on the NPU the test is False,
    and no row said so. The line stays (the automatic migration changes no code) with a row."""
    source = tmp_path / "proj"
    source.mkdir()
    (source / "glow.py").write_text(HALF_TEST)
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.8.0", "--mode", "auto")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert "    if x.type() == 'torch.cuda.HalfTensor':\n" in (out / "glow.py").read_text()
    tip = (
        "transfer_to_npu leaves tensor type names as they are: on the NPU x.type() gives "
        "'torch.npu.HalfTensor' & co., so a comparison with this string is False, and x.type(...) or "
        "set_default_tensor_type(...) with it needs CUDA; write torch.npu.<type> here (as the full "
        "migration does), or compare x.dtype and x.device.type"
    )
    manual = rows(out / "transplant_result_file" / "manual_work.csv")[1:]
    assert manual == [
        ["glow.py", "5", "5", "torch.cuda.HalfTensor", tip, "unsupported", "G2N711", "python", ""]
    ]


def test_cuda_only_libraries_and_extensions_are_errors_under_the_patcher_too(tmp_path):
    """transfer_to_npu redirects torch.cuda, devices and nccl; it builds no flash-attn, apex
    normalization or CUDA extension kernel. swav's apex.parallel and deep-person-reid's
    CUDAExtension lost their rows in this mode, and `check --mode auto` passed."""
    files = {
        "train.py": "import torch\nfrom flash_attn import flash_attn_func\n"
        "from apex.normalization import FusedLayerNorm\n\n"
        "if __name__ == '__main__':\n    torch.ones(1).cuda()\n",
        "ext/setup.py": "from torch.utils.cpp_extension import CUDAExtension\n\n"
        "ext = CUDAExtension('k', ['k.cu'])\n",
    }
    out = auto_copy(tmp_path, files)
    reported = [
        row[:4] + row[5:6] + row[-1:]
        for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    ]
    assert reported == [
        ["ext/setup.py", "3", "3", "torch.utils.cpp_extension.CUDAExtension", "unsupported", "rules:G2N072"],
        ["train.py", "2", "2", "flash_attn", "unsupported", "rules:G2N056"],
        ["train.py", "3", "3", "apex.normalization", "unsupported", "rules:G2N052"],
    ]
    check = run_cli("check", tmp_path / "proj", "--mode", "auto", "--no-cache", "--format", "json")
    assert check.returncode == 1, check.stderr
    blocking = sorted(f["rule"] for f in json.loads(check.stdout)["findings"] if f["severity"] == "error")
    assert blocking == ["G2N052", "G2N056", "G2N072"]


def test_the_compute_capability_is_an_error_under_the_patcher_even_behind_a_cuda_test(tmp_path):
    """denoising-diffusion-pytorch's Attend(flash=True) reads get_device_properties(...).major
    after torch.cuda.is_available(), which transfer_to_npu makes True: the NPU's properties have
    no major, so it fails there."""
    text = (
        "import torch\n\ndef config():\n    if not torch.cuda.is_available():\n        return None\n"
        "    p = torch.cuda.get_device_properties(torch.device('cuda'))\n    return p.major, p.minor\n"
    )
    out = auto_copy(
        tmp_path,
        {"attend.py": text, "train.py": "import attend\n\nif __name__ == '__main__':\n    attend.config()\n"},
    )
    assert (out / "attend.py").read_text() == text
    reported = [
        row[:4] + row[5:6] + row[-1:]
        for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    ]
    assert reported == [
        ["attend.py", "6", "6", "torch.cuda.get_device_properties", "unsupported", "rules:G2N713"]
    ]
    check = run_cli("check", tmp_path / "proj", "--mode", "auto", "--no-cache")
    assert check.returncode == 1, check.stdout


def test_cudas_private_initialized_flag_is_an_error_under_the_patcher(tmp_path):
    """DALLE-pytorch's reversible layers save the device's RNG state only if
    torch.cuda._initialized: the patcher copies torch_npu.npu's public names only, so the flag
    stays False and dropout is recomputed with another mask; `check --mode auto` passed."""
    text = (
        "import torch\n\n\ndef record(state):\n    if torch.cuda._initialized:\n        state.saved = True\n"
    )
    out = auto_copy(
        tmp_path, {"rev.py": text, "train.py": "import rev\n\nif __name__ == '__main__':\n    rev\n"}
    )
    assert (out / "rev.py").read_text() == text
    reported = [
        row[:4] + row[-1:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    ]
    assert reported == [["rev.py", "5", "5", "torch.cuda._initialized", "rules:G2N714"]]
    check = run_cli("check", tmp_path / "proj", "--mode", "auto", "--no-cache")
    assert check.returncode == 1, check.stdout


UPPER_CASE_BACKEND = """import sys
import torch
import torch.distributed as dist

if __name__ == "__main__":
    backend = "NCCL" if torch.cuda.is_available() else "GLOO"
    dist.init_process_group(backend=backend, init_method="file://" + sys.argv[1], rank=0, world_size=1)
    print(dist.get_backend(), dist.get_backend() == "NCCL", sys.argv[2] == "NCCL")
"""


def test_an_upper_case_nccl_backend_becomes_hccl_which_the_patcher_misses(tmp_path):
    """detectron2's launch passes ``backend="NCCL"``: transfer_to_npu changes only a lower-case
    'nccl', so torch asked for NCCL and the run failed. The literal becomes HCCL where it is stored
    and where it is compared with the process group's backend, and stays where it is compared with
    what the user gave (argv). Proof by running under the stand-in: the group is HCCL's, and the
    comparisons answer as on CUDA (get_backend() names it in lower case there too)."""
    out = auto_copy(tmp_path, {"launch.py": UPPER_CASE_BACKEND})
    assert (out / "launch.py").read_text() == ENTRY_LINES + UPPER_CASE_BACKEND.replace(
        'backend = "NCCL"', 'backend = "HCCL"'
    ).replace('get_backend() == "NCCL"', 'get_backend() == "HCCL"')
    kept = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [(row[1], row[3], row[-1]) for row in kept] == [("8", "'NCCL'", "rules:G2N703")]
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "launch.py", tmp_path / "store", "NCCL", cwd=out)
    assert (run.returncode, run.stdout) == (0, "hccl False True\n"), run.stderr


@pytest.mark.parametrize("version,expected", [("2.8.0", ["G2N717"]), ("2.1.0", [])])
def test_basicsr_under_the_patcher_is_reported_only_for_its_torchvision_import(tmp_path, version, expected):
    """Real-ESRGAN's auto copy: transfer_to_npu sends basicsr's torch.cuda calls to the NPU, so
    the full migration's row (G2N182: "start it under transfer_to_npu") told an auto user to use
    auto. Left: basicsr 1.4.2 imports a torchvision module torch 2.2's torchvision removed."""
    write(tmp_path / "proj" / "train.py", "import torch\nfrom basicsr.train import train_pipeline\n" + MAIN)
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", version, "--mode", "auto"
    )
    assert result.returncode == 0, result.stderr
    found = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [row[-1].split(":")[-1] for row in found if row[3].startswith("basicsr")] == expected
    assert all("--mode auto" not in row[4] for row in found)


def test_a_tensorflow_script_is_no_entry_and_tf32_switches_are_rows(tmp_path):
    """guided-diffusion's evaluations/evaluator.py imports TensorFlow and never torch: auto made it
    an entry (import torch_npu, where its own requirements install none). edm turns TF32 off, which
    transfer_to_npu leaves to CUDA: the NPU's HF32 convolutions stay on, so it is a row (G2N093)."""
    evaluator = 'import tensorflow.compat.v1 as tf\n\nif __name__ == "__main__":\n    print(tf.__name__)\n'
    write(tmp_path / "proj" / "evaluator.py", evaluator)
    loop = "import torch\n\ntorch.backends.cudnn.allow_tf32 = False\n" + MAIN
    write(tmp_path / "proj" / "loop.py", loop)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--mode", "auto")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "evaluator.py").read_text() == evaluator
    assert (out / "loop.py").read_text().startswith(ENTRY_LINES)
    found = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [(row[0], row[1], row[3], row[-1]) for row in found] == [
        ("loop.py", "3", "torch.backends.cudnn.allow_tf32", "rules:G2N093")
    ]


BF16_SUPPORT = """\
import torch


def verify_bf16_support():
    return (
        torch.cuda.is_available()
        and torch.cuda.is_bf16_supported()
        and torch.distributed.is_nccl_available()
        and torch.cuda.nccl.version() >= (2, 10)
    )


if __name__ == "__main__":
    print(verify_bf16_support())
"""


def test_cudas_nccl_module_is_an_error_under_the_patcher(tmp_path):
    """torchtune's verify_bf16_support, called by every recipe with ``dtype: bf16``: the patcher
    makes the three tests before it True on an NPU, and leaves torch.cuda.nccl CUDA's, whose
    version() needs torch._C._nccl_version, absent from torch's CPU build (AttributeError)."""
    out = auto_copy(tmp_path, {"train.py": BF16_SUPPORT})
    reported = [
        row[:4] + row[5:6] + row[-1:]
        for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
        if "nccl" in row[3]
    ]
    assert reported == [["train.py", "9", "9", "torch.cuda.nccl.version", "unsupported", "rules:G2N719"]]
    check = run_cli("check", tmp_path / "proj", "--mode", "auto", "--no-cache")
    assert check.returncode == 1, check.stdout
    require_torch()
    run = run_cli("run", "--", sys.executable, "train.py", cwd=out)
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == "AttributeError: module 'torch._C' has no attribute '_nccl_version'"
