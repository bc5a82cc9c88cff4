"""No input makes a file kind fail: every kind's fixtures, damaged in many ways, give an outcome
(migrated, or skipped with a reason) and never an exception; a skipped file is left unchanged."""

import random
from pathlib import Path

import pytest
from helpers import migrate_file

from gpu2npu.filekinds import KindOutcome, file_kinds

ROOT = Path(__file__).resolve().parent / "fixtures_files"
KINDS = [kind.name for kind in file_kinds() if kind.name != "python"]


def damaged(data: bytes, seed: int):
    """``data`` cut, spliced, with bytes flipped, with NULs and lone surrogates' bytes, doubled."""
    chance = random.Random(seed)
    yield data[: len(data) // 2]
    yield data[len(data) // 3 :]
    yield data + data
    yield data.replace(b"\n", b"\r")
    yield b"\xff\xfe" + data
    yield data.replace(b":", b"", 1).replace(b'"', b"", 1)
    for _ in range(12):
        mutable = bytearray(data)
        for _ in range(chance.randint(1, 8)):
            if not mutable:
                break
            where = chance.randrange(len(mutable))
            mutable[where : where + chance.randint(0, 3)] = bytes(
                chance.choice(b"\x00\xff\xed\xa0\x80{}[]\"':\\\n\r\t $`#!%<>-")
                for _ in range(chance.randint(0, 4))
            )
        yield bytes(mutable)


def fixture_files(kind: str):
    return sorted(path for path in ROOT.glob(f"{kind}/*/before/*") if path.is_file())


@pytest.mark.parametrize("kind", KINDS)
def test_damaged_fixtures_never_raise(kind):
    files = fixture_files(kind)
    for number, path in enumerate(files):
        for data in damaged(path.read_bytes(), number):
            outcome = migrate_file(path.name, data)
            assert isinstance(outcome, KindOutcome)
            if outcome.skipped:
                assert outcome.new_bytes is None and "\n" not in outcome.skipped, (path, outcome.skipped)


@pytest.mark.parametrize("kind", KINDS)
def test_odd_whole_inputs_never_raise(kind):
    names = {path.name for path in fixture_files(kind)} or set()
    for name in sorted(names)[:3]:
        for data in (
            b"",
            b"\n",
            b"\x00" * 100,
            bytes(range(256)) * 8,
            b"cuda nccl " * 10000,
            b"[" * 5000 + b"]" * 5000,
        ):
            outcome = migrate_file(name, data)
            assert isinstance(outcome, KindOutcome)
