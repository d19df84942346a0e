"""Whisper's decoding threads with `[tool.rescue.speech.asr] threads = 0` (issue 22, part 3): a worker of the local
pool, given its share of the cores, decodes on that share, not on every core of the machine (which ran 2 threads
per worker with 2 workers on 2 cores). A set value wins; a process outside any executor uses every core.
The Ray worker's side (num_cpus) is in tests/test_ray_executor.py."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from pipeline.executors.local import share_cores
from pipeline.speech.whisperx_adapter import cpu_threads


def _in_worker(setting: int) -> tuple[str | None, int]:
    return os.environ.get("OMP_NUM_THREADS"), cpu_threads(setting)


def test_a_pool_worker_decodes_on_its_share_of_the_cores() -> None:
    # the local executor's own set-up for `-j 2` (pipeline/executors/local.py): cores // jobs per worker
    share = max(1, (os.cpu_count() or 1) // 2)
    with ProcessPoolExecutor(2, initializer=share_cores, initargs=(share,)) as pool:
        assert pool.submit(_in_worker, 0).result() == (str(share), share)
        assert pool.submit(_in_worker, 3).result() == (str(share), 3)  # the setting, when set, wins


@pytest.mark.parametrize("value", [None, "", "0", "many"])
def test_outside_an_executor_every_core_is_used(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert cpu_threads(0) == (os.cpu_count() or 1)
    assert cpu_threads(5) == 5
