"""Put on PYTHONPATH by the tests: in a gpu2npu run, a worker process dies by SIGKILL on the file
named in GPU2NPU_TEST_KILL, as it would by a crash in native code or the memory killer. Only
worker processes die: a file the main process handles itself is not affected."""

import importlib
import multiprocessing
import os
import signal

VICTIM = os.environ.get("GPU2NPU_TEST_KILL")
# (module, function run on each file in a worker, the file's relative path in its job)
PER_FILE = [
    ("gpu2npu.project.worker", "process", lambda job: job.rel),
    ("gpu2npu.modes.affinity_apis.analysis", "scan_file", lambda job: job[0]),
    ("gpu2npu.modes.dynamic_shape.analysis", "instrument_file", lambda job: job[0]),
]


def _dying_on_the_victim(function, rel_of):
    def wrapper(job):
        if rel_of(job) == VICTIM and multiprocessing.parent_process() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return function(job)

    # pickled by name into the workers: the name must lead back to this wrapper
    wrapper.__module__, wrapper.__qualname__ = function.__module__, function.__qualname__
    return wrapper


if VICTIM:
    for module_name, name, rel_of in PER_FILE:
        module = importlib.import_module(module_name)
        setattr(module, name, _dying_on_the_victim(getattr(module, name), rel_of))
