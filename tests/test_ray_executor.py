"""The Ray executor on a real local cluster (127.0.0.1, 2 CPUs, token authentication on) started by the tests:
same outputs as the local executor, a killed worker retried without debris or duplicates, an unshared build
folder and an unreachable address refused with clear errors."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.engine.context import StepContext
from pipeline.engine.runner import StageReport, read_run, run_stage
from pipeline.engine.session_steps import STAGES
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.store import OLD_MARK, TMP_MARK, StepRun
from tests.ray_cluster import RayCluster, auth_env, free_port, processes_titled, start_head
from tests.speech_fixtures import COUPLE, FAMILY, SPEECH_STAGES

# Not imported here: Ray reads RAY_AUTH_MODE when first imported, which must be after `token_file` sets it.
if importlib.util.find_spec("ray") is None:
    pytest.skip("the `ray` extra is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One token for every test cluster (Ray caches the token a driver process read), set for this driver too."""
    path = tmp_path_factory.mktemp("ray_auth") / "auth_token"
    saved = {key: os.environ.get(key) for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    os.environ.update(auth_env(path))
    yield path
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory, token_file: Path) -> Iterator[RayCluster]:
    cluster = start_head(tmp_path_factory.mktemp("ray_logs"), token_file, num_cpus=2)
    yield cluster
    cluster.stop()


def fresh_copy(tmp_path: Path, built: Project) -> Project:
    """The sample sources alone: nothing built yet."""
    root = (tmp_path / "via_ray").resolve()
    shutil.copytree(built.raw_video, root / "raw_video")
    return Project(root)


def debris(build: Path) -> list[str]:
    return [p.relative_to(build).as_posix() for p in build.rglob("*") if TMP_MARK in p.name or OLD_MARK in p.name]


def outputs(project: Project, stage: str, sessions: tuple[str, ...] = (COUPLE, FAMILY)
            ) -> dict[str, list[tuple[str, int, str]]]:
    found = {}
    for session in sessions:
        run = read_run(project, STAGES[stage], session)
        assert run is not None and run.status == "done", (stage, session, run)
        found[session] = [(o.path, o.size, o.sha256) for o in run.outputs]
    return found


def run_through(project: Project, executor: object, stages: tuple[str, ...], sessions: tuple[str, ...] = ()
                ) -> dict[str, StageReport]:
    context = StepContext.load(project)
    entries = context.select(sessions)
    reports = {}
    for name in stages:
        finished: list[StepRun] = []
        reports[name] = run_stage(context, STAGES[name], entries, executor=executor, on_done=finished.append)
        # each session is reported as it finishes, once
        assert sorted(run.session_id for run in finished) == sorted(reports[name].ran + list(reports[name].failed))
    return reports


def test_sample_build_through_ray_gives_the_local_outputs(ray_cluster: RayCluster, built_samples: Project,
                                                          tmp_path: Path) -> None:
    from pipeline.executors.ray_executor import RayExecutor

    # One session through every stage (the killed-worker test below runs two at once): the shorter couple one.
    project = fresh_copy(tmp_path, built_samples)
    executor = RayExecutor(ray_cluster.address)
    try:
        reports = run_through(project, executor, SPEECH_STAGES, (COUPLE,))
    finally:
        executor.close()
    assert {name: (sorted(r.ran), r.failed) for name, r in reports.items()} == {
        name: ([COUPLE], {}) for name in SPEECH_STAGES}
    for stage in SPEECH_STAGES:  # byte-identical: every output file's sha256, as each state records it
        assert outputs(project, stage, (COUPLE,)) == outputs(built_samples, stage, (COUPLE,)), stage
    for step, model in (("transcribe", "whisperx"), ("diarize", "pyannote")):
        loads = [counts.get(model, 0) for counts in executor.model_loads[step]]
        assert loads and all(n == 1 for n in loads), (step, executor.model_loads)  # one per worker, not per session
    # diarize ran on transcribe's actors (same resources on this CPU cluster): Ray's actor start was paid once
    assert executor.actors_started == len(executor.model_loads["transcribe"]) == len(executor.model_loads["diarize"])
    assert debris(project.build) == []


def test_a_ray_worker_decodes_on_the_cpus_it_reserved(ray_cluster: RayCluster) -> None:
    """`threads = 0`: Whisper's CTranslate2 threads are the worker's num_cpus (Ray's OMP_NUM_THREADS), not every
    core of the node (issue 22: 2 threads per worker with 2 workers on 2 cores)."""
    import ray

    from pipeline.executors.ray_executor import RayExecutor
    from pipeline.speech.whisperx_adapter import cpu_threads

    executor = RayExecutor(ray_cluster.address)
    try:
        def seen(setting: int) -> tuple[str | None, int]:
            return os.environ.get("OMP_NUM_THREADS"), cpu_threads(setting)

        task = ray.remote(seen).options(num_cpus=1)
        assert ray.get(task.remote(0)) == ("1", 1)
        assert ray.get(task.remote(2)) == ("1", 2)  # a set value wins
    finally:
        executor.close()


def test_killed_worker_during_transcribe_is_retried_without_debris_or_duplicates(
        ray_cluster: RayCluster, token_file: Path, copy_built: Callable[[], Project], built_samples: Project) -> None:
    from pipeline.executors.ray_executor import RayExecutor

    project = copy_built()
    for path in (project.build / "asr", project.build / "state" / "transcribe"):
        shutil.rmtree(path)
    (project.build / "manifests" / "transcribe.jsonl").unlink()
    executor = RayExecutor(ray_cluster.address)
    result: dict[str, object] = {}

    def build() -> None:
        try:
            result["report"] = run_through(project, executor, ("transcribe",))["transcribe"]
        except BaseException as exc:  # handed to the test thread
            result["error"] = exc

    thread = threading.Thread(target=build)
    thread.start()
    killed = None
    try:
        while thread.is_alive() and killed is None:  # a worker inside transcribe, with its temp folder made
            busy = processes_titled("ray::ModelWorker.run", token_file)  # only transcribe runs here
            started = list((project.build / "asr").rglob(f"*{TMP_MARK}*")) if (project.build / "asr").exists() else []
            if busy and started:
                killed = busy[0]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.05)
        thread.join(timeout=1800)
    finally:
        executor.close()
    assert "error" not in result, result.get("error")
    assert killed is not None, "no transcribe worker was seen running"
    assert not Path(f"/proc/{killed}").exists()
    report = result["report"]
    assert isinstance(report, StageReport)
    assert (sorted(report.ran), report.failed) == ([FAMILY, COUPLE], {})
    assert debris(project.build) == []  # the killed attempt's temp folder is swept
    assert outputs(project, "transcribe") == outputs(built_samples, "transcribe")  # no duplicate segments
    manifest = (project.build / "manifests" / "transcribe.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(manifest) == 2


@pytest.mark.slow  # a Ray cluster the test starts itself
def test_build_folder_that_a_node_cannot_see_is_a_clear_error(tmp_path: Path, token_file: Path,
                                                               sample_project: Project) -> None:
    """A second node joins in its own mount namespace where an empty tmpfs covers the project's build/: on that
    node the path exists but holds other files, exactly what a node without the shared file system sees."""
    from pipeline.executors.ray_executor import RayExecutor

    if subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs `unshare --mount` (root or user namespaces) to give one node its own view of build/")
    build = sample_project.build
    build.mkdir()
    (tmp_path / "logs").mkdir()
    cluster = start_head(tmp_path / "logs", token_file, num_cpus=1)
    try:
        cluster.start_node(["--address", cluster.address, "--node-ip-address", "127.0.0.1", "--num-cpus", "1"],
                           "hidden-build", wrap=["unshare", "--mount", "sh", "-c",
                                                 'mount -t tmpfs tmpfs "$0" && exec "$@"', str(build)])
        executor = RayExecutor(cluster.address)
        try:
            context = StepContext.load(sample_project)
            with pytest.raises(RescueError) as caught:
                run_stage(context, STAGES["ingest"], context.select(), executor=executor)
        finally:
            executor.close()
    finally:
        cluster.stop()
    message = str(caught.value)
    assert f"the build folder {build} is not shared with every Ray node" in message
    assert "cannot read it" in message and "shared file system" in caught.value.fix
    assert not (build / "state").exists() and not (build / "media").exists()  # nothing ran, nothing recorded
    assert [p.name for p in build.iterdir() if p.name != ".lock"] == []  # the marker is gone too


def test_unreachable_ray_address_is_a_clear_error_and_writes_nothing(sample_project: Project) -> None:
    from pipeline.executors.ray_executor import RayExecutor

    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(RescueError) as caught:
        RayExecutor(address)
    assert f"no Ray cluster reachable at {address}" in caught.value.message and "ray start --head" in caught.value.fix
    result = subprocess.run([sys.executable, "-m", "pipeline", "--root", str(sample_project.root), "build",
                             "--executor", "ray", "--ray-address", address], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1, result.stderr
    assert f"error: no Ray cluster reachable at {address}" in result.stderr and "fix:" in result.stderr
    assert not sample_project.build.exists()


def test_ray_flags_that_do_not_fit_the_executor_are_refused_before_anything_is_written(sample_project: Project) -> None:
    for args, expected in ((["--ray-address", "127.0.0.1:6379"], "--ray-address is given but the executor is local"),
                           (["--executor", "ray", "-j", "2"], "-j/--jobs sets the local process pool")):
        result = subprocess.run([sys.executable, "-m", "pipeline", "--root", str(sample_project.root), "build", *args],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 1 and f"error: {expected}" in result.stderr, result.stderr
    assert not sample_project.build.exists()
