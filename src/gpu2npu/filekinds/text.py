"""Every other text file: copied as it is, but where it names CUDA (``cuda``, ``nccl``,
``cudnn``, ``nvcc``, ``nvidia-smi``) one report row says it was not migrated, with the kind of
file and what to look at, so a migration never claims a launcher or a build file done that it
did not read. One row per file (its first and last mention), not one per line: documentation
names CUDA often, and the row is a pointer, not a finding per word.

Binary files (a NUL byte early on, or a suffix of a binary format) are copied unread.
"""

from __future__ import annotations

from typing import Dict, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds.base import (
    LIMITED,
    MENTION,
    MENTION_PATTERN,
    NOT_MIGRATED,
    KindOutcome,
    LineIndex,
    Reported,
)

CUDA_OP = "cuda-op"
BINARY_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .svgz .pdf .zip .gz .tgz .bz2 .xz .zst .7z .tar .whl "
    ".egg .so .dll .dylib .a .o .obj .lib .exe .bin .pt .pth .ckpt .safetensors .onnx .pb .h5 .hdf5 .npy "
    ".npz .pkl .pickle .parquet .arrow .mp3 .mp4 .wav .flac .avi .mov .ttf .otf .woff .woff2 .jar .class "
    ".pyc .pyo .db .sqlite .lmdb .mdb .tfrecord .idx .model".split()
)
SNIFF_BYTES = 8192
# suffix (or file name) -> (what the file is, report category, what to do)
DOCUMENTATION = (
    "documentation",
    MENTION,
    "update the steps that name CUDA (install, devices, launch) for Ascend NPU by hand",
)
WHAT_IT_IS: Dict[str, Tuple[str, str, str]] = {
    **{suffix: DOCUMENTATION for suffix in (".md", ".rst", ".txt", ".html", ".htm", ".tex", ".adoc")},
    **{
        suffix: (
            "C/C++/CUDA source",
            CUDA_OP,
            "custom CUDA code does not run on the NPU: use torch_npu operators or write an Ascend C "
            "kernel (see cuda_op_list.csv for the operators it registers)",
        )
        for suffix in (".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".hh")
    },
    **{
        name: (
            "build file",
            LIMITED,
            "CUDA build steps need the CANN toolkit on Ascend: remove or replace them (nvcc is not there)",
        )
        for name in ("makefile", "cmakelists.txt", ".cmake", ".mk", ".bzl", ".bazel", "build")
    },
    **{
        suffix: (
            "config file of a format gpu2npu does not edit",
            LIMITED,
            "check its device and backend settings by hand (cuda -> npu, nccl -> hccl)",
        )
        for suffix in (".cfg", ".ini", ".conf", ".env", ".properties", ".xml")
    },
}
OTHER = ("text file", LIMITED, "check by hand whether it needs a change for Ascend NPU")


class OtherText(FileKind):
    name = "text"
    order = 90  # last: every file no other kind claims
    edits = False
    max_bytes = 2 * 1024 * 1024  # larger files are data, copied unread

    def claims(self, rel, head):
        return _suffix(rel) not in BINARY_SUFFIXES

    def migrate(self, data, rel, context):
        if b"\x00" in data[:SNIFF_BYTES]:
            return KindOutcome(lines=0)
        mentions = list(MENTION_PATTERN.finditer(data))
        if not mentions:
            return KindOutcome()
        what, category, tip = describe(rel)
        lines = LineIndex(data)
        words = sorted({match.group(1).decode("ascii").lower() for match in mentions})
        subject = f"not migrated: file kind {what} ({_mentions(len(mentions))}: {', '.join(words)})"
        first, last = lines.line_of(mentions[0].start()), lines.line_of(mentions[-1].start())
        return KindOutcome(reported=[Reported(first, last, subject, tip, NOT_MIGRATED, category)])


def describe(rel: str) -> Tuple[str, str, str]:
    """What a file is by its name, the category of its row and what to do."""
    name = rel.rsplit("/", 1)[-1].lower()
    return WHAT_IT_IS.get(name) or WHAT_IT_IS.get(_suffix(rel)) or OTHER


def _suffix(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1].lower()
    return name[name.rfind(".") :] if "." in name.lstrip(".") else ""


def _mentions(count: int) -> str:
    return "1 CUDA mention" if count == 1 else f"{count} CUDA mentions"
