"""``analyse -m third_party``: which functions of a library (INPUT is its source) reach,
directly or through other library functions, APIs that will not run on NPU. ``callgraph``
builds the library's call graph with the stdlib ast, ``jedi_calls`` places what only inference
can, ``analysis`` propagates the uses and writes msFmkTransplt's five reports."""

from gpu2npu.modes import API_FILES, ENV_PATHS, Mode

MODE = Mode(
    name="third_party",
    help="which functions of a library reach unsupported APIs (feeds -api)",
    order=2,
    module=f"{__name__}.analysis",
    takes=frozenset({API_FILES, ENV_PATHS}),
)
