"""The whole repository through the installed command: launch scripts, configs, notebooks,
requirements, packaging, Dockerfiles and other text files, next to the Python code.

tests/projects/whole_repo/before is a small training repository with one file of each kind;
after/ is its reviewed migration, reports included (report.json and the log aside).
"""

import ast
import json
import shutil
import stat
from pathlib import Path

import bashlex
import nbformat
import pytest
import tomlkit
import yaml
from helpers import REPO, rows, run_cli, tree_files

from gpu2npu.filekinds.base import KindOutcome, Reported, mentions_left
from gpu2npu.rewrite.changes import Change

PROJECT = REPO / "tests" / "projects" / "whole_repo"
BEFORE, AFTER = PROJECT / "before", PROJECT / "after"
REPORTS = "transplant_result_file"
NOT_COMPARED = {f"{REPORTS}/report.json", f"{REPORTS}/report.html", f"{REPORTS}/msFmkTranspltlog.txt"}
PARSERS = {
    ".py": ast.parse,
    ".sh": lambda data: bashlex.parse(data.decode("utf-8")),
    ".yaml": yaml.safe_load,
    ".json": json.loads,
    ".toml": lambda data: tomlkit.parse(data.decode("utf-8")),
    ".ipynb": lambda data: nbformat.validate(nbformat.reads(data.decode("utf-8"), as_version=4)),
}


def migrate(tmp_path: Path, *extra: str, source: Path = BEFORE):
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.1.0", "-j", "1", *extra)
    assert result.returncode == 0, result.stderr
    return result, tmp_path / "out" / f"{source.name}_msft"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    return migrate(tmp_path_factory.mktemp("whole"))


def test_every_file_kind_migrates_to_the_reviewed_tree(migrated):
    _, out = migrated
    got = {rel: data for rel, data in tree_files(out).items() if rel not in NOT_COMPARED}
    assert got == tree_files(AFTER)
    assert stat.S_IMODE((out / "scripts" / "train.sh").stat().st_mode) == 0o755


def test_every_edited_file_still_parses_with_its_own_parser(migrated):
    _, out = migrated
    edited = [rel for rel, data in tree_files(BEFORE).items() if (out / rel).read_bytes() != data]
    assert sorted(edited) == [
        "configs/deepspeed.json",
        "configs/lightning.toml",
        "configs/train.yaml",
        "docker/Dockerfile",
        "notebooks/explore.ipynb",
        "pyproject.toml",
        "requirements.txt",
        "scripts/train.sh",
        "train.py",
    ]
    for rel in edited:
        parse = PARSERS.get(Path(rel).suffix)
        if parse is not None:
            parse((out / rel).read_bytes())


def test_summary_table_counts_each_file_kind(migrated):
    result, _ = migrated
    table = result.stdout[result.stdout.index("| file kind") :].split("\n+", 2)[1]
    counts = {
        cells[0]: cells[1:]
        for line in table.splitlines()
        if (cells := [cell.strip() for cell in line.strip("|").split("|")])[0] and cells[0][0].isalpha()
    }
    assert counts == {
        "dockerfile": ["1", "1", "1", "2", "0"],
        "json": ["1", "1", "2", "0", "0"],
        "notebook": ["1", "1", "15", "3", "0"],
        "packaging": ["1", "1", "2", "0", "0"],
        "python": ["1", "1", "4", "0", "0"],
        "requirements": ["1", "1", "2", "4", "0"],
        "shell": ["1", "1", "5", "3", "0"],
        "text": ["2", "0", "0", "2", "0"],
        "toml": ["1", "1", "2", "1", "0"],
        "yaml": ["1", "1", "2", "1", "0"],
    }
    assert "  1. torch: pinned: install torch==2.1.0 first, before torch_npu (2 files)" in result.stdout


def test_report_json_has_kinds_and_the_notebook_verdict(migrated):
    _, out = migrated
    report = json.loads((out / REPORTS / "report.json").read_text(encoding="utf-8"))
    assert {(f["file"], f["kind"], f["status"]) for f in report["files"]} == {
        ("notebooks/explore.ipynb", "notebook", "fully migrated"),
        ("train.py", "python", "fully migrated"),
    }
    assert report["summary"]["other_kind_files"] == 10 and report["summary"]["manual_work"] == 16
    assert report["report_rows"]["manual_work.csv"] == 16
    assert report["report_rows"]["dependency_plan.csv"] == 10


def test_the_input_is_not_modified_and_a_second_migration_changes_nothing(tmp_path):
    before = tree_files(BEFORE)
    _, out = migrate(tmp_path / "one")
    assert tree_files(BEFORE) == before
    again_source = tmp_path / "again"
    shutil.copytree(out, again_source, ignore=shutil.ignore_patterns(REPORTS))
    _, again = migrate(tmp_path / "two", source=again_source)
    assert rows(again / REPORTS / "change_list.csv")[1:] == []
    migrated_files = {rel: data for rel, data in tree_files(out).items() if not rel.startswith(REPORTS)}
    assert {
        rel: data for rel, data in tree_files(again).items() if not rel.startswith(REPORTS)
    } == migrated_files


def test_diff_shows_every_kind_and_writes_nothing(tmp_path):
    result = run_cli("migrate", "-i", BEFORE, "-o", tmp_path / "out", "-v", "2.1.0", "--diff")
    assert result.returncode == 0, result.stderr
    changed = [line[len("+++ b/") :] for line in result.stdout.splitlines() if line.startswith("+++ b/")]
    assert changed == sorted(changed) and len(changed) == 9
    assert (
        "\n-    --dist-backend nccl \\\n" in result.stdout
        and "\n+    --dist-backend hccl \\\n" in result.stdout
    )
    assert '+    "import torch_npu\\n",\n' in result.stdout
    assert not (tmp_path / "out").exists()


def test_check_reports_findings_of_every_kind_at_their_lines(tmp_path):
    result = run_cli("check", BEFORE, "-v", "2.1.0", "--format", "json", cwd=REPO)
    assert result.returncode == 1  # a CUDA base image, nvidia-smi and flash-attn are unsupported
    findings = json.loads(result.stdout)["findings"]
    where = {
        (Path(f["file"]).relative_to("tests/projects/whole_repo/before").as_posix(), f["line"], f["rule"])
        for f in findings
    }
    assert {
        ("docker/Dockerfile", 1, "G2N825"),
        ("scripts/train.sh", 6, "G2N800"),
        ("scripts/train.sh", 8, "G2N831"),
        ("configs/train.yaml", 4, "G2N830"),
        ("requirements.txt", 5, "G2N870"),
        ("notebooks/explore.ipynb", 60, "G2N317"),
        ("README.md", 3, "not-migrated"),
    } <= where
    failing = {(f["rule"], f["category"]) for f in findings if f["fails"]}
    assert ("G2N825", "unsupported") in failing and ("G2N830", "convertible") not in failing


def test_exclude_and_include_leave_files_as_they_are(tmp_path):
    _, out = migrate(tmp_path / "ex", "--exclude", "docker/", "--exclude", "*.ipynb")
    for rel in ("docker/Dockerfile", "notebooks/explore.ipynb"):
        assert (out / rel).read_bytes() == (BEFORE / rel).read_bytes()
    files = {
        row[0]
        for row in rows(out / REPORTS / "change_list.csv")[1:] + rows(out / REPORTS / "manual_work.csv")[1:]
    }
    assert not files & {"docker/Dockerfile", "notebooks/explore.ipynb"}
    _, only = migrate(tmp_path / "in", "--include", "*.py")
    assert {row[0] for row in rows(only / REPORTS / "change_list.csv")[1:]} == {"train.py"}
    assert (only / "scripts" / "train.sh").read_bytes() == (BEFORE / "scripts" / "train.sh").read_bytes()


def test_version_control_environments_and_build_output_are_left_out_by_default(tmp_path):
    source = tmp_path / "repo"
    shutil.copytree(BEFORE, source)
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (source / "venv" / "lib").mkdir(parents=True)
    (source / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (source / "venv" / "lib" / "cuda_thing.py").write_text("import torch\ntorch.cuda.init()\n")
    (source / "build" / "lib.linux-x86_64-3.11").mkdir(parents=True)
    (source / "build" / "lib.linux-x86_64-3.11" / "ext.py").write_text("x = 'cuda'\n")
    _, out = migrate(tmp_path / "out", source=source)
    assert not (out / ".git").exists() and not (out / "venv").exists() and not (out / "build").exists()
    assert rows(out / REPORTS / "skipped_files.csv")[1:] == [
        [".git", "version control; not copied (--no-default-excludes takes it)", ""],
        ["build", "build output; not copied (--no-default-excludes takes it)", ""],
        ["venv", "a virtual environment; not copied (--no-default-excludes takes it)", ""],
    ]
    _, everything = migrate(tmp_path / "all", "--no-default-excludes", "--force", source=source)
    assert (everything / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (
        everything / "venv" / "lib" / "cuda_thing.py"
    ).read_text() == "import torch\nimport torch_npu\ntorch.npu.init()\n"


def test_cuda_words_no_row_covers_get_one_row_per_file():
    data = b"# runs on CUDA\ndevice: cuda\nnote: nccl and cuDNN\nbarracuda: 1\n"
    covered = KindOutcome(changes=[Change(2, 2, "MODIFY", "change device cuda to npu", "G2N830")])
    assert mentions_left(data, covered) == [
        Reported(
            1,
            3,
            "3 CUDA mentions left as written: cuda, cudnn, nccl",
            "in comments, prose or settings no gpu2npu rule knows (a key, an option, a path): "
            "check them by hand for Ascend NPU",
            "not-migrated",
            "mention",
        )
    ]
    assert mentions_left(b"device: npu\nbarracuda: 1\n", KindOutcome()) == []
    # a CUDA build's tag (ConvNeXt's INSTALL.md), not a number that only contains those letters
    install = b"pip install torch==1.8.0+cu111 -f https://download.pytorch.org/whl/cu118\nsecu1234 acu12\n"
    assert [row.subject for row in mentions_left(install, KindOutcome())] == [
        "2 CUDA mentions left as written: cu111, cu118"
    ]


SETUP_PY = """import os

from setuptools import setup
from torch.utils import cpp_extension


def do_setup():
    setup(name="pkg", ext_modules=[cpp_extension.CppExtension("pkg.lib", ["pkg/lib.cpp"])])


if __name__ == "__main__":
    do_setup()
"""


PLUGINS_INIT = """import importlib
import os

import torch

for file in sorted(os.listdir(os.path.dirname(__file__))):
    if file.endswith(".py") and not file.startswith("_"):
        importlib.import_module("pkg." + file[:-3])
"""


@pytest.mark.parametrize("mode", [["--mode", "full"], ["--mode", "auto"], ["-s"]])
def test_a_packaging_script_or_a_package_init_is_no_entry_script(tmp_path, mode):
    """fairseq's setup.py ends in a ``__main__`` guard: as an entry script it got ``import
    torch_npu`` (auto: transfer_to_npu; -s: set_device), and pip's isolated build environment,
    which has torch but no torch_npu, failed to build the package. fairseq's
    ``optim/__init__.py`` imports its plugins in a loop at the top level: a package's init is
    imported, never run. The training script still gets them."""
    source = tmp_path / "proj"
    (source / "pkg").mkdir(parents=True)
    (source / "setup.py").write_text(SETUP_PY)
    (source / "pkg" / "__init__.py").write_text(PLUGINS_INIT)
    (source / "train.py").write_text("import torch\n\nif __name__ == '__main__':\n    print(torch.ones(1))\n")
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "--no-cache", *mode)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "setup.py").read_bytes() == SETUP_PY.encode()
    assert (out / "pkg" / "__init__.py").read_bytes() == PLUGINS_INIT.encode()
    assert "import torch_npu" in (out / "train.py").read_text()
