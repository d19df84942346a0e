"""Per-session jobs on a Ray cluster (`rescue build --executor ray`).

Model-heavy steps (transcribe, diarize) run in actors: long-lived worker processes whose `ModelSlot` keeps the
model loaded, so each actor loads it once for all the sessions it runs. The actors outlive their step: the next
model step of the same build reuses them when it asks for the same resources, so Ray's actor start (seconds to
tens of seconds) and the speech stack's import are paid once per build, not once per step; they are stopped
before a step that runs as tasks and when the executor closes. Other steps run as plain tasks. Each
worker asks for the step's resources (`[tool.rescue.executor.<step>]`). A job whose worker dies is run again
(`max_retries`); its outputs are written through `atomic_dir`, so a killed attempt leaves only a temp folder,
which the driver sweeps when the stage ends. The driver alone records state and holds the build lock; this
executor only hands back `StepRun`s. Progress inside a session is not relayed (only finished sessions).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline import __version__
from pipeline.errors import RescueError
from pipeline.executors.base import ProgressHook, SessionJob
from pipeline.engine.session_run import execute_session
from pipeline.executors.settings import ExecutorSettings, StepResources
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.store import StepRun, sha256_json

MODEL_STEPS = frozenset({"transcribe", "diarize"})
# Non-secret variables a worker must see as the driver does (offline hubs); a command's flags travel with each
# job as settings overrides. HF_TOKEN is never forwarded: Ray keeps a job's runtime_env in its GCS; set it on
# every node instead.
FORWARDED_NAMES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYANNOTE_METRICS_ENABLED")


def forwarded_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key in FORWARDED_NAMES}


def step_settings(root: Path, step: str, overrides: SettingsOverrides = NO_OVERRIDES) -> Any:
    from pipeline.settings import load_settings
    from pipeline.engine.session_steps import STAGES

    return STAGES[step].settings_of(load_settings(root, overrides))


def _failed(job: SessionJob, error: str) -> StepRun:
    return StepRun(step=job.step, session_id=job.session_id, fingerprint=job.fingerprint, status="failed",
                    error=error, code_version=__version__)


def run_job(job: SessionJob, expected_settings: str) -> StepRun:
    """Runs on a worker: refuse when this node resolves the step's settings differently from the driver (its
    outputs would not match the fingerprint), else run the job as the local executor does."""
    try:
        seen = step_settings(job.root, job.step, job.overrides).model_dump(mode="json")
    except RescueError as exc:  # e.g. this node's copy of pyproject.toml does not parse
        return _failed(job, str(exc))
    if sha256_json(seen) != expected_settings:
        return _failed(job, f"the Ray worker on {os.uname().nodename} resolves the {job.step} settings differently "
                            f"from the driver ({seen}) (fix: set device/model/pipeline explicitly in "
                            "[tool.rescue.speech], and the same environment (HF_TOKEN) on every node)")
    return execute_session(job)


class ModelWorker:
    """An actor: one process that runs the model steps' jobs in turn (a build's transcribe jobs, then its diarize
    jobs); its ModelSlots keep a step's model between sessions. The first job of another step drops the models
    loaded so far, so one model at a time is held (the imports stay: the next step's start is what is saved)."""

    def __init__(self) -> None:
        self.step: str | None = None

    def run(self, job: SessionJob, expected_settings: str) -> StepRun:
        if self.step is not None and job.step != self.step:
            from pipeline.speech.model_slot import drop_models

            drop_models()
        self.step = job.step
        return run_job(job, expected_settings)

    def pid(self) -> int:
        return os.getpid()

    def model_loads(self) -> dict[str, int]:
        from pipeline.speech.model_slot import load_counts

        return load_counts()


def _on_cuda(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get("device") == "cuda" or any(_on_cuda(v) for v in value.values())
    return False


class RayExecutor:
    """Connects on creation (an unreachable cluster is a RescueError before anything is written); checks on the
    first run that every node sees the build folder."""

    name = "ray"

    def __init__(self, address: str = "auto", settings: ExecutorSettings | None = None) -> None:
        from pipeline.executors.ray_connect import connect

        self.settings = settings or ExecutorSettings()
        self.address = address
        self.model_loads: dict[str, list[dict[str, int]]] = {}  # per step: each actor's load counts
        self.actors_started = 0  # ModelWorker actors created by this executor (reused ones count once)
        self._checked: set[Path] = set()
        self._pool: list[Any] = []  # the model steps' actors, kept for the next model step
        self._pool_key: tuple | None = None  # the resources they reserved
        self._owned = connect(address)

    def run(self, jobs: Sequence[SessionJob], *, on_done: Callable[[StepRun], None],
            on_progress: ProgressHook) -> list[StepRun]:
        if not jobs:
            return []
        root, step = jobs[0].root, jobs[0].step
        if root not in self._checked:
            from pipeline.executors.ray_shared import check_shared

            check_shared(root / "build")
            self._checked.add(root)
        settings = step_settings(root, step, jobs[0].overrides).model_dump(mode="json")
        resources = self.settings.resources(step)
        num_gpus = resources.num_gpus if _on_cuda(settings) and self._cluster("GPU") > 0 else 0.0
        expected = sha256_json(settings)
        options = dict(num_cpus=resources.num_cpus, num_gpus=num_gpus, runtime_env={"env_vars": forwarded_env()})
        if step in MODEL_STEPS:
            runs = self._on_actors(step, jobs, expected, options, resources, on_done)
        else:
            self._release()  # the tasks need the CPUs the model actors hold
            runs = self._as_tasks(jobs, expected, options, on_done)
        return sorted(runs, key=lambda run: run.session_id)

    def close(self) -> None:
        import ray

        if ray.is_initialized():
            self._release()
        if self._owned and ray.is_initialized():
            ray.shutdown()
        self._owned = False

    def _release(self) -> None:
        """Stop the kept model actors (frees their CPUs/GPUs)."""
        import ray

        pool, self._pool, self._pool_key = self._pool, [], None
        for actor in pool:
            ray.kill(actor)

    def _model_actors(self, options: dict, count: int) -> list[Any]:
        """`count` ModelWorker actors with these resources: the kept ones when they reserved the same (e.g.
        transcribe's after diarize's on a CPU cluster), else new ones (a step with another GPU share)."""
        import ray

        key = (options["num_cpus"], options["num_gpus"], tuple(sorted(options["runtime_env"]["env_vars"].items())))
        if key != self._pool_key:
            self._release()
            self._pool_key = key
        retries = self.settings.max_retries
        actor_class = ray.remote(ModelWorker).options(**options, max_restarts=retries, max_task_retries=retries)
        while len(self._pool) < count:
            self._pool.append(actor_class.remote())
            self.actors_started += 1
        for extra in self._pool[count:]:  # more than this step can use: free their resources
            ray.kill(extra)
        del self._pool[count:]
        return list(self._pool)

    def _cluster(self, resource: str) -> float:
        import ray

        return float(ray.cluster_resources().get(resource, 0.0))

    def _actor_count(self, resources: StepResources, num_gpus: float, jobs: int) -> int:
        """The `workers` setting, or as many as the cluster's CPUs (and GPUs) fit; never more than the jobs."""
        if resources.workers:
            return min(resources.workers, jobs)
        fit = int(self._cluster("CPU") // resources.num_cpus + 1e-9)
        if num_gpus:
            fit = min(fit, int(self._cluster("GPU") // num_gpus + 1e-9))
        return max(1, min(fit, jobs))

    def _outcome(self, job: SessionJob, exc: BaseException) -> tuple[StepRun, bool]:
        """A failed StepRun for a job Ray could not finish, and whether its worker is gone for good."""
        from ray.exceptions import RayTaskError

        if isinstance(exc, RayTaskError):  # the job raised past execute_session (a bug): the worker lives on
            return _failed(job, f"internal error on the Ray worker: {str(exc).strip().splitlines()[-1]}"), False
        return self._lost(job, exc), True

    def _lost(self, job: SessionJob, exc: BaseException) -> StepRun:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return _failed(job, f"the Ray worker running it died and {self.settings.max_retries} retries did not "
                            f"finish it: {type(exc).__name__}: {first} (fix: see the Ray logs of the node; "
                            "raise [tool.rescue.executor] max_retries or the step's resources)")

    def _as_tasks(self, jobs: Sequence[SessionJob], expected: str, options: dict,
                  on_done: Callable[[StepRun], None]) -> list[StepRun]:
        import ray

        remote = ray.remote(run_job).options(**options, max_retries=self.settings.max_retries, retry_exceptions=False)
        pending = {remote.remote(job, expected): job for job in jobs}
        return self._collect(pending, on_done)

    def _collect(self, pending: dict, on_done: Callable[[StepRun], None]) -> list[StepRun]:
        import ray

        runs: list[StepRun] = []
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ready[0])
            try:
                run = ray.get(ready[0])
            except Exception as exc:  # the worker died more often than max_retries, or a bug
                run, _ = self._outcome(job, exc)
            runs.append(run)
            on_done(run)
        return runs

    def _on_actors(self, step: str, jobs: Sequence[SessionJob], expected: str, options: dict,
                   resources: StepResources, on_done: Callable[[StepRun], None]) -> list[StepRun]:
        """Each actor takes the next session when it finishes one; a dead actor is restarted by Ray and its job
        retried; one that stays dead is dropped, and its job (and any left with no actor) fails. The actors are
        kept for the next model step (`_model_actors`), or stopped if this one fails."""
        import ray

        actors = self._model_actors(options, self._actor_count(resources, options["num_gpus"], len(jobs)))
        queue = list(jobs)
        running: dict[Any, tuple[Any, SessionJob]] = {}
        runs: list[StepRun] = []

        def give(actor: Any) -> None:
            if queue:
                job = queue.pop(0)
                running[actor.run.remote(job, expected)] = (actor, job)

        try:
            for actor in actors:
                give(actor)
            while running:
                ready, _ = ray.wait(list(running), num_returns=1)
                actor, job = running.pop(ready[0])
                try:
                    run = ray.get(ready[0])
                except Exception as exc:
                    run, dead = self._outcome(job, exc)
                    if dead:
                        actors.remove(actor)
                        self._pool = [kept for kept in self._pool if kept is not actor]
                runs.append(run)
                on_done(run)
                busy = [holder for holder, _ in running.values()]
                for idle in [a for a in actors if not any(a is b for b in busy)]:
                    give(idle)
            for left in queue:  # every actor stayed dead
                runs.append(self._lost(left, RuntimeError("no worker of this step is left")))
                on_done(runs[-1])
            self.model_loads[step] = ray.get([actor.model_loads.remote() for actor in actors])
        except BaseException:  # interrupted or a Ray failure: no actor outlives a failed step
            self._release()
            raise
        return runs
