"""Snapshot pairs: every ``tests/fixtures/<area>/<case>.py`` is migrated and compared with
``<case>.expected.py`` beside it; a case without an expected file must stay byte-identical.

A first line ``# gpu2npu: -v VERSION`` selects the target version (default: the newest).
Every case is also migrated a second time: the second run must change nothing.
"""

import copy
import re

import pytest
from helpers import FIXTURES, NEWEST, builtin_index

from gpu2npu.rewrite.engine import migrate_source

CASES = sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".expected.py"))
VERSION_LINE = re.compile(rb"^# gpu2npu: -v (\S+)")


def case_id(path):
    return path.relative_to(FIXTURES).as_posix()


def version_of(data: bytes) -> str:
    match = VERSION_LINE.match(data)
    return match.group(1).decode() if match else NEWEST


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fixture(case):
    data = case.read_bytes()
    index = builtin_index(version_of(data))
    result = migrate_source(data, index)
    assert not result.skipped, result.skipped
    produced = result.new_bytes if result.new_bytes is not None else data
    expected_path = case.with_name(case.name[:-3] + ".expected.py")
    expected = expected_path.read_bytes() if expected_path.exists() else data
    assert produced.decode("utf-8", "replace") == expected.decode("utf-8", "replace")
    assert produced == expected
    again = migrate_source(produced, index)
    assert again.new_bytes is None, f"second migration changed {case_id(case)}: {again.changes}"
    compile(produced, str(case), "exec", dont_inherit=True)


def test_there_are_fixtures():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_text_path_agrees_with_the_syntax_tree_path(case):
    """Files whose only change is the import insertion are edited as text; the libcst pass
    must give the same bytes and change records."""
    data = case.read_bytes()
    index = builtin_index(version_of(data))
    fast = migrate_source(data, index)
    full = migrate_source(data, index, text_path=False)
    assert (fast.new_bytes, fast.changes, fast.skipped) == (full.new_bytes, full.changes, full.skipped)


EXAMPLE_FILES = sorted((FIXTURES.parent.parent / "examples" / "cifar_resnet").rglob("*.py"))


@pytest.mark.parametrize("case", CASES + EXAMPLE_FILES, ids=lambda p: p.name)
def test_byte_prefilter_never_hides_a_change(case):
    """The cheap byte scan may only skip files where the full pass changes nothing."""
    data = case.read_bytes()
    index = builtin_index(version_of(data))
    everything = copy.copy(index)
    everything.triggers = everything.tree_triggers = re.compile(b"")
    filtered = migrate_source(data, index)
    full = migrate_source(data, everything, text_path=False)
    assert (filtered.new_bytes, filtered.changes) == (full.new_bytes, full.changes)
