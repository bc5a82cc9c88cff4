"""`migrate ... distributed -m MAIN [-t MODEL]`: single card to multi-card (msFmkTransplt's syntax),
from the installed command: the fixture pair (its B20 cases), a second run that doubles nothing,
bad input, check and --diff. The proof by running two processes is in test_standin.py."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers import rows, run_cli, tree_files, write

PROJECT = Path(__file__).parent / "projects" / "distributed"
BEFORE, AFTER = PROJECT / "before", PROJECT / "after"


def distributed(tmp_path, *extra, source=BEFORE, main=None, out="out"):
    main = main if main is not None else source / "train.py"
    result = run_cli(
        "migrate", "-i", source, "-o", tmp_path / out, "-v", "2.8.0", "distributed", "-m", main, *extra
    )
    return result, tmp_path / out / f"{source.stem}_msft_multi"


def migrated_files(out: Path):
    return {
        rel: data for rel, data in tree_files(out).items() if not rel.startswith("transplant_result_file")
    }


def test_the_main_script_becomes_multi_card(tmp_path):
    result, out = distributed(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"launcher: {out / 'run_distributed_npu.sh'} [NPUS] [arguments...]" in result.stdout
    # train.py, lib/data.py and the launcher as in after/; lib/__init__.py byte for byte
    assert migrated_files(out) == tree_files(BEFORE) | tree_files(AFTER)
    assert stat.S_IMODE(os.stat(out / "run_distributed_npu.sh").st_mode) == 0o755
    reports = out / "transplant_result_file"
    changes = [
        row for row in rows(reports / "change_list.csv") if row[5] in ("G2N730", "G2N741", "G2N742", "G2N743")
    ]
    assert [row[:3] + [row[5]] for row in changes] == [
        ["train.py", "17", "17", "G2N742"],  # the loader a return statement builds, shuffle by position
        ["train.py", "38", "38", "G2N730"],  # DataParallel replaced by the model
        ["train.py", "38", "38", "G2N741"],  # DDP once, after the move (not after model.float())
        ["train.py", "44", "44", "G2N742"],  # set_epoch of the training loader
        ["train.py", "47", "47", "G2N742"],  # a loader passed as an argument
        ["train.py", "48", "48", "G2N743"],  # print and log.info on rank 0 (one if)
        ["train.py", "49", "49", "G2N743"],
        ["train.py", "50", "50", "G2N741"],  # model.module.state_dict()
        ["train.py", "50", "50", "G2N743"],  # torch.save on rank 0
        ["train.py", "51", "51", "G2N741"],  # model.module.load_state_dict() after the wrap
    ]
    assert [row[:4] + row[5:] for row in rows(reports / "unsupported_api.csv")[1:]] == [
        [
            "train.py",
            "17",
            "17",
            "torch.utils.data.DataLoader",
            "supported_with_limits",
            "listed",
            "rules:G2N742",
        ],
        ["train.py", "43", "43", "torch.utils.data.DataLoader", "unsupported", "listed", "rules:G2N742"],
    ]  # the evaluation loader stays whole; the batch_sampler one is left to the user


def test_a_script_that_is_distributed_already_gets_nothing_twice(tmp_path):
    _, out = distributed(tmp_path)
    again, out_again = distributed(tmp_path, source=out, main=out / "train.py", out="again")
    assert again.returncode == 0, again.stderr
    assert migrated_files(out_again) == migrated_files(out)
    assert rows(out_again / "transplant_result_file" / "change_list.csv")[1:] == []
    (already,) = [
        row
        for row in rows(out_again / "transplant_result_file" / "unsupported_api.csv")
        if row[3] == "distributed"
    ]
    assert already[4].startswith("the main script sets up its own process group")


def test_evaluation_loaders_are_sharded_when_asked(tmp_path):
    result, out = distributed(tmp_path, "--shard-eval")
    assert result.returncode == 0, result.stderr
    assert (
        "DataLoader(val_set, batch_size=64, "
        "sampler=torch.utils.data.distributed.DistributedSampler(val_set, shuffle=False))"
    ) in (out / "train.py").read_text()


def test_the_model_is_found_by_its_name(tmp_path):
    write(
        tmp_path / "p" / "main.py",
        "import torch\n\n\nclass Trainer:\n"
        "    def __init__(self, net):\n        self.net = net.cuda()\n\n"
        "    def fit(self, batches):\n        for epoch in range(2):\n"
        "            self.net(batches).sum().backward()\n",
    )
    result, out = distributed(
        tmp_path, "-t", "self.net", source=tmp_path / "p", main=tmp_path / "p" / "main.py"
    )
    assert result.returncode == 0, result.stderr
    assert (
        "        self.net = net.npu()\n"
        "        self.net = torch.nn.parallel.DistributedDataParallel("
        "self.net, device_ids=[LOCAL_RANK])\n"
    ) in (out / "main.py").read_text()


NOT_IN_INPUT = (
    "gpu2npu: error: -m '{main}' is not a Python file of the input '{input}'; "
    "name a .py file inside the input"
)


@pytest.mark.parametrize(
    "main,target,line",
    [
        (
            "elsewhere.py",
            "model",
            NOT_IN_INPUT,
        ),
        (
            "README.md",
            "model",
            NOT_IN_INPUT,
        ),
        (
            "train.py",
            "model[0]",
            "gpu2npu: error: -t 'model[0]' is not a variable or attribute path; "
            "give one such as model or self.model",
        ),
        (
            "lib/data.py",
            "model",
            "gpu2npu: error: the main script 'lib/data.py' has no training loop (a loop over epochs, "
            "or one calling .backward() or .step()); name the script that trains with -m",
        ),
    ],
    ids=["outside the input", "not python", "bad target", "no training loop"],
)
def test_bad_main_or_target_is_one_line_and_writes_nothing(tmp_path, main, target, line):
    source = tmp_path / "proj"
    shutil.copytree(BEFORE, source)
    (source / "README.md").write_text("# readme\n")
    write(tmp_path / "elsewhere.py", "for epoch in range(2):\n    pass\n")
    path = tmp_path / main if main == "elsewhere.py" else source / main
    result, _ = distributed(tmp_path, "-t", target, source=source, main=path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line.format(main=path, input=source)]
    assert not (tmp_path / "out").exists()


def test_distributed_without_main_is_a_usage_error(tmp_path):
    result = run_cli("migrate", "-i", BEFORE, "-o", tmp_path / "out", "distributed")
    assert result.returncode == 2
    assert "Missing option '-m' / '--main'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_diff_writes_nothing_and_shows_the_multi_card_changes(tmp_path):
    result, _ = distributed(tmp_path, "--diff")
    assert result.returncode == 2  # --diff belongs before the subcommand
    result = run_cli(
        "migrate",
        "-i",
        BEFORE,
        "-o",
        tmp_path / "out",
        "-v",
        "2.8.0",
        "--diff",
        "distributed",
        "-m",
        BEFORE / "train.py",
    )
    assert result.returncode == 0, result.stderr
    assert (
        "+    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[LOCAL_RANK])\n"
        in result.stdout
    )
    assert not (tmp_path / "out").exists()


def test_check_in_distributed_mode_lists_the_changes_and_writes_nothing(tmp_path):
    copy = tmp_path / "proj"
    shutil.copytree(BEFORE, copy)
    before = tree_files(copy)
    result = run_cli(
        "check",
        copy,
        "-v",
        "2.8.0",
        "--mode",
        "distributed",
        "--entry",
        copy / "train.py",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr  # the batch_sampler loader is manual work
    findings = json.loads(result.stdout)["findings"]
    found = sorted({(f["file"], f["line"], f["rule"]) for f in findings if f["rule"].startswith("G2N74")})
    assert found == [
        ("proj/lib/data.py", 2, "G2N740"),
        ("proj/train.py", 9, "G2N740"),
        ("proj/train.py", 17, "G2N742"),
        ("proj/train.py", 38, "G2N741"),
        ("proj/train.py", 43, "G2N742"),
        ("proj/train.py", 44, "G2N742"),
        ("proj/train.py", 47, "G2N742"),
        ("proj/train.py", 48, "G2N743"),
        ("proj/train.py", 49, "G2N743"),
        ("proj/train.py", 50, "G2N741"),
        ("proj/train.py", 50, "G2N743"),
        ("proj/train.py", 51, "G2N741"),
    ]
    assert tree_files(copy) == before


def test_help_shows_each_mode_with_an_example_and_needs_no_input():
    general = run_cli("migrate", "--help")
    assert general.returncode == 0
    assert "-s                   x = x.to('cuda:0')   ->  x = x.to(f'npu:{DEVICE_ID}')" in general.stdout
    assert "distributed -m MAIN  model = model.cuda() ->  model = model.npu()" in general.stdout
    sub = run_cli("migrate", "distributed", "--help")
    assert sub.returncode == 0, sub.stderr
    assert "-t, --target_model, --target-model TEXT" in sub.stdout and "--shard-eval" in sub.stdout
