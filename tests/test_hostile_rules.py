"""Hostile rule files stay data: whatever a rule file holds, it can neither hang the tool (not a
regular file, too large, nested too deep, YAML aliases, a white_list regex that backtracks without
end) nor be pasted into the migrated code (a ReplaceStringRule string that would end a literal)."""

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import libcst as cst
import pytest
from helpers import NEWEST, gpu2npu_command, tree_files, write

from gpu2npu.rewrite.engine import migrate_source
from gpu2npu.rewrite.strings import rewrite_formatted_string, rewrite_simple_string
from gpu2npu.rules.index import StringTable, StringTarget, compile_index
from gpu2npu.rules.kind import kinds
from gpu2npu.rules.kinds.args import WHITE_LIST_TIMEOUT_S, kept_by_white_list
from gpu2npu.rules.loader import MAX_NESTING, MAX_RULE_FILE_BYTES, load_builtin_rules

# Each command may take this long: a hang fails the test instead of stalling the suite.
COMMAND_LIMIT_S = 25
FIX = "fix the rule file (see 'Rule files' in README.md)"
NOT_REGULAR = "pass a JSON or YAML rule file"
PLAIN_TEXT = "but rule strings are plain text (no quotes, backslashes, braces or control characters)"
# A rule string that, pasted between the quotes of 'cuda', would make the literal run code.
INJECTION = "x' + str(__import__('os').getpid()) + '"
BUILTIN_KINDS = "gpu2npu.rules.kinds."
PROGRAM = "import mylib\nvalue = 'cuda'\nmylib.launch('gpu')\nprint(f'cuda:{value}')\n"


def gpu2npu(*args) -> subprocess.CompletedProcess:
    """The installed CLI, stopped (and the test failed) after COMMAND_LIMIT_S."""
    return subprocess.run(
        gpu2npu_command() + [str(a) for a in args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_LIMIT_S,
    )


def tree_hash(root: Path) -> str:
    return hashlib.sha256(repr(sorted(tree_files(root).items())).encode()).hexdigest()


def nested(levels: int):
    """A list ``levels`` deep."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def entry_with_example_nested(levels: int) -> dict:
    """A valid rule file whose nesting reaches ``levels`` (file > rules > kind > entry > examples
    > example make six, the example's 'before' the rest)."""
    example = {"before": nested(levels - 6), "after": "x"}
    entry = {"old_name": "mylib.gpu_op", "new_name": "mylib.npu_op", "examples": [example]}
    return {"rules": {"FuncNameModifyRule": [entry]}}


# -- rule files the tool refuses: each case writes one and says the problem it reports ------------


def dev_zero(tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    return Path("/dev/zero"), "not a regular file but a character device", NOT_REGULAR


def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / "rules" / "fifo.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)  # nobody writes it: opening it for reading would wait forever
    return path, "not a regular file but a FIFO", NOT_REGULAR


def directory(tmp_path):
    path = tmp_path / "rules" / "dir.yaml"
    path.mkdir(parents=True)
    return path, "not a regular file but a directory", NOT_REGULAR


def too_large(tmp_path):
    path = write(tmp_path / "rules" / "big.json", '{"rules": {}}' + " " * MAX_RULE_FILE_BYTES)
    return path, "larger than 8 MiB, the most a rule file may hold", "split it into smaller rule files"


def deep_json(tmp_path):  # past the json parser's recursion limit
    path = write(tmp_path / "rules" / "deep.json", "[" * 100_000 + "]" * 100_000)
    return path, f"nested deeper than {MAX_NESTING} levels, the most a rule file may nest", FIX


def deeper_json(tmp_path):  # within the json parser's limit, past the rule-file one
    path = write(tmp_path / "rules" / "deeper.json", json.dumps(entry_with_example_nested(MAX_NESTING + 1)))
    return path, f"nested deeper than {MAX_NESTING} levels, the most a rule file may nest", FIX


def deep_yaml(tmp_path):  # libyaml's composer would crash the interpreter on it
    path = write(tmp_path / "rules" / "deep.yaml", "rules:\n  X: " + "[" * 100_000 + "]" * 100_000 + "\n")
    return path, f"line 2: nested deeper than {MAX_NESTING} levels, the most a rule file may nest", FIX


def deep_yaml_blocks(tmp_path):
    lines = "".join("  " * (level + 2) + "-\n" for level in range(MAX_NESTING))
    path = write(tmp_path / "rules" / "blocks.yaml", "rules:\n  X:\n" + lines)
    return (
        path,
        f"line {MAX_NESTING + 1}: nested deeper than {MAX_NESTING} levels, the most a rule file may nest",
        FIX,
    )


def yaml_alias(tmp_path):  # aliases of aliases expand exponentially
    text = "a: &a [x, x]\nb: &b [*a, *a]\nrules: {}\n"
    path = write(tmp_path / "rules" / "alias.yaml", text)
    return path, "line 2: YAML aliases (*name) are not allowed in rule files (write each value out)", FIX


def string_injection(tmp_path):
    text = f'rules:\n  ReplaceStringRule:\n    - str_old: cuda\n      str_new: "{INJECTION}"\n'
    path = write(tmp_path / "rules" / "inject.yaml", text)
    return path, f"rules.ReplaceStringRule[0]: 'str_new' holds \"'\", {PLAIN_TEXT}", FIX


def string_placeholder(tmp_path):
    entry = {"str_old": "cuda", "str_new": "{__import__('os').getpid()}", "match": "device"}
    path = write(tmp_path / "rules" / "brace.json", json.dumps({"rules": {"ReplaceStringRule": [entry]}}))
    return path, f"rules.ReplaceStringRule[0]: 'str_new' holds '{{', {PLAIN_TEXT}", FIX


def string_line_break(tmp_path):
    entry = {"str_old": "cu\nda", "str_new": "npu"}
    path = write(tmp_path / "rules" / "newline.json", json.dumps({"rules": {"ReplaceStringRule": [entry]}}))
    return path, f"rules.ReplaceStringRule[0]: 'str_old' holds '\\n', {PLAIN_TEXT}", FIX


def device_type_injection(tmp_path):
    entry = {"func_name": "mylib.put", "arg_idx": 0, "device_type": INJECTION}
    path = write(tmp_path / "rules" / "device.json", json.dumps({"rules": {"DeviceArgRule": [entry]}}))
    problem = (
        f"rules.DeviceArgRule[0]: 'device_type' must be a device type name such as npu, not {INJECTION!r}"
    )
    return path, problem, FIX


def bad_white_list(tmp_path):
    entry = {"func_name": "mylib.launch", "arg_idx": 0, "arg_new": "'npu'", "white_list": ["(a+"]}
    path = write(tmp_path / "rules" / "regex.json", json.dumps({"rules": {"ArgsModifyRule": [entry]}}))
    problem = (
        "rules.ArgsModifyRule[0]: white_list pattern '(a+' is not a valid regex (missing ) at position 3)"
    )
    return path, problem, FIX


def deep_arg_new(tmp_path):  # libcst's parser would crash the interpreter on it
    arg_new = "(" * 5000 + "1" + ")" * 5000
    entry = {"func_name": "mylib.launch", "arg_idx": 0, "arg_new": arg_new}
    path = write(tmp_path / "rules" / "parens.json", json.dumps({"rules": {"ArgsModifyRule": [entry]}}))
    shown = f"{arg_new!r}"[:60] + f"... ({len(arg_new) + 2} characters)"
    return path, f"rules.ArgsModifyRule[0]: 'arg_new' is not a Python expression: {shown}", FIX


def deep_keyword_value(tmp_path):  # parsed at validation, never in the middle of a run
    value = "(" * 5000 + "1" + ")" * 5000
    entry = {"func_name": "mylib.launch", "old_keyword": "a", "new_keyword": "b", "default_value": value}
    path = write(tmp_path / "rules" / "keyword.json", json.dumps({"rules": {"KeywordRenameRule": [entry]}}))
    shown = f"{value!r}"[:60] + f"... ({len(value) + 2} characters)"
    return (
        path,
        f"rules.KeywordRenameRule[0]: 'default_value' holds {shown}, which is not a Python expression",
        FIX,
    )


def builtin_kinds() -> list:
    """The kinds the CLI knows (other tests may register more in this process)."""
    return sorted(name for name, kind in kinds().items() if type(kind).__module__.startswith(BUILTIN_KINDS))


def line_break_in_kind(tmp_path):  # shown escaped: the error stays one line
    path = write(tmp_path / "rules" / "kind.json", json.dumps({"rules": {"A\nB": []}}))
    return path, "rules.'A\\nB': unknown rule kind; allowed: " + ", ".join(builtin_kinds()), FIX


def line_break_in_id(tmp_path):  # ids go into one-line messages and the CSV reports
    entry = {"old_name": "mylib.gpu_op", "new_name": "mylib.npu_op", "id": "X\nY"}
    path = write(tmp_path / "rules" / "id.json", json.dumps({"rules": {"FuncNameModifyRule": [entry]}}))
    return path, "rules.FuncNameModifyRule[0].id: must be printable text on one line, not 'X\\nY'", FIX


HOSTILE = [
    dev_zero,
    fifo,
    directory,
    too_large,
    deep_json,
    deeper_json,
    deep_yaml,
    deep_yaml_blocks,
    yaml_alias,
    string_injection,
    string_placeholder,
    string_line_break,
    device_type_injection,
    bad_white_list,
    deep_arg_new,
    deep_keyword_value,
    line_break_in_kind,
    line_break_in_id,
]


def command_line(command: str, rules: Path, project: Path, out: Path) -> list:
    """The arguments that make ``command`` read ``rules``."""
    return {
        "validate": ["rules", "validate", rules],
        "migrate": ["migrate", "-i", project, "-o", out, "-v", NEWEST, "-r", rules],
        "check": ["check", project, "-v", NEWEST, "-r", rules],
        "analyse": ["analyse", "-i", project, "-o", out, "-v", NEWEST, "-r", rules],
    }[command]


@pytest.mark.parametrize("command", ["validate", "migrate", "check", "analyse"])
@pytest.mark.parametrize("case", HOSTILE, ids=lambda case: case.__name__)
def test_a_hostile_rule_file_stops_the_run_with_one_line_and_writes_nothing(tmp_path, case, command):
    rules, problem, todo = case(tmp_path)
    project = write(tmp_path / "proj" / "train.py", PROGRAM).parent
    before = tree_hash(project)
    result = gpu2npu(*command_line(command, rules, project, tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"gpu2npu: error: {rules}: {problem}; {todo}"]
    assert tree_hash(project) == before
    assert not (tmp_path / "out").exists()  # not even an empty folder


def test_a_rule_file_at_the_limits_is_valid(tmp_path):
    padded = json.dumps(entry_with_example_nested(MAX_NESTING))
    at_limits = write(tmp_path / "limits.json", padded + " " * (MAX_RULE_FILE_BYTES - len(padded)))
    as_yaml = write(tmp_path / "limits.yaml", padded)
    result = gpu2npu("rules", "validate", at_limits, as_yaml)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"{at_limits}: 1 rule(s), valid\n{as_yaml}: 1 rule(s), valid\n"


# -- white_list regexes that backtrack without end --------------------------------------------------


def test_a_white_list_search_that_times_out_keeps_the_argument():
    text = "'" + "a" * 40 + "!'"  # (a|aa)+$ tries every split of the a's before failing at the '!'
    started = time.monotonic()
    assert kept_by_white_list(["(a|aa)+$"], text)
    assert WHITE_LIST_TIMEOUT_S * 0.9 <= time.monotonic() - started < 5


def test_a_catastrophic_white_list_neither_hangs_nor_stops_the_migration(tmp_path):
    entry = {
        "func_name": "mylib.launch",
        "arg_idx": 0,
        "arg_new": "'npu'",
        "white_list": ["(a+)+$", "(a|aa)+$"],
    }
    rules = write(tmp_path / "wl.json", json.dumps({"rules": {"ArgsModifyRule": [entry]}}))
    hostile_argument = "'" + "a" * 40 + "!'"
    source = f"import mylib\nmylib.launch({hostile_argument})\nmylib.launch('gpu')\n"
    project = write(tmp_path / "proj" / "train.py", source).parent
    before = tree_hash(project)
    result = gpu2npu("migrate", "-i", project, "-o", tmp_path / "out", "-v", NEWEST, "-r", rules)
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "proj_msft" / "train.py").read_text()
    assert migrated == f"import mylib\nmylib.launch({hostile_argument})\nmylib.launch('npu')\n"
    assert tree_hash(project) == before


# -- the rewrite keeps a literal one literal, whatever its string table holds ---------------------


def table(old: str, new: str, match: str = "exact") -> StringTable:
    """A string table with one target, as no validated rule file could make it."""
    strings = StringTable()
    strings.add(StringTarget(old, new, "HOSTILE", match, f"replace {old}"))
    return strings


def rewritten(code: str, strings: StringTable):
    """The literal's new source, or None when the rewrite leaves it alone."""
    node = cst.parse_expression(code)
    rewrite = rewrite_formatted_string if isinstance(node, cst.FormattedString) else rewrite_simple_string
    result = rewrite(node, strings)
    return None if result is None else cst.Module([]).code_for_node(result[0])


@pytest.mark.parametrize(
    "code,old,new,match",
    [
        ("'cuda'", "cuda", INJECTION, "exact"),  # would end the literal and call getpid
        ('"cuda"', "cuda", 'x" + str(__import__("os").getpid()) + "', "exact"),
        ("'''cuda'''", "cuda", "x''' + str(1) + '''", "exact"),
        ("f'cuda:{rank}'", "cuda", "npu{__import__('os')}", "device"),  # a new placeholder
        ("f'{{cuda}}'", "{cuda}", "npu", "substring"),  # would unescape a brace
        ("'cuda'", "cuda", "npu\\", "exact"),  # would escape the closing quote
        ("'cuda'", "cuda", "a\nb", "exact"),  # a line break inside a one-line literal
        ("'C:\\cuda'", "cuda", "npu", "substring"),  # \c would become the line break \n
        ("'\\x41cuda'", "41", "zz", "substring"),  # would break the escape \x41
    ],
)
def test_the_rewrite_leaves_a_literal_it_would_turn_into_another_token(code, old, new, match):
    assert rewritten(code, table(old, new, match)) is None


@pytest.mark.parametrize(
    "code,old,new,match,expected",
    [
        ("'it\\'s cuda'", "cuda", "npu", "substring", "'it\\'s npu'"),
        ("'''one\ncuda'''", "cuda", "npu", "substring", "'''one\nnpu'''"),
        ("f'cuda:{rank}'", "cuda", "npu", "device", "f'npu:{rank}'"),
        ("'cuda:{}'", "cuda", "npu", "device", "'npu:{}'"),
        ('"cuda"', "cuda", "it's", "exact", '"it\'s"'),  # the other quote is plain text here
    ],
)
def test_the_rewrite_still_changes_plain_text_around_escapes(code, old, new, match, expected):
    assert rewritten(code, table(old, new, match)) == expected


def test_an_injected_string_target_does_not_change_what_the_program_does():
    index = compile_index(load_builtin_rules(), NEWEST)  # its own: the shared one stays clean
    index.strings.add(StringTarget("cuda", INJECTION, "HOSTILE", "exact", "replace cuda"))
    source = "value = 'cuda'\n"
    result = migrate_source(source.encode(), index)
    migrated = source if result.new_bytes is None else result.new_bytes.decode()
    assert migrated == source
    namespace: dict = {}
    exec(compile(migrated, "<migrated>", "exec"), namespace)
    assert namespace["value"] == "cuda"


# -- -api files: the same reader, the same caps ---------------------------------------------------

PASS_A_CSV = "pass the full_unsupported_results.csv of a third_party analysis"


def api_fifo(folder: Path) -> tuple:
    os.mkfifo(folder / "api.csv")
    return folder / "api.csv", "is not a regular file but a FIFO"


def api_dev_zero(folder: Path) -> tuple:
    return Path("/dev/zero"), "is not a regular file but a character device"


def api_too_large(folder: Path) -> tuple:
    with open(folder / "api.csv", "wb") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)  # sparse: no disk used
    return folder / "api.csv", "is larger than 64 MiB"


def api_huge_cell(folder: Path) -> tuple:
    write(folder / "api.csv", "3rd-party API\n" + "x" * 200_000 + "\n")
    return folder / "api.csv", "is not a valid CSV file (field larger than field limit (131072))"


def api_missing(folder: Path) -> tuple:
    return folder / "none.csv", "does not exist"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX files")
@pytest.mark.parametrize(
    "case",
    [api_fifo, api_dev_zero, api_too_large, api_huge_cell, api_missing],
    ids=lambda c: c.__name__,
)
def test_a_hostile_api_file_stops_the_analysis_with_one_line_and_writes_nothing(tmp_path, case):
    api_file, problem = case(tmp_path)
    project = write(tmp_path / "proj" / "train.py", PROGRAM).parent
    before = tree_hash(project)
    result = gpu2npu("analyse", "-i", project, "-o", tmp_path / "out", "-v", NEWEST, "-api", api_file)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"gpu2npu: error: -api file '{api_file}' {problem}; {PASS_A_CSV}"]
    assert tree_hash(project) == before
    assert not (tmp_path / "out").exists()


def test_an_api_file_with_a_byte_order_mark_is_read(tmp_path):
    """Spreadsheet programs save CSV files with one."""
    api_file = tmp_path / "api.csv"
    api_file.write_bytes("\ufeff3rd-party API\nmylib.launch\n".encode("utf-8"))
    project = write(tmp_path / "proj" / "train.py", PROGRAM).parent
    result = gpu2npu("analyse", "-i", project, "-o", tmp_path / "out", "-v", NEWEST, "-api", api_file)
    assert result.returncode == 0, result.stderr
    rows = (
        (tmp_path / "out" / "proj_analysis" / "unsupported_api.csv").read_text(encoding="utf-8").splitlines()
    )
    assert [row.split(",")[:4] for row in rows[1:]] == [["train.py", "3", "3", "mylib.launch"]]
