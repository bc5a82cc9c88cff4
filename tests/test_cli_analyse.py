"""`gpu2npu analyse -m torch_apis`: the API reports without a migrated tree, and -api files."""

import json

import pytest
from helpers import REPO, run_cli, run_cli_without, tree_files, write

PROJECT = REPO / "tests" / "projects" / "apis"
REPORTS = [
    "api_performance_advice.csv",
    "api_precision_advice.csv",
    "cuda_op_list.csv",
    "unknown_api.csv",
    "unsupported_api.csv",
]


def test_torch_apis_gives_the_reports_of_a_migration_and_reads_only(tmp_path):
    before = tree_files(PROJECT)
    analysed = run_cli("analyse", "-i", PROJECT, "-o", tmp_path / "a", "-v", "2.8.0", "-j", "1")
    assert analysed.returncode == 0, analysed.stderr
    assert analysed.stdout.splitlines()[0] == "unsupported_api.csv: 9 row(s)"
    migrated = run_cli("migrate", "-i", PROJECT, "-o", tmp_path / "m", "-v", "2.8.0", "-j", "1")
    assert migrated.returncode == 0, migrated.stderr
    out = tmp_path / "a" / "apis_analysis"
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORTS + ["pytorch_analysis.txt", "report.json"])
    for name in REPORTS:
        assert (out / name).read_bytes() == (
            tmp_path / "m" / "apis_msft" / "transplant_result_file" / name
        ).read_bytes(), name
    assert tree_files(PROJECT) == before


def test_api_files_make_calls_into_library_functions_unsupported(tmp_path):
    write(
        tmp_path / "full_unsupported_results.csv",
        'File,3rd-party API,Message\nlib.py,"my_lib.train_step\nmy_lib.Trainer.forward",x\n',
    )
    write(
        tmp_path / "proj" / "train.py",
        "import my_lib\n\nmy_lib.train_step(1)\nmodel = my_lib.Trainer()\nmy_lib.other()\n",
    )
    result = run_cli(
        "analyse",
        "-i",
        "proj",
        "-o",
        "out",
        "-v",
        "2.8",
        "-api",
        "full_unsupported_results.csv",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "proj_analysis" / "unsupported_api.csv").read_text().splitlines() == [
        "File,Start Line,End Line,OP,Tips,Status,Confidence,Source",
        'train.py,3,3,my_lib.train_step,"calls into my_lib.train_step, which uses APIs not supported on NPU '
        '(full_unsupported_results.csv)",unsupported,listed,user:full_unsupported_results.csv:2',
        'train.py,4,4,my_lib.Trainer,"calls into my_lib.Trainer, which uses APIs not supported on NPU '
        '(full_unsupported_results.csv)",unsupported,listed,user:full_unsupported_results.csv:0',
    ]


def test_bad_api_file_existing_output_and_unknown_mode_are_usage_errors(tmp_path):
    write(tmp_path / "proj" / "train.py", "import torch\n")
    write(tmp_path / "bad.csv", "File,API\na,b\n")
    bad = run_cli("analyse", "-i", "proj", "-o", "out", "-v", "2.8", "-api", "bad.csv", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (
        2,
        "gpu2npu: error: -api file 'bad.csv' has no '3rd-party API' column; "
        "pass the full_unsupported_results.csv of a third_party analysis\n",
    )
    assert not (tmp_path / "out" / "proj_analysis").exists()
    assert run_cli("analyse", "-i", "proj", "-o", "out", "-v", "2.8", cwd=tmp_path).returncode == 0
    again = run_cli("analyse", "-i", "proj", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert again.returncode == 2 and "already exists; pass --force to replace it" in again.stderr
    assert run_cli("analyse", "-i", "proj", "-o", "out", "-v", "2.8", "--force", cwd=tmp_path).returncode == 0
    unknown = run_cli("analyse", "-i", "proj", "-o", "out2", "-m", "everything", cwd=tmp_path)
    assert (
        unknown.returncode == 2
        and "'everything' is not one of 'torch_apis', 'third_party', 'affinity_apis', 'dynamic_shape'"
        in unknown.stderr
    )
    unused = run_cli(
        "analyse", "-i", "proj", "-o", "out2", "-m", "affinity_apis", "-api", "bad.csv", cwd=tmp_path
    )
    assert (unused.returncode, unused.stderr.splitlines()[-1]) == (
        2,
        "gpu2npu: error: -api is used by -m torch_apis and -m third_party, not by -m affinity_apis; "
        "drop -api or choose one of those modes",
    )
    assert not (tmp_path / "out2").exists()


def test_unparsable_files_are_listed_not_dropped(tmp_path):
    write(tmp_path / "proj" / "old.py", "print 'python 2'\n")
    write(tmp_path / "proj" / "train.py", "import torch\nm = torch.autograd.profiler.emit_nvtx()\n")
    result = run_cli("analyse", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_analysis"
    summary = json.loads((out / "report.json").read_text())
    assert summary["skipped_files"] == [
        {"file": "old.py", "reason": "cannot be parsed as Python 3 (syntax error at line 1)"}
    ]
    assert (
        "old.py: skipped: cannot be parsed as Python 3 (syntax error at line 1)"
        in (out / "pytorch_analysis.txt").read_text()
    )
    assert (
        (out / "unsupported_api.csv")
        .read_text()
        .splitlines()[1]
        .startswith("train.py,2,2,torch.autograd.profiler.emit_nvtx,")
    )


@pytest.mark.parametrize("mode", ["torch_apis", "dynamic_shape"])
def test_modes_that_never_need_jedi_run_without_it(tmp_path, mode):
    """msFmkTransplt crashed without jedi (its bug B1)."""
    write(tmp_path / "proj" / "train.py", "import torch\nm = torch.autograd.profiler.emit_nvtx()\n")
    result = run_cli_without(
        "jedi", "analyse", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "-m", mode
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_analysis"
    if mode == "torch_apis":
        assert (
            (out / "unsupported_api.csv")
            .read_text()
            .splitlines()[1]
            .startswith("train.py,2,2,torch.autograd.profiler.emit_nvtx,")
        )
    else:
        assert (
            "DETECTOR.hook_func(torch.autograd.profiler.emit_nvtx, 'torch.autograd.profiler.emit_nvtx', 0)"
            in (out / "train.py").read_text()
        )
