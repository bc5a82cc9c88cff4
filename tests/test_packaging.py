"""The wheel carries the built-in rules and the data beside the code (the API status table,
versions, advice, affinity replacements): installed into a fresh virtual environment outside
the checkout, the command still finds and applies them."""

import os
import subprocess
import sys
import sysconfig
import venv

from helpers import REPO


def test_wheel_in_a_fresh_venv_finds_the_builtin_rules(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels, REPO],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("gpu2npu-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Dependencies come from the test environment (appended after the venv's own packages, so
    # the wheel's gpu2npu is the one imported); the wheel itself is unpacked into the venv.
    with open(os.path.join(site, "deps.pth"), "w") as pth:
        pth.write(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", site, wheel],
        check=True,
        capture_output=True,
    )
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    code = (
        "import gpu2npu, sys; from gpu2npu.rules.location import builtin_rules_dir; "
        "print(gpu2npu.__file__); print(builtin_rules_dir()); "
        "from gpu2npu.cli import main; "
        "sys.argv = ['gpu2npu', 'migrate', '-i', 'proj', '-o', 'out', '-v', '2.8']; main()"
    )
    result = subprocess.run([python, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    module_file, rules_dir = result.stdout.splitlines()[:2]
    assert module_file.startswith(site) and rules_dir == os.path.join(site, "gpu2npu", "_rules")
    assert (
        tmp_path / "out" / "proj_msft" / "train.py"
    ).read_text() == "import torch\nimport torch_npu\ntorch.npu.synchronize()\n"
    page = tmp_path / "out" / "proj_msft" / "transplant_result_file" / "report.html"
    assert "<h1>gpu2npu migration report</h1>" in page.read_text()  # the template ships in the wheel
    analyse = code.replace(
        "'migrate', '-i', 'proj', '-o', 'out'", "'analyse', '-i', 'proj', '-o', 'out', '-m', 'affinity_apis'"
    )
    result = subprocess.run([python, "-c", analyse], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (
        (tmp_path / "out" / "proj_analysis" / "affinity_api_call.csv")
        .read_text()
        .startswith("File,Start Line,")
    )
