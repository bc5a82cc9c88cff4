"""A short, seeded fuzzing run (tools/fuzz.py runs the long one): generated programs and random
bytes through the migration, in this process, and a tree of generated programs through the
installed CLI's migrate and check."""

from fuzzing import check_migration, programs
from helpers import builtin_index, run_cli
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

INDEX = builtin_index()
QUICK = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@QUICK
@given(programs())
def test_any_program_migrates_to_code_that_compiles_and_stays(data):
    check_migration(data, INDEX)


@QUICK
@given(st.binary(max_size=2000))
def test_any_bytes_end_normally(data):
    check_migration(b"import torch\nx = y.cuda()\n" + data, INDEX)


def test_a_tree_of_generated_programs_through_the_cli(tmp_path):
    project = tmp_path / "fuzzed"
    project.mkdir()
    examples = []

    @seed(7)
    @settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(data):
        examples.append(data)

    collect()
    for number, data in enumerate(examples):
        (project / f"m{number}.py").write_bytes(data)
    migrated = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", "2.8.0", "-j", "2", timeout=60)
    assert migrated.returncode == 0, migrated.stderr
    skipped = (tmp_path / "out" / "fuzzed_msft" / "transplant_result_file" / "skipped_files.csv").read_text()
    assert "internal error" not in skipped
    checked = run_cli("check", project, "-v", "2.8.0", "--fail-on", "unsupported", timeout=60)
    assert checked.returncode in (0, 1), checked.stderr
    assert "internal error" not in checked.stderr
