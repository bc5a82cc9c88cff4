"""The fuzzing properties, shared by the short run in the test suite (tests/test_fuzz.py) and
the long one (tools/fuzz.py): for any Python program the grammar allows, with CUDA code mixed
in, and for any bytes, the migration ends normally (no exception, no internal error), its output
compiles where the input did, and a second migration changes nothing."""

from __future__ import annotations

import hypothesmith
from hypothesis import strategies as st

from gpu2npu.rewrite.engine import migrate_source

# CUDA code of the kinds the rules rewrite, mixed into the generated programs so that the
# rewrite pass, not only the fast no-change path, meets them.
CUDA_SNIPPETS = [
    "x = torch.zeros(2).cuda()\n",
    "torch.cuda.synchronize()\n",
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
    "y = t.to(0, non_blocking=True)\n",
    "dist.init_process_group(backend='nccl')\n",
    "if x.is_cuda:\n    x = x.cuda()\n",
    "with torch.cuda.amp.autocast():\n    pass\n",
    "os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
    "ok = ckpt['device'] == 'cuda'\n",
    "p = torch.cuda.get_device_properties(0).major\n",
    "from torch._six import inf\n",
]
HEADER = "import os\nimport torch\nimport torch.distributed as dist\n"


@st.composite
def programs(draw) -> bytes:
    """A program built from libcst's node types (hypothesmith.from_node: all of Python's syntax,
    and about ten times faster to draw than from_grammar) with CUDA snippets around it."""
    body = draw(hypothesmith.from_node())
    before = draw(st.lists(st.sampled_from(CUDA_SNIPPETS), max_size=3))
    after = draw(st.lists(st.sampled_from(CUDA_SNIPPETS), max_size=3))
    return (HEADER + "".join(before) + body + "\n" + "".join(after)).encode("utf-8", "surrogatepass")


def compiles(data: bytes) -> bool:
    try:
        compile(data, "<fuzz>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def check_migration(data: bytes, index) -> None:
    """The property: raises AssertionError with what went wrong."""
    result = migrate_source(data, index)
    assert "internal error" not in result.skipped, result.skipped
    if result.new_bytes is None:
        return
    assert not result.skipped
    if compiles(data):
        assert compiles(result.new_bytes), "the migrated program does not compile"
    again = migrate_source(result.new_bytes, index)
    assert again.new_bytes is None, f"a second migration changed it: {again.changes}"
