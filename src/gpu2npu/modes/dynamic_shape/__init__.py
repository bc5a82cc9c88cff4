"""``analyse -m dynamic_shape``: an instrumented copy of a project that records, while it
trains, the tensor shapes every torch call site sees, and reports the ones that change from
batch to batch (dynamic shapes make the NPU compile new kernels again and again).

``instrument`` rewrites one file (calls to ``DETECTOR.hook_func(...)``, the training loop
to ``DETECTOR.start(...)``); ``loops`` finds that loop; ``runtime/msft_dynamic_analysis`` is the
package copied beside the project, which records the shapes and writes the report at exit;
``analysis`` makes the copy.
"""

from __future__ import annotations

from gpu2npu.modes import Mode

MODE = Mode(
    name="dynamic_shape",
    help="an instrumented copy that records tensor shapes while training runs",
    order=4,
    module=f"{__name__}.analysis",
)
