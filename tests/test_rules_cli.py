"""`gpu2npu rules list` and `gpu2npu rules validate`, and rule-file errors."""

import json

import pytest
from helpers import run_cli


def test_rules_list_shows_ids_kinds_and_versions():
    result = run_cli("rules", "list", "-v", "1.11.0")
    assert result.returncode == 0, result.stderr
    rows = {
        line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| G2N")
    }
    cells = [cell.strip() for cell in rows["G2N003"].split("|")[1:-1]]
    assert cells == ["G2N003", "MethodRenameRule", "all", ".cuda(...) -> .npu(...) on any receiver"]
    assert "G2N400" not in rows  # torch._six exists in 1.11.0: no rule about its removal
    assert "G2N013" not in rows  # Backend.NCCL -> Backend.HCCL is a 2.1.0+ rule
    assert "torch_npu.distributed.Backend.HCCL" in rows["G2N014"]


def test_rules_list_includes_user_rules(tmp_path):
    rules = tmp_path / "mine.yaml"
    rules.write_text(
        "rules:\n  FuncNameModifyRule:\n    - {old_name: mylib.gpu_op, new_name: mylib.npu_op}\n"
    )
    result = run_cli("rules", "list", "-r", rules)
    assert "mine.yaml:FuncNameModifyRule[0]" in result.stdout
    assert "mylib.gpu_op -> mylib.npu_op" in result.stdout


def test_validate_accepts_the_reference_json_shape(tmp_path):
    rules = tmp_path / "custom.json"
    rules.write_text(
        json.dumps(
            {
                "rules": {
                    "ArgsModifyRule": [{"func_name": "name1", "arg_idx": 0, "arg_new": "agrs0"}],
                    "FuncNameModifyRule": [{"old_name": "func", "new_name": "new_func"}],
                    "ModuleNameModifyRule": [
                        {"old_name": "module", "new_name": "new_module", "parent_module": "parent_module"}
                    ],
                }
            }
        )
    )
    result = run_cli("rules", "validate", rules)
    assert (result.returncode, result.stdout) == (0, f"{rules}: 3 rule(s), valid\n")


@pytest.mark.parametrize(
    "content,problem",
    [
        ('{"rules": {"Nope": []}}', "rules.Nope: unknown rule kind; allowed: "),
        (
            '{"rules": {"ReplaceStringRule": [{"str_old": "a", "str_new": "b", "match": "fuzzy"}]}}',
            "rules.ReplaceStringRule[0]: 'match' must be one of "
            "exact, device, prefix, substring, not 'fuzzy'",
        ),
        (
            '{"rules": {"NameRenameRule": [{"old_name": "torch..cuda", "new_name": "x"}]}}',
            "rules.NameRenameRule[0].old_name: 'torch..cuda' is not a dotted Python name",
        ),
        (
            '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_new": "x"}]}}',
            "rules.ArgsModifyRule[0]: give 'arg_idx' (>= 0) or 'arg_keyword'",
        ),
        ('{"rules": {"NameRenameRule": [{"old_name": "a.b", "new_name": "c.d", "versions": ">=9.0"}]}}', ""),
        (
            '{"rules": {"NameRenameRule": [{"old_name": "a.b", "new_name": "c.d", "versions": ["3.3"]}]}}',
            "rules.NameRenameRule[0] versions: unknown torch version '3.3'",
        ),
        (
            '{"rules": {"NameRenameRule": [{"old_name": "a.b", "new_name": "c.d", "id": "X"}, '
            '{"old_name": "a.c", "new_name": "c.e", "id": "X"}]}}',
            "duplicate rule id 'X'",
        ),
        ('{"rules": [1, 2]}', "the top level must be a mapping with a 'rules' mapping of rule kinds"),
        (
            '{"rules": {"FuncNameModifyRule": '
            '[{"old_name": "a.b", "new_name": "c.d", "feature_switch": [[1]]}]}}',
            "rules.FuncNameModifyRule[0]: 'feature_switch' must be a list of mode names such as normal",
        ),
        (
            '{"rules": {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": "c.d", "note": [1]}]}}',
            "rules.FuncNameModifyRule[0].note: must be a string, not [1]",
        ),
        (
            '{"rules": {"KeepReadRule": [{"call": "torch.cuda.x", "reads": "major", "tip": "t"}]}}',
            "rules.KeepReadRule[0].reads: must be a list, not 'major'",
        ),
        (
            '{"rules": {"KeepComparedStringRule": '
            '[{"methods": ["startswith"], "sources": [1], "tip": "t"}]}}',
            "rules.KeepComparedStringRule[0]: 'sources[0]' must be a dotted Python name such as "
            "torch.cuda.synchronize, not '1'",
        ),
    ],
)
def test_validate_names_the_file_entry_and_problem(tmp_path, content, problem):
    rules = tmp_path / "r.json"
    rules.write_text(content)
    result = run_cli("rules", "validate", rules)
    if not problem:  # a range selecting no known version is valid (the rule is simply inactive)
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpu2npu: error: {rules}: ")
    assert problem in lines[0]
