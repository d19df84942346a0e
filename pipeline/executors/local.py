"""Today's executor: sessions one at a time in this process (progress inside a session is shown), or a
process pool of `jobs` workers (only whole sessions are reported)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from pipeline.engine.session_run import execute_session
from pipeline.executors.base import ProgressHook, SessionJob
from pipeline.store import StepRun


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def share_cores(threads: int) -> None:
    """A pool worker's share of the machine: left alone, every worker's torch/OpenMP takes every core and the
    workers fight over them (measured: diarize with -j 2 on 2 cores ran far slower than one worker per core;
    docs/ray.md). Ray does the same for its workers (OMP_NUM_THREADS = the worker's CPUs)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    if "torch" in sys.modules:  # already imported in the parent before the fork
        sys.modules["torch"].set_num_threads(threads)


class LocalExecutor:
    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs

    def run(self, jobs: Sequence[SessionJob], *, on_done: Callable[[StepRun], None],
            on_progress: ProgressHook) -> list[StepRun]:
        runs: list[StepRun] = []
        if self.jobs > 1 and len(jobs) > 1:
            threads = max(1, (os.cpu_count() or 1) // self.jobs)
            with ProcessPoolExecutor(max_workers=self.jobs, initializer=share_cores, initargs=(threads,)) as pool:
                for future in as_completed([pool.submit(execute_session, job) for job in jobs]):
                    runs.append(future.result())
                    on_done(runs[-1])
        else:
            for job in jobs:
                runs.append(execute_session(job, on_progress))
                on_done(runs[-1])
        return sorted(runs, key=lambda run: run.session_id)

    def close(self) -> None:
        pass
