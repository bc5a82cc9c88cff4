import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _own_result_cache(tmp_path_factory, monkeypatch):
    """Each test gets an empty result cache of its own (every run in it starts cold unless the
    test runs twice), never the user's ~/.cache/gpu2npu."""
    monkeypatch.setenv("GPU2NPU_CACHE_DIR", str(tmp_path_factory.mktemp("gpu2npu-cache")))
