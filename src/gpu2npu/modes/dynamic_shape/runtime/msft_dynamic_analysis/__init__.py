"""Runtime of gpu2npu's dynamic-shape analysis (``gpu2npu analyse -m dynamic_shape``).

Instrumented files import ``from msft_dynamic_analysis.hook import DETECTOR``; wrap the
training loop as ``for batch in DETECTOR.start(loader):`` if the analysis could not.
"""

from .hook import DETECTOR

__all__ = ["DETECTOR"]
