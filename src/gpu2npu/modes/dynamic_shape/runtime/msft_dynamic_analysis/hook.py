"""Shape recorder of the dynamic-shape analysis, copied beside an instrumented project by
``gpu2npu analyse -m dynamic_shape``.

The instrumented code calls ``DETECTOR.hook_func(f, name, n, *args, **kwargs)`` instead of
``f(*args, **kwargs)``, and iterates ``for batch in DETECTOR.start(loader):``. Shapes are
recorded only while the body of such a loop runs (fetching the next batch is not traced):
per call site -- the stack of project frames, the callee's name, its number ``n`` on the
line -- and per occurrence of that site within a batch, the tensor shapes going in and out.
A site whose shapes differ from one batch to another is dynamic. When the program exits,
the dynamic sites go to ``msft_dynamic_shape_analysis_report.csv`` in the project's root
(the directory holding this package); a header-only report means no dynamic shapes.

Traced callees: tensor methods (but the conversions in CONVERSIONS), names containing
"torch", functions and classes of torch modules, and torch.nn.Module instances whose class is
not the project's own (torch layers, library models: their insides are not instrumented);
never ``torch.nn.init.*``. It never stops the program: past MAX_TRACES traces, or on an
error of its own, it stops recording and says so once.

Self-contained (the standard library; torch once the first batch starts), Python 3.7+.
"""

from __future__ import annotations

import atexit
import csv
import json
import os
import sys

REPORT_FILE = "msft_dynamic_shape_analysis_report.csv"
COLUMNS = (
    "Function Name",
    "File Path",
    "Line Number",
    "Call Stack",
    "Input Shape Range",
    "Output Shape Range",
)
MAX_TRACES = 100000  # (site, occurrence) shapes kept; memory stays bounded on endless loops
CONVERSIONS = frozenset(
    [
        "cpu",
        "cuda",
        "long",
        "float",
        "int",
        "detach",
        "to",
        "contiguous",
        "type",
        "requires_grad_",
        "clone",
        "numpy",
    ]
)
PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))
PROJECT_ROOT = os.path.dirname(PACKAGE_DIR)
ADDED_LINES_FILE = "added_lines.json"  # written by gpu2npu: files whose copy gained a line
_SCALARS = (int, float, bool, complex, str, bytes)  # a sequence starting with one holds no tensors
_UNSEEN = object()


def _warn(message):
    sys.stderr.write(f"msft_dynamic_analysis: {message}\n")
    sys.stderr.flush()


def _read_added_lines():
    try:
        with open(os.path.join(PACKAGE_DIR, ADDED_LINES_FILE), encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return {}


def _process_rank(torch):
    distributed = getattr(torch, "distributed", None)
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        return distributed.get_rank()
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


class _Site:
    """One call site: the shapes of its first batch per occurrence, and the ranges seen."""

    __slots__ = ("dynamic", "first", "inputs", "outputs")

    def __init__(self):
        self.first = {}  # occurrence within a batch -> (input shapes, output shapes)
        self.inputs = []  # per tensor position: {rank: (smallest dims, largest dims)}
        self.outputs = []
        self.dynamic = False


def _widen(ranges, shapes):
    for position, shape in enumerate(shapes):
        if position == len(ranges):
            ranges.append({})
        bounds = ranges[position].get(len(shape))
        if bounds is None:
            ranges[position][len(shape)] = (list(shape), list(shape))
            continue
        smallest, largest = bounds
        for axis, size in enumerate(shape):
            if size < smallest[axis]:
                smallest[axis] = size
            elif size > largest[axis]:
                largest[axis] = size


def _ranges_text(ranges):
    """``[(2, 3)-(4, 3), (3, 4)-(3, 4)]``: per tensor position, smallest-largest, one per rank."""
    positions = [
        " | ".join(
            f"{tuple(smallest)}-{tuple(largest)}" for _, (smallest, largest) in sorted(by_rank.items())
        )
        for by_rank in ranges
    ]
    return "[" + ", ".join(positions) + "]"


def _stack_text(stack):
    return str([f"<file {path}, line {line} in {function}>" for path, line, function in stack])


class _Batches:
    """What ``DETECTOR.start(iterable)`` returns: it iterates like the iterable (and has its len)."""

    def __init__(self, detector, iterable):
        self.detector = detector
        self.iterable = iterable

    def __len__(self):
        return len(self.iterable)

    def __iter__(self):
        self.detector._prepare()
        return self.detector._batches_of(self.iterable)


class DynamicShapeDetector:
    def __init__(self, root=PROJECT_ROOT):
        self.root = root
        self._recording = False  # inside a batch, and not stopped: the one test of the fast path
        self._running = 0  # batches being processed (loops wrapped in start() may nest)
        self._stopped = False
        self._torch = None  # imported when the first loop starts
        self._tensor = None  # torch.Tensor
        self._module = None  # torch.nn.Module
        self._batches = 0
        self._rank = 0
        self._pid = None
        self._sites = {}  # (stack, name, number) -> _Site
        self._occurrences = {}  # (stack, name, number) -> calls in the current batch
        self._traces = 0
        self._paths = {}  # code file name -> path relative to the root, or None
        self._project_classes = {}
        self._added_lines = {}

    # -- the two entry points of instrumented code ---------------------------------------------

    def start(self, iterable):
        """Wrap the training loop's iterable: ``for batch in DETECTOR.start(loader):``."""
        return iterable if isinstance(iterable, _Batches) else _Batches(self, iterable)

    def hook_func(*args, **kwargs):
        """``(self, func, name, number, *call_args, **kwargs)``, all positional: any keyword
        (``name=``, ``self=``) belongs to the call."""
        self = args[0]
        if not self._recording:
            return args[1](*args[4:], **kwargs)
        return self._traced_call(sys._getframe(1), args[1], args[2], args[3], args[4:], kwargs)

    # -- batches -------------------------------------------------------------------------------

    def _prepare(self):
        if self._tensor is not None:
            return
        try:
            import torch
        except ImportError as exc:
            raise ImportError(
                "msft_dynamic_analysis records tensor shapes and needs PyTorch, "
                f"but 'import torch' failed ({exc}); "
                "run the instrumented copy with the Python environment of your training"
            ) from exc
        self._tensor, self._module = torch.Tensor, torch.nn.Module
        self._torch = torch
        self._added_lines = _read_added_lines()
        self._pid = os.getpid()
        atexit.register(self._at_exit)

    def _batches_of(self, iterable):
        for item in iterable:
            self._enter_batch()
            try:
                yield item
            finally:
                self._leave_batch()

    def _enter_batch(self):
        self._running += 1
        self._batches += 1
        self._occurrences = {}
        if self._batches == 1:
            self._rank = _process_rank(self._torch)
        self._recording = not self._stopped

    def _leave_batch(self):
        self._running -= 1
        self._recording = self._running > 0 and not self._stopped

    def _stop_after(self, exc):
        self._stop(
            f"recording stopped after an error of its own ({exc!r}); the report covers what came before"
        )

    def _stop(self, message):
        if not self._stopped:
            self._stopped, self._recording = True, False
            _warn(message)

    # -- recording -----------------------------------------------------------------------------

    def _traced_call(self, frame, func, name, number, args, kwargs):
        try:
            inputs = self._input_shapes(func, args, kwargs) if self._traced(func, name) else None
        except Exception as exc:  # ours, never the program's: stop recording, train on
            self._stop_after(exc)
            inputs = None
        output = func(*args, **kwargs)
        if inputs is not None:
            try:
                outputs = []
                self._collect((output,), outputs, 3)
                self._record(frame, name, number, inputs, tuple(outputs))
            except Exception as exc:
                self._stop_after(exc)
        return output

    def _traced(self, func, name):
        owner = getattr(func, "__self__", None)
        if isinstance(owner, self._tensor):
            return getattr(func, "__name__", "") not in CONVERSIONS
        if name.startswith("torch.nn.init."):
            return False
        if "torch" in name:
            return True
        module = getattr(func, "__module__", None)
        if isinstance(module, str) and (module == "torch" or module.startswith("torch.")):
            return not module.startswith("torch.nn.init")
        return isinstance(func, self._module) and not self._project_class(type(func))

    def _project_class(self, cls):
        known = self._project_classes.get(cls)
        if known is None:
            path = getattr(sys.modules.get(cls.__module__), "__file__", None)
            known = self._project_classes[cls] = bool(path) and self._relative(path) is not None
        return known

    def _input_shapes(self, func, args, kwargs):
        shapes = []
        owner = getattr(func, "__self__", None)
        if isinstance(owner, self._tensor):
            shapes.append(tuple(owner.shape))
        self._collect(args, shapes, 2)
        if kwargs:
            self._collect(kwargs.values(), shapes, 2)
        return tuple(shapes)

    def _collect(self, values, into, depth):
        """Shapes of the tensors among ``values``, looking ``depth`` levels into lists, tuples and
        dicts (never into other iterables: a generator argument must stay unconsumed)."""
        for value in values:
            if isinstance(value, self._tensor):
                into.append(tuple(value.shape))
            elif depth and isinstance(value, (list, tuple)):
                if value and not isinstance(value[0], _SCALARS):
                    self._collect(value, into, depth - 1)
            elif depth and isinstance(value, dict):
                self._collect(value.values(), into, depth - 1)

    def _record(self, frame, name, number, inputs, outputs):
        key = (self._stack(frame), name, number)
        occurrence = self._occurrences.get(key, 0)
        self._occurrences[key] = occurrence + 1
        shapes = (inputs, outputs)
        site = self._sites.get(key)
        first = site.first.get(occurrence) if site is not None else None
        if first == shapes:
            return
        if first is None:
            if self._traces >= MAX_TRACES:
                self._stop(
                    f"{MAX_TRACES} traces recorded, the limit: recording stopped, the program goes on; "
                    "the report covers the batches so far"
                )
                return
            if site is None:
                site = self._sites[key] = _Site()
            site.first[occurrence] = shapes
            self._traces += 1
        else:
            site.dynamic = True
        _widen(site.inputs, inputs)
        _widen(site.outputs, outputs)

    def _stack(self, frame):
        """(path, line, function) of the project's frames, outermost first; the innermost one
        (the call site) is kept even outside the project."""
        entries = []
        caller = True
        while frame is not None:
            code = frame.f_code
            path = self._paths.get(code.co_filename, _UNSEEN)
            if path is _UNSEEN:
                path = self._paths[code.co_filename] = self._relative(code.co_filename)
            if path is None and caller:
                path = code.co_filename
            if path is not None:
                entries.append((path, self._original_line(path, frame.f_lineno), code.co_name))
            caller = False
            frame = frame.f_back
        entries.reverse()
        return tuple(entries)

    def _relative(self, filename):
        """The POSIX path of a file of the project relative to its root; None for other files
        and for this package."""
        if filename.startswith("<"):
            return None
        try:
            relative = os.path.relpath(os.path.realpath(filename), os.path.realpath(self.root))
        except ValueError:  # another drive
            return None
        if relative.startswith(os.pardir) or relative.split(os.sep)[0] == os.path.basename(PACKAGE_DIR):
            return None
        return relative.replace(os.sep, "/")

    def _original_line(self, path, line):
        added = self._added_lines.get(path)
        return line - 1 if added is not None and line > added else line

    # -- the report ----------------------------------------------------------------------------

    def rows(self):
        """The report's rows: dynamic sites, sorted by file, line, name, stack."""
        found = []
        for (stack, name, number), site in self._sites.items():
            if site.dynamic:
                path, line, _ = stack[-1]
                found.append(((path, line, name, stack, number), site))
        found.sort(key=lambda item: item[0])
        return [
            [name, path, line, _stack_text(stack), _ranges_text(site.inputs), _ranges_text(site.outputs)]
            for (path, line, name, stack, _), site in found
        ]

    def report_path(self):
        name = REPORT_FILE if self._rank == 0 else REPORT_FILE.replace(".csv", f"_rank{self._rank}.csv")
        return os.path.join(self.root, name)

    def write_report(self, path=None):
        """Write the report (atomically: a temporary file renamed into place); return its path
        and number of rows."""
        path = path or self.report_path()
        rows = self.rows()
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerow(COLUMNS)
            writer.writerows(rows)
        os.replace(temporary, path)
        return path, len(rows)

    def _at_exit(self):
        if os.getpid() != self._pid:  # a forked child (a DataLoader worker) inherited the handler
            return
        try:
            path, count = self.write_report()
        except OSError as exc:
            _warn(f"cannot write the report ({exc})")
            return
        if self._batches < 2:
            _warn(
                f"{self._batches} batch(es) went through DETECTOR.start(...): "
                "shapes can only differ between batches"
            )
        _warn(
            f"{count} call site(s) with shapes that change between batches, "
            f"in {self._batches} batches; report: {path}"
        )


DETECTOR = DynamicShapeDetector()
