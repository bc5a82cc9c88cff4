"""``analyse -m torch_apis`` (the default mode): the API reports of a migration -- unsupported
and unknown APIs, custom CUDA operators, precision and performance advice -- without a
migrated tree; -api files make calls into analysed libraries unsupported."""

from gpu2npu.modes import API_FILES, Mode

MODE = Mode(
    name="torch_apis",
    help="unsupported/unknown APIs, CUDA operators, advice (as migrate reports them)",
    order=1,
    module=f"{__name__}.analysis",
    takes=frozenset({API_FILES}),
)
