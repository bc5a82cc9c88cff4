"""The bundled example migrates to exactly the reviewed tree in examples/expected/."""

import pytest
from helpers import REPO, run_cli, tree_files

EXAMPLE = REPO / "examples" / "cifar_resnet"
EXPECTED = REPO / "examples" / "expected" / "cifar_resnet_msft"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_example_migrates_to_the_expected_tree(tmp_path, jobs):
    before = tree_files(EXAMPLE)
    result = run_cli("migrate", "-i", EXAMPLE, "-o", tmp_path, "-v", "2.8.0", "-j", jobs)
    assert result.returncode == 0, result.stderr
    produced = tree_files(tmp_path / "cifar_resnet_msft")
    expected = tree_files(EXPECTED)
    assert sorted(produced) == sorted(expected)
    for rel in expected:
        assert produced[rel] == expected[rel], rel
    assert tree_files(EXAMPLE) == before  # the input is never modified


def test_example_output_migrates_to_itself(tmp_path):
    result = run_cli("migrate", "-i", EXPECTED, "-o", tmp_path, "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    again = tree_files(tmp_path / "cifar_resnet_msft_msft")
    original = tree_files(EXPECTED)
    assert {k: v for k, v in again.items() if not k.startswith("transplant_result_file/")} == {
        k: v for k, v in original.items() if not k.startswith("transplant_result_file/")
    }
    change_list = (
        tmp_path / "cifar_resnet_msft_msft" / "transplant_result_file" / "change_list.csv"
    ).read_text()
    assert change_list == "File,Start Line,End Line,Operation Type,Message,Rule,File Kind,Cell\n"
