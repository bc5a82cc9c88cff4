"""End-to-end tests of what ``gpu2npu migrate`` does with each kind of file: copies, modes,
links, files it cannot parse or decode, line ends and encodings, earlier reports."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path

from helpers import REPORT_FILES, run_cli, tree_files, write

CHANGE_HEADER = "File,Start Line,End Line,Operation Type,Message,Rule,File Kind,Cell"
A_PY = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
A_PY_NPU = "import torch\nimport torch_npu\nx = torch.zeros(2).npu()\ntorch.npu.synchronize()\n"


def migrate_ok(root: Path, *extra):
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", "-j", "1", *extra, cwd=root)
    assert result.returncode == 0, result.stderr
    return root / "out" / "proj_msft"


def read_csv(path: Path):
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def skipped(out: Path):
    rows = read_csv(out / "transplant_result_file" / "skipped_files.csv")
    assert rows[0] == ["File", "Reason", "File Kind"]
    return [row[:2] for row in rows[1:]]


def change_lines(out: Path):
    return (out / "transplant_result_file" / "change_list.csv").read_text().splitlines()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# --- copies and modes -------------------------------------------------------------------------


def test_other_files_keep_their_bytes_or_only_their_migrated_values_and_their_mode(tmp_path):
    proj = tmp_path / "proj"
    files = {
        "launch.sh": (b"#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0\npython train.py\n", 0o755),
        "data/train.bin": (bytes(range(256)) * 4, 0o640),
        "data/empty.dat": (b"", 0o600),
        "config.yaml": (b"device: cuda\r\nbackend: nccl\r\n", 0o644),
        "docs/n\u00f6tes with space.txt": ("caf\u00e9 cuda\n".encode("utf-8"), 0o444),
        "stubs/model.pyi": (b"import torch\ndef f(x: torch.Tensor) -> torch.Tensor: ...\n", 0o644),
        "cache/model.cpython-311.pyc": (b"\x00\x01cuda\xff", 0o644),
        "UPPER.PY": (b"import torch\nx = torch.zeros(1).cuda()\n", 0o644),
    }
    for rel, (data, file_mode) in files.items():
        write(proj / rel, data, mode=file_mode)
    (proj / "data").chmod(0o750)
    out = migrate_ok(tmp_path)
    migrated = {
        "launch.sh": b"#!/bin/bash\nexport ASCEND_RT_VISIBLE_DEVICES=0\npython train.py\n",
        "config.yaml": b"device: npu\r\nbackend: hccl\r\n",
    }
    for rel, (data, file_mode) in files.items():
        assert (out / rel).read_bytes() == migrated.get(rel, data), rel
        assert mode(out / rel) == file_mode, rel
    assert mode(out / "data") == 0o750
    assert [line.split(",")[0] for line in change_lines(out)[1:]] == [
        "config.yaml",
        "config.yaml",
        "launch.sh",
    ]
    report = json.loads((out / "transplant_result_file" / "report.json").read_text())
    assert report["summary"]["other_files_copied"] == 2  # the binary ones: train.bin and the .pyc
    assert report["summary"]["other_kind_files"] == 6


def test_python_files_keep_their_mode(tmp_path):
    write(tmp_path / "proj" / "train.py", A_PY, mode=0o755)
    write(tmp_path / "proj" / "tool.py", "import os\nprint(os.sep)\n", mode=0o700)
    out = migrate_ok(tmp_path)
    assert (out / "train.py").read_text() == A_PY_NPU
    assert mode(out / "train.py") == 0o755
    assert mode(out / "tool.py") == 0o700


def test_python_file_needing_no_change_is_byte_identical(tmp_path):
    sources = {
        "plain.py": b"import os\n\n\ndef f( a ,b ):   # odd spacing kept\n    return os.path.join(a,b)   \n",
        "no_newline.py": b"import numpy as np\nx = np.zeros(2)",
        "crlf.py": b"import json\r\nprint(json.dumps({'device': 'cpu'}))\r\n",
        "empty.py": b"",
        "pkg/__init__.py": b"\xef\xbb\xbf# package\n",
    }
    for rel, data in sources.items():
        write(tmp_path / "proj" / rel, data)
    out = migrate_ok(tmp_path)
    for rel, data in sources.items():
        assert (out / rel).read_bytes() == data, rel
    assert change_lines(out) == [CHANGE_HEADER]
    assert skipped(out) == []
    report = json.loads((out / "transplant_result_file" / "report.json").read_text())
    assert [(f["file"], f["changed"]) for f in report["files"]] == [(rel, False) for rel in sorted(sources)]


# --- symbolic links ---------------------------------------------------------------------------


def test_links_are_recreated_with_the_same_target_and_not_followed(tmp_path):
    proj = tmp_path / "proj"
    write(proj / "train.py", A_PY)
    write(proj / "sub" / "model.py", "import torch\nm = torch.nn.Linear(1, 1).cuda()\n")
    write(tmp_path / "outside.txt", "outside\n")
    write(tmp_path / "outside_dir" / "secret.py", A_PY)
    links = {
        "main.py": "train.py",  # to a Python file of the input
        "sub_link": "sub",  # to a directory of the input
        "sub/up.py": "../train.py",
        "dangling": "missing.txt",
        "rel_out": "../outside.txt",
        "dir_out": "../outside_dir",
        "abs_out": str(tmp_path / "outside.txt"),
    }
    for rel, target in links.items():
        os.symlink(target, proj / rel)
    out = migrate_ok(tmp_path)
    for rel, target in links.items():
        assert (out / rel).is_symlink(), rel
        assert os.readlink(out / rel) == target, rel
    assert (out / "train.py").read_text() == A_PY_NPU
    assert not (out / "dir_out").resolve().is_relative_to(out)  # still a link, not a copied folder
    assert (tmp_path / "outside_dir" / "secret.py").read_text() == A_PY
    note = "symbolic link to {}, outside the input; recreated as a link, not migrated"
    assert skipped(out) == [
        ["abs_out", note.format(tmp_path / "outside.txt")],
        ["dir_out", note.format("../outside_dir")],
        ["rel_out", note.format("../outside.txt")],
    ]
    files = [row.split(",")[0] for row in change_lines(out)[1:]]
    assert sorted(set(files)) == ["sub/model.py", "train.py"]  # links are not migrated as files
    report = json.loads((out / "transplant_result_file" / "report.json").read_text())
    assert report["summary"]["links"] == len(links)


# --- files the tool cannot migrate ------------------------------------------------------------


def test_python2_file_with_cuda_code_is_copied_and_listed(tmp_path):
    legacy = b'import torch\nprint "cuda:", torch.cuda.is_available()\n'
    write(tmp_path / "proj" / "legacy.py", legacy)
    write(tmp_path / "proj" / "train.py", A_PY)
    out = migrate_ok(tmp_path)
    assert (out / "legacy.py").read_bytes() == legacy
    assert (out / "train.py").read_text() == A_PY_NPU
    rows = skipped(out)
    assert [row[0] for row in rows] == ["legacy.py"]
    assert rows[0][1] == "cannot be parsed as Python 3 (syntax error at line 2); copied unchanged"
    assert [row.split(",")[0] for row in change_lines(out)[1:]] == ["train.py", "train.py", "train.py"]


def test_python2_file_is_copied_and_listed(tmp_path):
    write(tmp_path / "proj" / "py2.py", b'print "x"\n')
    out = migrate_ok(tmp_path)
    assert (out / "py2.py").read_bytes() == b'print "x"\n'
    rows = skipped(out)
    assert [row[0] for row in rows] == ["py2.py"]
    assert rows[0][1] == "cannot be parsed as Python 3 (syntax error at line 1); copied unchanged"


def test_invalid_utf8_file_with_cuda_code_is_copied_and_listed(tmp_path):
    data = b'import torch\nx = "\xff\xfe"\ny = torch.zeros(1).cuda()\n'
    write(tmp_path / "proj" / "bad.py", data)
    out = migrate_ok(tmp_path)
    assert (out / "bad.py").read_bytes() == data
    assert skipped(out) == [
        [
            "bad.py",
            "cannot be decoded ('utf-8' codec can't decode byte 0xff in position 18: invalid start byte); "
            "copied unchanged",
        ]
    ]
    assert change_lines(out) == [CHANGE_HEADER]


def test_invalid_utf8_file_is_copied_and_listed(tmp_path):
    data = b'x = "\xff"\n'
    write(tmp_path / "proj" / "bad.py", data)
    out = migrate_ok(tmp_path)
    assert (out / "bad.py").read_bytes() == data
    rows = skipped(out)
    assert [row[0] for row in rows] == ["bad.py"]
    assert rows[0][1].startswith("cannot be decoded"), rows[0][1]


# --- line ends, indentation, encodings ----------------------------------------------------


ENCODING_CASES = {
    "crlf.py": (
        b"import torch\r\nx = torch.zeros(2).cuda()\r\ny = 1\r\n",
        b"import torch\r\nimport torch_npu\r\nx = torch.zeros(2).npu()\r\ny = 1\r\n",
    ),
    "tabs.py": (
        b"import torch\ndef f(x):\n\tif x:\n\t\treturn x.cuda()\n\treturn x\n",
        b"import torch\nimport torch_npu\ndef f(x):\n\tif x:\n\t\treturn x.npu()\n\treturn x\n",
    ),
    "bom.py": (
        b"\xef\xbb\xbfimport torch\nx = torch.zeros(1).cuda()\n",
        b"\xef\xbb\xbfimport torch\nimport torch_npu\nx = torch.zeros(1).npu()\n",
    ),
    "latin1.py": (
        b'# -*- coding: latin-1 -*-\nimport torch\ns = "caf\xe9"\nx = torch.zeros(1).cuda()  # \xe9t\xe9\n',
        b'# -*- coding: latin-1 -*-\nimport torch\nimport torch_npu\ns = "caf\xe9"\n'
        b"x = torch.zeros(1).npu()  # \xe9t\xe9\n",
    ),
    "gbk.py": (
        "# -*- coding: gbk -*-\nimport torch\n# 训练\nx = torch.zeros(1).cuda()  # 设备\n".encode("gbk"),
        (
            "# -*- coding: gbk -*-\nimport torch\nimport torch_npu\n# 训练\n"
            "x = torch.zeros(1).npu()  # 设备\n"
        ).encode("gbk"),
    ),
    "bom_crlf_tabs.py": (
        b"\xef\xbb\xbfimport torch\r\nif True:\r\n\tx = torch.zeros(1).cuda()\r\n",
        b"\xef\xbb\xbfimport torch\r\nimport torch_npu\r\nif True:\r\n\tx = torch.zeros(1).npu()\r\n",
    ),
    "no_newline.py": (
        b"import torch\nx = torch.zeros(1).cuda()",
        b"import torch\nimport torch_npu\nx = torch.zeros(1).npu()",
    ),
}


def test_line_ends_indentation_and_encodings_are_kept(tmp_path):
    for name, (before, _) in ENCODING_CASES.items():
        write(tmp_path / "proj" / name, before)
    out = migrate_ok(tmp_path)
    for name, (_, after) in ENCODING_CASES.items():
        assert (out / name).read_bytes() == after, name
    assert skipped(out) == []
    modify_lines = {
        row.split(",")[0]: row.split(",")[1] for row in change_lines(out)[1:] if ",MODIFY," in row
    }
    assert modify_lines == {
        "bom.py": "2",
        "bom_crlf_tabs.py": "3",
        "crlf.py": "2",
        "gbk.py": "4",
        "latin1.py": "4",
        "no_newline.py": "2",
        "tabs.py": "4",
    }


# --- reports of an earlier run in the input ---------------------------------------------------


def test_earlier_reports_in_the_input_are_not_copied(tmp_path):
    proj = tmp_path / "proj"
    write(proj / "train.py", A_PY)
    write(proj / "transplant_result_file" / "change_list.csv", "stale\n")
    write(proj / "transplant_result_file" / "old_notes.txt", "from an earlier run\n")
    out = migrate_ok(tmp_path)
    assert sorted(os.listdir(out)) == ["train.py", "transplant_result_file"]
    assert sorted(os.listdir(out / "transplant_result_file")) == REPORT_FILES
    assert change_lines(out)[0] == CHANGE_HEADER and len(change_lines(out)) == 4
    assert skipped(out) == [
        ["transplant_result_file", "reports of an earlier migration; not copied (new reports are written)"]
    ]
    assert sorted(tree_files(proj)) == [
        "train.py",
        "transplant_result_file/change_list.csv",
        "transplant_result_file/old_notes.txt",
    ]
