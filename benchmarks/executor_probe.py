"""Inside a worker of each executor: where a transcribe worker's time goes (benchmarks/bench_executors.py).

`probe` runs the transcribe stage's own calls in a worker process, timed one by one: how long after the process
started the job began, which heavy modules the process already had (a forked pool worker inherits its parent's),
importing the speech stack, loading the model (`loaded_asr`, the stage's ModelSlot), transcribing one session's
audio (`transcribe_audio`), and the thread settings the worker runs with. Wall and CPU seconds both: on a shared
machine the wall time stretches with the load, the CPU time much less, and CPU / wall below 1 during inference is
time spent waiting for a core.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HEAVY = ("torch", "ctranslate2", "faster_whisper", "whisperx.asr", "pyannote.audio", "transformers", "ray")


def process_age_s() -> float:
    """Seconds since this process started (/proc/self/stat field 22, in clock ticks since boot)."""
    boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime "))
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    return time.time() - (boot + ticks / os.sysconf("SC_CLK_TCK"))


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(began: tuple[float, float]) -> dict[str, float]:
    wall, cpu = time.perf_counter() - began[0], time.process_time() - began[1]
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def probe(audio: str, threads: int, submitted_at: float) -> dict:
    """Time the transcribe stage's steps for one session's 16 kHz WAV in this process; `threads` is the ASR
    setting (`[tool.rescue.speech.asr] threads`, 0 = the default); `submitted_at`: the driver's time.time() when
    it handed the job over."""
    began_at = time.time()
    age = process_age_s()
    inherited = [name for name in HEAVY if name in sys.modules]
    began = _clock()
    import torch
    import whisperx.asr  # noqa: F401  (what the model's load imports; timed here on its own)

    from pipeline.speech import whisperx_adapter  # the stage's import, timed
    from pipeline.speech.settings import AsrSettings, resolve_asr
    from pipeline.speech.transcribe import loaded_asr, transcribe_audio

    imported = _since(began)
    settings = resolve_asr(AsrSettings(threads=threads))
    began = _clock()
    loaded_asr(settings)
    load = _since(began)
    began = _clock()
    result = transcribe_audio(Path(audio), settings)
    inference = _since(began)
    return {
        "pid": os.getpid(), "waited_s": round(began_at - submitted_at, 2), "process_age_s": round(age, 2),
        "inherited_modules": inherited, "import": imported, "load": load, "inference": inference,
        "segments": len(result.segments),
        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "torch": torch.get_num_threads(),
                    "ctranslate2": whisperx_adapter.cpu_threads(threads)},
    }
