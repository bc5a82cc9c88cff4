"""`-s` / `--mode specify-device`: the device index from the environment (msFmkTransplt's -s),
from the installed command, without the reference's bug B21 (CPU devices forced onto the NPU)."""

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from helpers import builtin_index, python_change_rows, rows, run_cli, tree_files, write
from helpers import migrate as migrate_code

from gpu2npu.rewrite.imports import insert_at_top
from gpu2npu.source.parse import parse_ast

PROJECT = Path(__file__).parent / "projects" / "specify_device"
BEFORE, AFTER = PROJECT / "before", PROJECT / "after"
BLOCK = (
    "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
    "torch_npu.npu.set_device(DEVICE_ID)\n"
)


def migrate_s(tmp_path, *flags, source=BEFORE, out="out"):
    result = run_cli("migrate", "-i", source, "-o", tmp_path / out, "-v", "2.8.0", *flags)
    return result, tmp_path / out / f"{source.stem}_msft"


def migrated_project(tmp_path, files):
    """The project of ``files`` (path -> text) and its -s copy."""
    source = tmp_path / "proj"
    for name, text in files.items():
        write(source / name, text)
    result, out = migrate_s(tmp_path, "-s", source=source)
    assert result.returncode == 0, result.stderr
    return source, out


def migrated_files(out: Path):
    return {
        rel: data for rel, data in tree_files(out).items() if not rel.startswith("transplant_result_file")
    }


def test_fixed_indices_take_the_device_from_the_environment_and_cpu_stays(tmp_path):
    result, out = migrate_s(tmp_path, "-s")
    assert result.returncode == 0, result.stderr
    # train.py and utils/data.py as in after/; utils/model.py (no device) and utils/__init__.py byte for byte
    assert migrated_files(out) == tree_files(BEFORE) | tree_files(AFTER)
    train = (AFTER / "train.py").read_text()
    assert 'torch.device("cpu")' in train and 'map_location=torch.device("cpu")' in train  # B21
    reports = out / "transplant_result_file"
    changes = python_change_rows(reports / "change_list.csv")
    assert [row for row in changes if row[5].startswith("G2N72")] == [
        [
            "train.py",
            "10",
            "10",
            "INSERT",
            "insert the statements that take DEVICE_ID from the environment (selecting it only where it "
            "is set: the script calls batches of utils/data.py, which selects its device, line 10)",
            "G2N720",
        ],
        [
            "train.py",
            "17",
            "17",
            "MODIFY",
            "change the arg at position 0 of function torch.cuda.set_device to DEVICE_ID",
            "G2N726",
        ],
        ["train.py", "18", "18", "DELETE", "delete the arg at position 0 of function cuda (-s)", "G2N724"],
        [
            "train.py",
            "22",
            "22",
            "MODIFY",
            "change the arg at position 1 of function torch.device to DEVICE_ID",
            "G2N723",
        ],
        [
            "utils/data.py",
            "3",
            "3",
            "INSERT",
            "insert the statements that take DEVICE_ID from the environment",
            "G2N720",
        ],
        [
            "utils/data.py",
            "12",
            "12",
            "MODIFY",
            "replace string \"cuda:0\" with f'npu:{DEVICE_ID}'",
            "G2N721",
        ],
    ]
    # the launcher's LOCAL_RANK is left alone, and reported; so is a load torch 2.6 would refuse
    reported = rows(reports / "unsupported_api.csv")[1:]
    assert [row[:4] + row[5:] for row in reported[:1]] == [
        ["train.py", "20", "20", "torch.load", "supported_with_limits", "listed", "rules:G2N183"]
    ]
    assert reported[1:] == [
        [
            "utils/data.py",
            "10",
            "10",
            "torch.cuda.set_device",
            "left as it is: the device already comes from the environment or a rank; check that it agrees "
            "with the index the migration takes from the environment",
            "supported_with_limits",
            "listed",
            "rules:G2N726",
        ]
    ]


def test_long_and_short_flags_are_the_same_migration(tmp_path):
    short, out_short = migrate_s(tmp_path, "-s", out="a")
    long, out_long = migrate_s(tmp_path, "--mode", "specify-device", out="b")
    assert short.returncode == long.returncode == 0
    assert migrated_files(out_short) == migrated_files(out_long)
    plain, out_plain = migrate_s(tmp_path, out="c")
    assert b"DEVICE_ID" not in b"".join(migrated_files(out_plain).values())  # not without -s


def test_a_second_migration_changes_nothing(tmp_path):
    _, out = migrate_s(tmp_path, "-s")
    again, out_again = migrate_s(tmp_path, "-s", source=out, out="again")
    assert again.returncode == 0, again.stderr
    assert migrated_files(out_again) == migrated_files(out)
    assert rows(out_again / "transplant_result_file" / "change_list.csv")[1:] == []


ENTRY_SCRIPTS = {  # (script, its leading imports once migrated)
    "plain": (
        "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(1).cuda())\n",
        "import torch\nimport torch_npu\nimport os\n",
    ),
    # ChatGLM-6B's demos import transformers alone and call .half().cuda(): they got import
    # torch_npu but no selection, so every process loaded the model on card 0
    "no torch": (
        "from transformers import AutoModel\n\nmodel = AutoModel.from_pretrained('m').half().cuda()\n\n"
        "if __name__ == '__main__':\n    print(model)\n",
        "import torch_npu\nfrom transformers import AutoModel\nimport os\n",
    ),
}


@pytest.mark.parametrize("case", sorted(ENTRY_SCRIPTS))
def test_an_entry_script_selects_the_device_even_without_a_fixed_index(tmp_path, case):
    source, imports = ENTRY_SCRIPTS[case]
    script = write(tmp_path / "run.py", source)
    result, out = migrate_s(tmp_path, "-s", source=script)
    assert result.returncode == 0, result.stderr
    body = source.split("\n\n", 1)[1].replace(".cuda()", ".npu()")
    assert (out / "run.py").read_text() == imports + BLOCK + "\n" + body


def test_s_and_another_mode_contradict(tmp_path):
    result, _ = migrate_s(tmp_path, "-s", "--mode", "auto")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gpu2npu: error: -s and --mode auto contradict each other; give one of them"
    ]
    assert not (tmp_path / "out").exists()


def test_check_with_s_lists_the_same_changes_and_writes_nothing(tmp_path):
    copy = tmp_path / "proj"
    shutil.copytree(BEFORE, copy)
    before = tree_files(copy)
    result = run_cli("check", copy, "-v", "2.8.0", "-s", "--format", "json", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)["findings"]
    found = sorted((f["file"], f["line"], f["rule"]) for f in findings if f["rule"].startswith("G2N72"))
    assert found == [
        ("proj/train.py", 10, "G2N720"),
        ("proj/train.py", 17, "G2N726"),
        ("proj/train.py", 18, "G2N724"),
        ("proj/train.py", 22, "G2N723"),
        ("proj/utils/data.py", 3, "G2N720"),
        ("proj/utils/data.py", 10, "G2N726"),
        ("proj/utils/data.py", 12, "G2N721"),
    ]
    assert tree_files(copy) == before


@pytest.mark.parametrize(
    "before,after",
    [
        (b"import os\nx = 1\n", b"import os\nSTATEMENT\nx = 1\n"),
        (
            b'"""Doc."""\nimport os\nimport sys\n\nx = 1\n',
            b'"""Doc."""\nimport os\nimport sys\nSTATEMENT\n\nx = 1\n',
        ),
        (
            b"import os\nsys.path.append('.')\nimport torch\n",
            b"import os\nSTATEMENT\nsys.path.append('.')\nimport torch\n",
        ),
        (b"x = 1\nimport os\n", b"STATEMENT\nx = 1\nimport os\n"),
        (b"import os", b"import os\nSTATEMENT\n"),
        (
            b"import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'x'\nimport torch\nx = 1\n",
            b"import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'x'\nimport torch\nSTATEMENT\nx = 1\n",
        ),
        (
            b"import os\nos.environ.setdefault('A', '1')\nimport torch\nos.environ['B'] = '2'\n",
            b"import os\nos.environ.setdefault('A', '1')\nimport torch\nSTATEMENT\nos.environ['B'] = '2'\n",
        ),
    ],
    ids=[
        "after the imports",
        "docstring",
        "imports after code stay after",
        "no leading import",
        "no newline",
        "environment set before import torch",
        "environment set after the imports",
    ],
)
def test_statements_after_imports_keep_the_imports_first(before, after):
    new, line = insert_at_top(before, parse_ast(before), ["STATEMENT"], after_imports=True)
    assert (new, line) == (after, after.split(b"\n").index(b"STATEMENT") + 1)


def test_devices_named_from_a_rank_or_split_over_cards_are_kept_and_reported(tmp_path):
    source = tmp_path / "proj"
    ranked = (
        "import os\nimport torch\n\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "device = f'cuda:{local_rank}'\ntorch.cuda.set_device(device)\n"
    )
    split = "import torch\n\nfirst = torch.nn.Linear(2, 2).to('cuda:0')\nsecond = first.to('cuda:1')\n"
    (source / "tools").mkdir(parents=True)
    (source / "ranked.py").write_text(ranked)
    (source / "split.py").write_text(split)
    (source / "tools" / "count.py").write_text(
        "import sys\n\nif __name__ == '__main__':\n    print(len(sys.argv))\n"
    )
    result, out = migrate_s(tmp_path, "-s", source=source)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == (  # imagen-pytorch: a library, no script starts it
        f"gpu2npu: warning: no entry script found in '{source}', so no file takes its device from "
        "DEVICE_ID (every process would use card 0); name the script that starts the training with "
        "--entry FILE"
    )
    assert "torch.npu.set_device(device)\n" in (out / "ranked.py").read_text()
    assert "'npu:0'" in (out / "split.py").read_text() and "'npu:1'" in (out / "split.py").read_text()
    assert (out / "tools" / "count.py").read_text() == (source / "tools" / "count.py").read_text()  # no torch
    kept = [row[:4] + row[6:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert kept == [
        ["ranked.py", "6", "6", "torch.cuda.set_device", "listed", "rules:G2N726"],
        ["split.py", "3", "3", "'cuda:0'", "listed", "rules:G2N721"],
        ["split.py", "4", "4", "'cuda:1'", "listed", "rules:G2N721"],
    ]


SELECTING_ITSELF = {
    "serve.py": (
        "import argparse\nimport os\n\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--gpus', default='0')\n"
        "    args = parser.parse_args()\n    os.environ['CUDA_VISIBLE_DEVICES'] = args.gpus\n"
        "    print(torch.ones(2).cuda())\n\n\nif __name__ == '__main__':\n    main()\n"
    ),
    "worker.py": (
        "import os\n\nimport torch\n\nif __name__ == '__main__':\n"
        "    local_rank = int(os.environ['LOCAL_RANK'])\n    torch.cuda.set_device(local_rank)\n"
        "    print(torch.ones(2).cuda())\n"
    ),
    "lib.py": "import torch\n\n\ndef first():\n    return torch.ones(2).to('cuda:0')\n",
    "plain.py": "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n",
    "cpu_fallback.py": (
        "import os\n\nimport torch\n\nif __name__ == '__main__':\n    if os.environ.get('GPUS') == '0':\n"
        "        os.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n    print(torch.ones(2).cuda())\n"
    ),
}


WHERE_SET = "if os.environ.get('DEVICE_ID', '').isdigit():\n    torch_npu.npu.set_device(DEVICE_ID)\n"


def selection(text: str) -> str:
    """How a migrated module selects DEVICE_ID at import: always, where the environment sets it,
    or not at all."""
    if WHERE_SET in text:
        return "where set"
    return "always" if "\ntorch_npu.npu.set_device(DEVICE_ID)\n" in text else "no"


def selections(tmp_path, files):
    """The -s copy of the project of ``files`` and how each of its modules selects DEVICE_ID."""
    _, out = migrated_project(tmp_path, files)
    return out, {name: selection((out / name).read_text()) for name in files}


def test_a_script_selecting_its_device_itself_and_a_library_are_not_given_a_device_at_import(tmp_path):
    """A device selected at import comes before FastChat's ``--gpus`` (the visible devices set in
    main, void then) and claims card DEVICE_ID in every torchrun worker before its own
    ``set_device(local_rank)``; importing a library module claims no card. The worker selects
    DEVICE_ID only where the environment sets it (nanoGPT selects its card only under torchrun:
    ``DEVICE_ID=1 python train.py`` took card 0); a script that does not select its device still
    selects DEVICE_ID, and so does one that hides every card for a CPU run (EfficientDet's
    ``CUDA_VISIBLE_DEVICES = '-1'`` where ``num_gpus == 0``): that selects no card."""
    out, selects = selections(tmp_path, SELECTING_ITSELF)
    assert selects == {
        "serve.py": "no",
        "worker.py": "where set",
        "lib.py": "no",
        "plain.py": "always",
        "cpu_fallback.py": "always",
    }
    assert "os.environ['ASCEND_RT_VISIBLE_DEVICES'] = args.gpus\n" in (out / "serve.py").read_text()
    inserts = [
        row
        for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")
        if row[5] == "G2N720"
    ]
    taken = "insert the statements that take DEVICE_ID from the environment"
    itself = "the script selects its device itself"
    assert inserts == [
        ["cpu_fallback.py", "3", "3", "INSERT", taken, "G2N720"],
        ["lib.py", "1", "1", "INSERT", taken, "G2N720"],
        ["plain.py", "1", "1", "INSERT", taken, "G2N720"],
        ["serve.py", "4", "4", "INSERT", f"{taken} (not selecting it: {itself}, line 11)", "G2N720"],
        [
            "worker.py",
            "3",
            "3",
            "INSERT",
            f"{taken} (selecting it only where it is set: {itself}, line 7)",
            "G2N720",
        ],
    ]


FRAMEWORK_SELECTING = {
    "train_vit.py": (
        "import torch\nfrom accelerate import Accelerator\n\nif __name__ == '__main__':\n"
        "    accelerator = Accelerator()\n    print(torch.ones(2).cuda())\n"
    ),
    "train_ds.py": (
        "import torch\nimport deepspeed as ds\n\nif __name__ == '__main__':\n"
        "    engine, *_ = ds.initialize(model=torch.nn.Linear(2, 2))\n    print(torch.ones(2).cuda())\n"
    ),
    "helpers.py": "import accelerate\n\n\ndef prepared():\n    return accelerate.Accelerator()\n",
    "train_helped.py": (
        "import torch\nfrom helpers import prepared\n\nif __name__ == '__main__':\n"
        "    prepared()\n    print(torch.ones(2).cuda())\n"
    ),
    # SlowFast: run_net.py calls misc.launch_job, whose spawned workers select their own cards
    "slowfast/misc.py": (
        "import torch\n\n\ndef launch_job(func):\n    torch.multiprocessing.spawn(func, nprocs=2)\n"
    ),
    "run_net.py": (
        "import torch\nfrom slowfast.misc import launch_job\n\nif __name__ == '__main__':\n"
        "    launch_job(print)\n    print(torch.ones(2).cuda())\n"
    ),
    # a class of the same last name that is not accelerate's selects nothing
    "train_own.py": (
        "import torch\n\n\nclass Accelerator:\n    pass\n\n\nif __name__ == '__main__':\n"
        "    Accelerator()\n    print(torch.ones(2).cuda())\n"
    ),
}


def test_a_script_whose_framework_selects_its_device_selects_device_id_only_where_set(tmp_path):
    """vit-pytorch's train_vit_decorr.py makes an accelerate Accelerator, which gives each process
    of ``accelerate launch`` its own card; deepspeed.initialize does the same. A device selected at
    import first claimed card DEVICE_ID in every worker. Such a script, itself or through a
    function of a module it calls, selects DEVICE_ID only where the environment sets it."""
    out, selects = selections(tmp_path, FRAMEWORK_SELECTING)
    assert selects == {
        "train_vit.py": "where set",
        "train_ds.py": "where set",
        "helpers.py": "no",
        "train_helped.py": "where set",
        "slowfast/misc.py": "no",
        "run_net.py": "where set",
        "train_own.py": "always",
    }
    messages = {
        row[0]: row[4]
        for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")
        if row[5] == "G2N720" and row[0] in ("train_vit.py", "train_ds.py")
    }
    taken = (
        "insert the statements that take DEVICE_ID from the environment (selecting it only where it is set"
    )
    assert messages == {
        "train_vit.py": f"{taken}: the script selects its device itself, line 5)",
        "train_ds.py": f"{taken}: the script selects its device itself, line 5)",
    }


SELECTING_ELSEWHERE = {
    "utils.py": (
        "import os\n\nimport torch\n\n\ndef init_distributed_mode(args):\n"
        "    args.gpu = int(os.environ['LOCAL_RANK'])\n    torch.cuda.set_device(args.gpu)\n\n\n"
        "def helper():\n    return 1\n"
    ),
    "cm/dist_util.py": (
        "import os\n\n\nclass Setup:\n    def setup_dist(self):\n"
        "        os.environ['CUDA_VISIBLE_DEVICES'] = os.environ['LOCAL_RANK']\n"
    ),
    "cm/claims.py": "import torch\n\ntorch.cuda.set_device(int(__import__('os').environ['LOCAL_RANK']))\n",
    "train_caption.py": (
        "import torch\n\nimport utils\n\n\ndef main(args):\n    utils.init_distributed_mode(args)\n"
        "    print(torch.ones(2).cuda())\n\n\nif __name__ == '__main__':\n    main(None)\n"
    ),
    "cm_train.py": (
        "import torch\nfrom cm.dist_util import Setup\n\nif __name__ == '__main__':\n"
        "    Setup().setup_dist()\n    print(torch.ones(2).cuda())\n"
    ),
    "claim.py": (
        "import torch\nimport cm.claims\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n"
    ),
    "evaluate.py": (
        "import torch\nfrom utils import helper\n\nif __name__ == '__main__':\n"
        "    print(helper(), torch.ones(2).cuda())\n"
    ),
    # pycls: the function the script calls forks workers that select their card
    "pc/distributed.py": (
        "import torch\n\n\ndef setup_distributed(rank):\n    torch.cuda.set_device(rank)\n\n\n"
        "def single_proc_run(rank, fun):\n    setup_distributed(rank)\n    fun()\n\n\n"
        "def multi_proc_run(num_proc, fun):\n"
        "    torch.multiprocessing.start_processes(single_proc_run, args=(fun,), nprocs=num_proc, "
        "start_method='fork')\n"
    ),
    "run_net.py": (
        "import torch\nimport pc.distributed as dist\n\nif __name__ == '__main__':\n"
        "    dist.multi_proc_run(2, lambda: print(torch.ones(2).cuda()))\n"
    ),
}


def test_a_script_whose_imported_module_selects_its_device_is_not_given_a_device_at_import(tmp_path):
    """BLIP's train scripts call ``utils.init_distributed_mode`` (``set_device(args.gpu)``, a
    rank) and consistency_models' ``dist_util.setup_dist`` sets the visible devices: a device
    selected at import claimed card DEVICE_ID in every torchrun worker first. A script that
    imports such a module without calling that function still selects DEVICE_ID. pycls's
    run_net.py calls multi_proc_run, which forks workers that call setup_distributed: a card
    selected in the parent made every forked worker fail to initialise the NPU again."""
    source, out = migrated_project(tmp_path, SELECTING_ELSEWHERE)
    entries = ["train_caption.py", "cm_train.py", "claim.py", "evaluate.py", "run_net.py"]
    selects = {name: selection((out / name).read_text()) for name in entries}
    assert selects == {
        "run_net.py": "where set",  # selected in the parent, the card is claimed before the fork
        "train_caption.py": "where set",
        "cm_train.py": "no",  # the visible devices set: a selection before would void them
        "claim.py": "where set",
        "evaluate.py": "always",
    }
    inserts = {
        row[0]: row[4]
        for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")
        if row[5] == "G2N720" and row[0] in entries
    }
    taken = "insert the statements that take DEVICE_ID from the environment"
    assert inserts == {
        "train_caption.py": f"{taken} (selecting it only where it is set: the script calls "
        "init_distributed_mode of utils.py, which selects its device, line 8)",
        "cm_train.py": f"{taken} (not selecting it: the script calls setup_dist of cm/dist_util.py, "
        "which selects its device, line 6)",
        "claim.py": f"{taken} (selecting it only where it is set: the script imports cm/claims.py, which "
        "selects its device on import, line 3)",
        "evaluate.py": taken,
        "run_net.py": f"{taken} (selecting it only where it is set: the script calls multi_proc_run of "
        "pc/distributed.py, which selects its device, line 14)",
    }
    # named with --entry, the script's imports are still read
    result, out = migrate_s(
        tmp_path, "-s", "--entry", source / "train_caption.py", source=source, out="named"
    )
    assert result.returncode == 0, result.stderr
    assert selection((out / "train_caption.py").read_text()) == "where set"


IMPORTED_SCRIPTS = {
    "val.py": (
        "import torch\n\n\ndef run(model):\n    return model(torch.ones(2).cuda())\n\n\n"
        "if __name__ == '__main__':\n    # a demo\n    print(run(torch.nn.Identity()))\n"
    ),
    "model.py": (
        "import torch\n\nDEFAULT = torch.zeros(2).cuda()\n\nif __name__ == '__main__':\n    print(DEFAULT)\n"
    ),
    "train.py": (
        "import torch\n\nimport model\nimport val\n\nif __name__ == '__main__':\n    print(val.run(model))\n"
    ),
}


def test_a_script_other_files_import_selects_the_device_in_its_main_block(tmp_path):
    """yolov5's val.py and LLaMA-Factory's library modules run a demo under ``__main__`` and are
    imported by the training scripts: a device selected at their top claimed card DEVICE_ID in
    every importing torchrun worker. It is selected in the ``__main__`` block instead, unless
    code above the block uses the device (it must run on the chosen card)."""
    source, out = migrated_project(tmp_path, IMPORTED_SCRIPTS)
    assert (out / "val.py").read_text() == (
        "import torch\nimport torch_npu\nimport os\n"
        "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n\n\n"
        "def run(model):\n    return model(torch.ones(2).npu())\n\n\n"
        "if __name__ == '__main__':\n    # a demo\n    torch_npu.npu.set_device(DEVICE_ID)\n"
        "    print(run(torch.nn.Identity()))\n"
    )
    assert "import os\n" + BLOCK in (out / "model.py").read_text()  # DEFAULT is made at import
    assert "import os\n" + BLOCK in (out / "train.py").read_text()  # nothing imports it
    inserts = [
        row[:5]
        for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")
        if row[0] == "val.py"
    ]
    assert inserts == [
        ["val.py", "1", "1", "INSERT", "insert import torch_npu"],
        ["val.py", "1", "1", "INSERT", "insert the statements that take DEVICE_ID from the environment"],
        ["val.py", "5", "5", "MODIFY", "change function cuda to npu"],
        [
            "val.py",
            "9",
            "9",
            "INSERT",
            "select DEVICE_ID when the module runs as a script (other files import it)",
        ],
    ]


def test_a_script_whose_name_a_package_module_shares_selects_the_device_at_its_top(tmp_path):
    """Open-Sora's scripts/diffusion/train.py, LAVIS's train.py: a package's ``from .train import
    f`` imports the package's own train.py, not the script, which nothing imports: its device is
    selected at its top, with no row saying other files import it."""
    script = "import torch\nimport pkg.sub\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n"
    files = {
        "train.py": script,
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from .train import f\n",
        "pkg/sub/train.py": "def f():\n    return 1\n",
    }
    source, out = migrated_project(tmp_path, files)
    assert (out / "train.py").read_text() == (
        "import torch\nimport torch_npu\nimport pkg.sub\nimport os\n" + BLOCK + "\n"
        "if __name__ == '__main__':\n    print(torch.ones(2).npu())\n"
    )
    messages = [row[4] for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")]
    assert not [m for m in messages if m.startswith("select DEVICE_ID when the module runs as a script")]


def test_a_package_module_with_a_demo_selects_the_device_in_its_main_block(tmp_path):
    """vit-pytorch's 26 package modules each run a demo under ``__main__`` and no project file
    imports them, but the package's users do: a device selected at their top moved a worker that
    had selected card 1 back to card 0 on import. A module of a folder holding __init__.py counts
    as imported; a script at the root does not."""
    demo = "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n"
    source, out = migrated_project(
        tmp_path, {"vit_pkg/__init__.py": "", "vit_pkg/look_vit.py": demo, "demo.py": demo}
    )
    assert (out / "vit_pkg" / "look_vit.py").read_text() == (
        "import torch\nimport torch_npu\nimport os\n"
        "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n\n"
        "if __name__ == '__main__':\n    torch_npu.npu.set_device(DEVICE_ID)\n"
        "    print(torch.ones(2).npu())\n"
    )
    assert "import os\n" + BLOCK in (out / "demo.py").read_text()
    assert [
        row[4]
        for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")
        if row[0] == "vit_pkg/look_vit.py" and row[3] == "INSERT"
    ][-1] == "select DEVICE_ID when the module runs as a script (a module of a package: its users import it)"


SPREAD = """import os
import torch


def spread(model, root, mapping):
    for path, target_index in mapping.items():
        model.get_submodule(path).to(torch.device(root.type, target_index))
    return [torch.device("cuda", i) for i in range(2)]


def init_slurm():
    proc_id = int(os.environ['SLURM_PROCID'])
    num_gpus = torch.cuda.device_count()
    torch.cuda.set_device(proc_id % num_gpus)


def pinned(args):
    return torch.device("cuda", args.gpu)


def knn(points):
    points_device = points.device
    if torch.cuda.current_device() != points_device:
        torch.cuda.set_device(points_device)
    return points.cuda(points.get_device())


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda", 0)
        torch.cuda.set_device(self.device)


def layer_norm(x):
    with torch.cuda.device(x.device.index):
        return x * 2
"""


TRAIN_LOOP = """import torch

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.ones(1, 2).cuda()).sum().backward()
    opt.step()
"""


def migrated_beside_a_trainer(tmp_path, flag, name, text):
    """The -s or distributed migration of ``name`` (``text``) beside a main script that trains."""
    source = tmp_path / "proj"
    write(source / name, text)
    write(source / "train.py", TRAIN_LOOP)
    mode = ["-s"] if flag == "-s" else ["distributed", "-m", source / "train.py"]
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.8.0", *mode)
    assert result.returncode == 0, result.stderr
    return next((tmp_path / "out").iterdir())


def kept_rows(out):
    """File, lines, name and tip of each row of the migration's unsupported_api.csv."""
    return [row[:5] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]


@pytest.mark.parametrize("flag,name", [("-s", "DEVICE_ID"), ("distributed", "LOCAL_RANK")])
def test_an_index_per_loop_iteration_from_a_slurm_rank_or_of_placed_data_is_kept_and_reported(
    tmp_path, flag, name
):
    """litgpt's sequential generation spreads blocks over cards with a loop's variable, mmcv's
    SLURM set-up computes the card from SLURM_PROCID, and mmcv's ops follow their input's card:
    an index from the environment in their place put every block (every process, every input)
    on one card. A fixed choice, and a trainer's own device, still change."""
    out = migrated_beside_a_trainer(tmp_path, flag, "spread.py", SPREAD)
    text = (out / "spread.py").read_text()
    assert "torch.device(root.type, target_index)" in text
    assert 'return [torch.device("npu", i) for i in range(2)]\n' in text
    assert "    torch.npu.set_device(proc_id % num_gpus)\n" in text
    assert f'    return torch.device("npu", {name})\n' in text
    assert "        torch.npu.set_device(points_device)\n    return points.npu(points.get_device())\n" in text
    assert "    with torch.npu.device(x.device.index):\n" in text
    assert (
        f'        self.device = torch.device("npu", {name})\n        torch.npu.set_device({name})\n' in text
    )
    kept = kept_rows(out)
    loop_tip = (
        "left as it is: a loop's variable gives each iteration its own card (a model spread over cards); "
        "with one process per card from the environment, check that every index it takes is a card "
        "this process has"
    )
    rank_tip = (
        "left as it is: the device already comes from the environment or a rank; check that it agrees "
        "with the index the migration takes from the environment"
    )
    placed_tip = (
        "left as it is: the device some data already lives on (a tensor's or a module's, or a card of "
        "a model's device map); the call follows that data to its card"
    )
    assert kept == [
        ["spread.py", "7", "7", "torch.device", loop_tip],
        ["spread.py", "8", "8", "torch.device", loop_tip],
        ["spread.py", "14", "14", "torch.cuda.set_device", rank_tip],
        ["spread.py", "24", "24", "torch.cuda.set_device", placed_tip],
        ["spread.py", "25", "25", "*.cuda", placed_tip],
        ["spread.py", "35", "35", "torch.cuda.device", placed_tip],  # mamba's kernels: x.device.index
    ]


@pytest.mark.parametrize("flag", ["-s", "distributed"])
def test_a_card_named_beside_a_ranks_is_kept_and_reported(tmp_path, flag):
    """open_flamingo's --no-set-device-rank branch keeps 'cuda:0' (one visible card per process)
    beside "cuda:%d" % args.local_rank: an index from the environment there is no card at all."""
    out = migrated_beside_a_trainer(
        tmp_path,
        flag,
        "dist.py",
        "import torch\n\n\ndef device_of(args):\n    if args.distributed and not args.no_set_device_rank:\n"
        '        device = "cuda:%d" % args.local_rank\n    else:\n        device = "cuda:0"\n'
        "    torch.cuda.set_device(device)\n    return device\n\n\n"
        'def pick(local_rank):\n    return "cuda:0" if local_rank < 0 else f"cuda:{local_rank}"\n',
    )
    text = (out / "dist.py").read_text()
    assert '    else:\n        device = "npu:0"\n' in text
    assert '    return "npu:0" if local_rank < 0 else f"npu:{local_rank}"\n' in text
    tip = (
        "kept: the other branch takes the card from a rank or the environment, so this one is the code's "
        "own choice (one visible card per process, or a one-process default); check it against the index "
        "the migration takes from the environment"
    )
    kept = kept_rows(out)
    assert [row for row in kept if row[3] == "'cuda:0'"] == [
        ["dist.py", "8", "8", "'cuda:0'", tip],
        ["dist.py", "14", "14", "'cuda:0'", tip],
    ]


MASKED_MAIN = """import argparse
import multiprocessing as mp
import os

from worker import train

parser = argparse.ArgumentParser()
parser.add_argument("--devices", type=str, nargs="+", default=["cuda:0"])


def process_main(rank, devices):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(devices[rank].split(":")[-1])
    train()


if __name__ == "__main__":
    args = parser.parse_args()
    mp.set_start_method("spawn")
    for rank in range(len(args.devices)):
        process = mp.Process(target=process_main, args=(rank, args.devices))
        process.start()
        process.join()
        assert process.exitcode == 0
"""

MASKED_WORKER = """import os

import torch

if "SLURM_LOCALID" in os.environ:
    os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["SLURM_LOCALID"]


def train():
    device = torch.device("cuda:0")
    torch.cuda.set_device(device)
    x = torch.ones(2).cuda(0).to(device)
    print(torch.cuda.device_count(), torch.cuda.current_device(), float(x.sum()), flush=True)
"""

MASK_TIP = (
    "kept: this file sets the visible cards itself (CUDA_VISIBLE_DEVICES in Python), after which the "
    "process numbers the cards it sees from 0; the index from the environment may name a card it "
    "cannot see"
)


@pytest.mark.parametrize("flag", ["-s", "distributed"])
def test_devices_in_a_file_that_sets_the_visible_cards_are_kept_and_reported(tmp_path, flag):
    """ijepa's workers see one card each (CUDA_VISIBLE_DEVICES set per process) and train on
    'cuda:0': the index from the environment there named a card the process could not see."""
    out = migrated_beside_a_trainer(tmp_path, flag, "worker.py", MASKED_WORKER)
    text = (out / "worker.py").read_text()
    assert text.endswith(
        '    device = torch.device("npu:0")\n    torch.npu.set_device(device)\n'
        "    x = torch.ones(2).npu(0).to(device)\n"
        "    print(torch.npu.device_count(), torch.npu.current_device(), float(x.sum()), flush=True)\n"
    )
    kept = kept_rows(out)
    assert [row for row in kept if row[0] == "worker.py"] == [
        ["worker.py", "10", "10", "'cuda:0'", MASK_TIP],
        ["worker.py", "11", "11", "torch.cuda.set_device", MASK_TIP],
        ["worker.py", "12", "12", "*.cuda", MASK_TIP],
    ]


def test_a_worker_behind_a_per_process_mask_trains_on_the_card_it_sees(tmp_path):
    """Run under the stand-in with four cards, DEVICE_ID=3 and ``--devices cuda:3``: the child
    sees card 3 alone, as its card 0 (set_device(DEVICE_ID) failed there: index 3 of 1 card)."""
    pytest.importorskip("torch")
    _, out = migrated_project(tmp_path, {"main.py": MASKED_MAIN, "worker.py": MASKED_WORKER})
    assert '    os.environ["ASCEND_RT_VISIBLE_DEVICES"] = str(devices[rank]' in (out / "main.py").read_text()
    env = {**os.environ, "DEVICE_ID": "3"}
    run = run_cli(
        "run", "--devices", "4", "--", sys.executable, "main.py", "--devices", "npu:3", cwd=out, env=env
    )
    assert (run.returncode, run.stdout) == (0, "1 0 2.0\n"), run.stderr


SPAWNED = """import torch
import torch.multiprocessing as mp


def distributed_main(i, cfg):
    cfg.device_id = i
    if torch.cuda.is_available():
        torch.cuda.set_device(cfg.device_id)
    print(f"worker {i}: card {torch.cuda.current_device()}", flush=True)


def worker(index):
    torch.cuda.set_device(index)


class Cfg(dict):
    pass


if __name__ == "__main__":
    mp.spawn(fn=distributed_main, args=(Cfg(),), nprocs=torch.cuda.device_count(), join=True)
"""


@pytest.mark.parametrize("flag", ["-s", "distributed"])
def test_a_spawned_workers_card_stays_its_index(tmp_path, flag):
    """fairseq's ``distributed_main(i, ...)``, the target of ``mp.spawn``, selects card ``i``
    (through ``cfg.device_id = i``): with the environment's index in its place every spawned
    worker took card 0. A function no process starts still takes it. Run under the stand-in
    with two emulated cards."""
    out = migrated_beside_a_trainer(tmp_path, flag, "dist.py", SPAWNED)
    text = (out / "dist.py").read_text()
    assert "        torch.npu.set_device(cfg.device_id)\n" in text
    assert f"    torch.npu.set_device({'DEVICE_ID' if flag == '-s' else 'LOCAL_RANK'})\n" in text
    kept = [row[:4] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert ["dist.py", "8", "8", "torch.cuda.set_device"] in kept
    pytest.importorskip("torch")
    run = run_cli("run", "--devices", "2", "--", sys.executable, "dist.py", cwd=out)
    assert run.returncode == 0, run.stderr
    # the two workers print at once: their lines may interleave
    assert sorted(re.findall(r"worker \d: card \d", run.stdout)) == ["worker 0: card 0", "worker 1: card 1"]


SPAWNED_THROUGH_MAIN = """import torch


def main(cfg):
    if torch.cuda.is_available():
        torch.cuda.set_device(cfg.device_id)
    print(f"worker {cfg.device_id}: card {torch.cuda.current_device()}", flush=True)


def distributed_main(device_id, cfg):
    cfg.device_id = device_id
    main(cfg)


class Cfg:
    pass


if __name__ == "__main__":
    torch.multiprocessing.spawn(fn=distributed_main, args=(Cfg(),), nprocs=torch.cuda.device_count())
"""


@pytest.mark.parametrize("flag", ["-s", "distributed"])
def test_a_spawned_workers_card_stays_its_index_in_the_function_it_calls(tmp_path, flag):
    """mmf's run.py: ``distributed_main(device_id, ...)`` sets ``config.device_id = device_id``
    and calls ``main``, which selects ``config.device_id``: with the environment's index in its
    place both workers took one card, and HCCL's first all_reduce failed."""
    out = migrated_beside_a_trainer(tmp_path, flag, "run.py", SPAWNED_THROUGH_MAIN)
    assert "        torch.npu.set_device(cfg.device_id)\n" in (out / "run.py").read_text()
    kept = [row[:4] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert ["run.py", "6", "6", "torch.cuda.set_device"] in kept
    pytest.importorskip("torch")
    run = run_cli("run", "--devices", "2", "--", sys.executable, "run.py", cwd=out)
    assert run.returncode == 0, run.stderr
    assert sorted(re.findall(r"worker \d: card \d", run.stdout)) == ["worker 0: card 0", "worker 1: card 1"]


def test_an_entry_script_using_torch_through_the_project_s_modules_selects_device_id(tmp_path):
    """llm-foundry's scripts/train/train.py and alignment-handbook's sft.py import no torch: the
    training is in the package they call. They got no selection, so DEVICE_ID=1 trained on card
    0. A script that imports torch through no module (data preparation) gets nothing."""
    files = {
        "pkg/__init__.py": "from .train import train\n",
        "pkg/train.py": "import torch\n\n\ndef train():\n    return torch.ones(2).cuda()\n",
        "train.py": "from pkg import train\n\nif __name__ == '__main__':\n    train()\n",
        "prepare.py": "import json\n\nif __name__ == '__main__':\n    print(json.dumps([]))\n",
    }
    source, out = migrated_project(tmp_path, files)
    assert (out / "train.py").read_text() == (
        "from pkg import train\nimport os\nimport torch_npu\n"
        "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
        "torch_npu.npu.set_device(DEVICE_ID)\n\nif __name__ == '__main__':\n    train()\n"
    )  # at its top: pkg's ``from .train import train`` imports pkg/train.py, not this script
    assert (out / "prepare.py").read_bytes() == (source / "prepare.py").read_bytes()


DEVICE_CONTEXT = """import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--gpu-index", default=0, type=int)


def main():
    args = parser.parse_args()
    with torch.cuda.device(args.gpu_index):
        print(f"card {torch.cuda.current_device()}", flush=True)
    for i in range(torch.cuda.device_count()):
        with torch.cuda.device(i):
            torch.cuda.empty_cache()
    with torch.cuda.device(torch.cuda.current_device()):
        print(f"still {torch.cuda.current_device()}", flush=True)


if __name__ == "__main__":
    main()
"""


# -s selects DEVICE_ID's card at the start of run.py; distributed selects LOCAL_RANK's in the
# trainer only, so run.py's current device is card 0 outside the context
@pytest.mark.parametrize("flag,name,current", [("-s", "DEVICE_ID", "1"), ("distributed", "LOCAL_RANK", "0")])
def test_a_device_context_selects_the_card_from_the_environment(tmp_path, flag, name, current):
    """SimCLR trains inside ``with torch.cuda.device(args.gpu_index)`` (0 by default): kept, it
    put every process on card 0 whatever DEVICE_ID or LOCAL_RANK said. It selects that card now,
    as ``set_device`` does; a loop's variable (a card each) stays, with its row, and so does the
    current device, unreported (sd-scripts: under accelerate, DEVICE_ID unset, every rank's
    context went to card 0). Run under the stand-in with two cards and the index 1."""
    out = migrated_beside_a_trainer(tmp_path, flag, "run.py", DEVICE_CONTEXT)
    text = (out / "run.py").read_text()
    assert f"    with torch.npu.device({name}):\n" in text
    assert "        with torch.npu.device(i):\n" in text
    assert "    with torch.npu.device(torch.npu.current_device()):\n" in text
    assert [row[:4] for row in kept_rows(out)] == [["run.py", "14", "14", "torch.cuda.device"]]
    pytest.importorskip("torch")
    env = {**os.environ, name: "1"}
    run = run_cli("run", "--devices", "2", "--", sys.executable, "run.py", cwd=out, env=env)
    assert (run.returncode, run.stdout) == (0, f"card 1\nstill {current}\n"), run.stderr


def test_a_config_key_named_like_the_variable_is_no_index_from_the_environment(tmp_path):
    """SRGAN: torch.device("cuda", config["DEVICE_ID"]) is card 0 of its config in every process;
    the key's text is not the DEVICE_ID the block binds, so the index is replaced like any other."""
    text = (
        "import torch\n\nconfig = {'DEVICE_ID': 0}\n\nif __name__ == '__main__':\n"
        "    device = torch.device('cuda', config['DEVICE_ID'])\n"
        "    same = torch.device('cuda', DEVICE_ID)\n"
    )
    _, out = migrated_project(tmp_path, {"train.py": text})
    migrated = (out / "train.py").read_text()
    assert "    device = torch.device('npu', DEVICE_ID)\n" in migrated
    assert "    same = torch.device('npu', DEVICE_ID)\n" in migrated


OPTIONAL_MASK = """import os

import torch


def select_device(device=""):
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
    elif device:
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
"""
OPTIONAL_MASK_MAIN = """import argparse

import torch

from utils import select_device

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="")
    device = select_device(parser.parse_args().device)
    x = torch.ones(2).to(device)
    print(device, torch.cuda.current_device(), torch.cuda.device_count())
"""


def test_a_mask_set_only_when_an_option_asks_leaves_the_card_to_device_id(tmp_path):
    """yolov5's select_device sets CUDA_VISIBLE_DEVICES only under ``elif device:`` (``--device``)
    and then returns 'cuda:0': without the option every process trained on card 0 whatever
    DEVICE_ID said. The card becomes DEVICE_ID's and the script selects it where it is set; run
    under the stand-in with four cards, DEVICE_ID=3 trains on card 3, and ``--device 2`` without
    DEVICE_ID on the one card the mask leaves (its 0)."""
    pytest.importorskip("torch")
    _, out = migrated_project(tmp_path, {"utils.py": OPTIONAL_MASK, "detect.py": OPTIONAL_MASK_MAIN})
    assert (
        "torch.device(f'npu:{DEVICE_ID}' if torch.npu.is_available() else \"cpu\")"
        in (out / "utils.py").read_text()
    )
    assert selection((out / "detect.py").read_text()) == "where set"
    standin = ["run", "--devices", "4", "--", sys.executable, "detect.py"]
    chosen = run_cli(*standin, cwd=out, env={**os.environ, "DEVICE_ID": "3"})
    assert (chosen.returncode, chosen.stdout) == (0, "npu:3 3 4\n"), chosen.stderr
    unset = {key: value for key, value in os.environ.items() if key != "DEVICE_ID"}
    masked = run_cli(*standin, "--device", "2", cwd=out, env=unset)
    assert (masked.returncode, masked.stdout) == (0, "npu:0 0 1\n"), masked.stderr


OWN_DEVICE_ID = """import os
import torch

DEVICE = "cuda"
DEVICE_ID = "0"
CUDA_DEVICE = f"{DEVICE}:{DEVICE_ID}" if DEVICE_ID else DEVICE


def torch_gc():
    if torch.cuda.is_available():
        with torch.cuda.device(CUDA_DEVICE):
            torch.cuda.empty_cache()
    return torch.cuda.current_device()


if __name__ == "__main__":
    print("card", torch_gc())
"""
OWN_DEVICE_ID_BLOCK = (
    "import torch_npu\n"
    "DEVICE_ID_ = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
    "torch_npu.npu.set_device(DEVICE_ID_)\n"
)


def test_a_module_binding_its_own_device_id_gets_the_environments_under_another_name(tmp_path):
    """ChatGLM-6B's api.py binds ``DEVICE_ID = "0"``: -s wrote ``torch.npu.device(DEVICE_ID)`` with
    the module's string (torch_npu: "Invalid device string: '0'") and, the name being bound, no
    selection. The environment's index is now DEVICE_ID_ there; a second migration adds nothing.
    Proof by running under the stand-in with DEVICE_ID=1."""
    write(tmp_path / "proj" / "api.py", OWN_DEVICE_ID)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "-s")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    expected = (
        OWN_DEVICE_ID.replace("import torch\n", "import torch\n" + OWN_DEVICE_ID_BLOCK)
        .replace("torch.cuda.", "torch.npu.")
        .replace('"cuda"', '"npu"')
        .replace("device(CUDA_DEVICE)", "device(DEVICE_ID_)")
    )
    assert (out / "api.py").read_text() == expected
    again = run_cli("migrate", "-i", out, "-o", tmp_path / "again", "-v", "2.8.0", "-s")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "proj_msft_msft" / "api.py").read_text() == expected
    pytest.importorskip("torch")
    env = {**os.environ, "DEVICE_ID": "1"}
    run = run_cli("run", "--devices", "2", "--", sys.executable, "api.py", cwd=out, env=env)
    assert (run.returncode, run.stdout) == (0, "card 1\n"), run.stderr


NOT_MAIN_GUARD = """import torch

if __name__ != "__main__":
    import json


def run():
    return torch.ones(1).cuda()


if __name__ == "__main__":
    print(run())
"""


def test_a_guard_of_what_runs_on_import_is_no_main_guard(tmp_path):
    """open_clip's tests/util_test.py: ``if __name__ != '__main__':`` was taken for the main
    guard, so importing the module selected the card and running it did not."""
    write(tmp_path / "proj" / "util_test.py", NOT_MAIN_GUARD)
    write(tmp_path / "proj" / "use.py", "import util_test\n\nprint(util_test.run())\n")
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "-s")
    assert result.returncode == 0, result.stderr
    block = (
        "import torch_npu\nimport os\n"
        "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
    )
    assert (tmp_path / "out" / "proj_msft" / "util_test.py").read_text() == NOT_MAIN_GUARD.replace(
        "import torch\n", "import torch\n" + block
    ).replace(".cuda()", ".npu()").replace(
        '== "__main__":\n', '== "__main__":\n    torch_npu.npu.set_device(DEVICE_ID)\n'
    )


OTHER_ACCELERATORS = """import torch

def place(model, is_xpu_available):
    if is_xpu_available():
        model.to("xpu:0")
    elif torch.backends.mps.is_available():
        model.to("mps:0")
    else:
        model.to("cuda:1")
    return model.to("hpu:1", non_blocking=True)
"""


@pytest.mark.parametrize("style", ["specify-device", "distributed"])
def test_another_accelerators_device_string_keeps_its_card(style):
    """llama-recipes' ``model.to("xpu:0")`` under ``if is_xpu_available():`` became the NPU's card
    from the environment: the XPU branch then sent the model to an NPU. Only a CUDA (or NPU)
    device names one of the cards the mode selects."""
    migrated = migrate_code(OTHER_ACCELERATORS, index=builtin_index(style=style))
    for kept in ('model.to("xpu:0")', 'model.to("mps:0")', 'model.to("hpu:1", non_blocking=True)'):
        assert kept in migrated
    index = {"specify-device": "DEVICE_ID", "distributed": "LOCAL_RANK"}[style]
    assert f"model.to(f'npu:{{{index}}}')" in migrated


def test_a_packages_main_module_is_an_entry(tmp_path):
    """whisper: ``python -m whisper`` runs ``whisper/__main__.py`` (``from .transcribe import cli``
    then ``cli()``), which was no entry, so -s never selected the card. Proof by running it under
    the stand-in with DEVICE_ID=1."""
    write(tmp_path / "proj" / "whisper" / "__init__.py", "")
    write(tmp_path / "proj" / "whisper" / "__main__.py", "from .transcribe import cli\n\ncli()\n")
    transcribe = 'import torch\n\n\ndef cli():\n    print("card", torch.cuda.current_device())\n'
    write(tmp_path / "proj" / "whisper" / "transcribe.py", transcribe)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "-s")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "whisper" / "__main__.py").read_text() == (
        "from .transcribe import cli\nimport os\nimport torch_npu\n"
        "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
        "torch_npu.npu.set_device(DEVICE_ID)\n\ncli()\n"
    )
    pytest.importorskip("torch")
    env = {**os.environ, "DEVICE_ID": "1"}
    run = run_cli("run", "--devices", "2", "--", sys.executable, "-m", "whisper", cwd=out, env=env)
    assert (run.returncode, run.stdout) == (0, "card 1\n"), run.stderr


COLOSSAL = """import colossalai
import torch


def main():
    colossalai.launch_from_torch({})
    print(torch.ones(1).cuda())


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("style", ["specify-device", "distributed"])
def test_colossalais_launchers_select_the_card_and_distribute(style):
    """Open-Sora's scripts call colossalai.launch_from_torch, which sets up the group and the local
    rank's card: -s selected card DEVICE_ID first in every process, and the distributed mode would
    add a second group. -s now selects only where DEVICE_ID is set; distributed adds nothing."""
    migrated = migrate_code(COLOSSAL, index=builtin_index(style=style))
    assert "torch.ones(1).npu()" in migrated
    selects = "if os.environ.get('DEVICE_ID', '').isdigit():\n    torch_npu.npu.set_device(DEVICE_ID)\n"
    assert (selects in migrated, "set_device(DEVICE_ID)" in migrated) == (style == "specify-device",) * 2
    assert "init_process_group" not in migrated and "DistributedDataParallel" not in migrated


LOCAL_PROCESS = """import os

import torch


class PartialState:
    def __init__(self):
        self.local_process_index = int(os.environ.get("LOCAL_RANK", -1))

    def set_device(self):
        device_index = self.local_process_index % torch.cuda.device_count()
        self.device = torch.device("cuda", device_index)
        torch.cuda.set_device(self.device)
"""


def test_an_index_computed_from_the_local_process_index_stays():
    """Accelerate's PartialState.set_device: ``self.local_process_index % device_count()`` (its
    LOCAL_RANK) became DEVICE_ID, so every process of a multi-card run took the same card."""
    migrated = migrate_code(LOCAL_PROCESS, index=builtin_index(style="specify-device"))
    assert '        self.device = torch.device("npu", device_index)\n' in migrated
    assert "DEVICE_ID)" not in migrated


ALLOCATOR_BEFORE_TORCH = """\
import os
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
import torch

x = torch.zeros(4).cuda()
print(x.sum().item())
"""


def test_the_device_is_selected_after_the_environment_set_before_import_torch(tmp_path):
    """nanochat's base_train.py sets the allocator's configuration before ``import torch``; the
    device block went right after ``import os``, so set_device initialised the allocator before the
    setting (lost), and a second ``import torch_npu`` followed ``import torch``."""
    write(tmp_path / "train.py", ALLOCATOR_BEFORE_TORCH)
    result = run_cli("migrate", "-i", tmp_path / "train.py", "-o", tmp_path / "out", "-s")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "train_msft" / "train.py").read_text() == (
        "import os\n"
        'os.environ["PYTORCH_NPU_ALLOC_CONF"] = "expandable_segments:True"\n'
        "import torch\n"
        "import torch_npu\n"
        "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
        "torch_npu.npu.set_device(DEVICE_ID)\n"
        "\n"
        "x = torch.zeros(4).npu()\n"
        "print(x.sum().item())\n"
    )


RESTORED_CARD = """import os

import torch


def library_init():
    torch.cuda.set_device(0)  # a library that switches the current card (vLLM's worker set-up)


def patched_init():
    expected_device = torch.cuda.current_device()
    library_init()
    if torch.cuda.current_device() != expected_device:
        torch.cuda.set_device(expected_device)


if __name__ == "__main__":
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    patched_init()
    print("card", torch.cuda.current_device())
"""


def test_a_card_saved_from_the_current_device_and_restored_stays(tmp_path):
    """ms-swift's patch of vLLM's set-up saves ``torch.cuda.current_device()`` and restores it after
    the library switched cards: ``set_device(expected_device)`` became ``set_device(DEVICE_ID)``,
    so under torchrun (DEVICE_ID unset) rank 1 ended on card 0. A name assigned from the current
    device is the card selected already, as the call itself is; the fixed index still changes."""
    _, out = migrated_project(tmp_path, {"run.py": RESTORED_CARD})
    text = (out / "run.py").read_text()
    assert "        torch.npu.set_device(expected_device)\n" in text
    assert "    torch.npu.set_device(DEVICE_ID)  # a library that switches" in text
    pytest.importorskip("torch")
    env = {**os.environ, "LOCAL_RANK": "1"}
    run = run_cli("run", "--devices", "2", "--", sys.executable, "run.py", cwd=out, env=env)
    assert (run.returncode, run.stdout) == (0, "card 1\n"), run.stderr
