"""Running one function over many files: in worker processes for big trees, in this process
for small ones (a process pool costs more than it saves there), with the progress line."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Callable, List, Optional, Sequence, TypeVar

from gpu2npu.project.progress import Progress

IN_PROCESS_BELOW = 24  # fewer jobs than this: no pool

Job = TypeVar("Job")
Result = TypeVar("Result")


def run_jobs(
    function: Callable[[Job], Result],
    jobs: Sequence[Job],
    workers: int,
    show_progress: bool,
    initializer: Optional[Callable] = None,
    initargs: tuple = (),
    meanwhile: Callable[[], None] = lambda: None,
) -> List[Result]:
    """``function`` over ``jobs`` (results in job order); ``initializer(*initargs)`` sets up each
    process once; ``meanwhile`` runs in this process while the workers are busy."""
    progress = Progress(len(jobs), enabled=show_progress)
    results: List[Result] = []
    workers = min(workers, max(1, len(jobs)))
    if workers == 1 or len(jobs) < IN_PROCESS_BELOW:
        meanwhile()
        if initializer is not None:
            initializer(*initargs)
        for job in jobs:
            results.append(function(job))
            progress.advance()
    else:
        with ProcessPoolExecutor(workers, initializer=initializer, initargs=initargs) as pool:
            chunk = max(1, min(16, len(jobs) // (workers * 8)))
            pending = pool.map(function, jobs, chunksize=chunk)
            meanwhile()
            for result in pending:
                results.append(result)
                progress.advance()
    progress.finish()
    return results
