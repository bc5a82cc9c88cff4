"""Running one function over many files: in worker processes for big trees, in this process
for small ones (a process pool costs more than it saves there), with the progress line."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, List, Optional, Sequence, TypeVar

from gpu2npu.project.progress import Progress

IN_PROCESS_BELOW = 24  # fewer jobs than this: no pool
PR_SET_PDEATHSIG = 1  # linux/prctl.h
WORKER_DIED = "the worker process died on it (killed by a signal, or out of memory)"  # for crashed()
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}

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
    crashed: Optional[Callable[[Job], Result]] = None,
) -> List[Result]:
    """``function`` over ``jobs`` (results in job order); ``initializer(*initargs)`` sets up each
    process once; ``meanwhile`` runs in this process while the workers are busy; ``crashed(job)``
    is the result of a job whose worker died (without it, the run fails)."""
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
        pools = _Pools(function, workers, initializer, initargs, crashed)
        results = pools.run(list(jobs), progress, meanwhile)
    progress.finish()
    return results


class _Pools:
    """Process pools over the jobs. A worker that dies (a signal, the memory killer) breaks its
    pool: the jobs without a result then run in a fresh pool, and the first of them alone in a
    pool of its own, so the job that kills its worker is found, costs ``crashed(job)`` and
    nothing else."""

    def __init__(self, function, workers: int, initializer, initargs: tuple, crashed):
        self.function = function
        self.workers = workers
        self.initializer = initializer
        self.initargs = initargs
        self.crashed = crashed

    def run(self, jobs: list, progress: Progress, meanwhile: Callable[[], None]) -> list:
        results: list = []
        alone = False  # after a break: run the next job by itself
        while len(results) < len(jobs):
            batch = jobs[len(results) : len(results) + 1] if alone else jobs[len(results) :]
            done = self._map(batch, results, progress, meanwhile, 1 if alone else self.workers)
            meanwhile = lambda: None  # noqa: E731 (it has run with the first pool)
            if done < len(batch) and alone:
                results.append(self.crashed(batch[0]))
                progress.advance()
            alone = done < len(batch) and not alone
        return results

    def _map(self, batch: list, results: list, progress: Progress, meanwhile, workers: int) -> int:
        """Results of ``batch`` appended to ``results`` until the pool breaks; how many came."""
        came = 0
        pool = ProcessPoolExecutor(
            workers, initializer=_start_worker, initargs=(os.getpid(), self.initializer, self.initargs)
        )
        try:
            chunk = max(1, min(16, len(batch) // (workers * 8)))
            with _stop_signals_held():  # the pool forks its workers here
                pending = pool.map(self.function, batch, chunksize=chunk)
            meanwhile()
            for result in pending:
                results.append(result)
                came += 1
                progress.advance()
        except BrokenProcessPool:
            if self.crashed is None:
                raise
        except BaseException:  # interrupted, terminated: stop the workers now, not after the queue
            pool.shutdown(wait=False, cancel_futures=True)
            _stop(pool)
            raise
        pool.shutdown()
        return came


def _start_worker(parent: int, initializer: Optional[Callable], initargs: tuple) -> None:
    """In each worker: die with the parent (on Linux), leave SIGINT and SIGTERM to the parent
    (it stops the workers; their inherited handlers would print a traceback each), then the
    caller's set-up."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # held by the parent while it forked
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def _stop_signals_held():
    """SIGINT and SIGTERM wait while the pool forks: their exception, raised in a fork handler
    (logging's, which releases its lock after the fork), would be printed and dropped there, and
    the run would go on. Held, they arrive once the workers exist, where the exception stops it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies, even by SIGKILL, so that no worker
    is left running (prctl PR_SET_PDEATHSIG); elsewhere the pool's own checks stop it. A parent
    that died before the request (between the fork and here) sends nothing: the worker, now
    another process's child, leaves at once (it would wait on the job queue for ever, holding
    the run's output pipes open)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill the workers of a pool being abandoned (the executor keeps them in ``_processes``)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()
