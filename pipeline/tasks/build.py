"""All six task files from gold sessions: one pure function, no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.benchmark_format import BenchmarkSession
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import SessionView, session_view
from pipeline.tasks.instances import TASKS, TaskInstance, TaskName
from pipeline.tasks.registry import TASK_SPECS
from pipeline.tasks.settings import TaskSettings


@dataclass(frozen=True)
class TaskBuild:
    instances: dict[TaskName, list[TaskInstance]]
    dropped: dict[TaskName, dict[str, int]]
    views: tuple[SessionView, ...]
    schema: AnnotationSchema
    label_sources: dict[str, dict[str, int]]  # sample -> {label field: RPP instances it supplied}, per row

    @property
    def without_instances(self) -> dict[TaskName, tuple[str, ...]]:
        """Per task, the samples that yield no instance of it (sorted), for the freeze's warnings."""
        found = {task: {i.sample_id for i in items} for task, items in self.instances.items()}
        return {task: tuple(v.sample_id for v in self.views if v.sample_id not in found[task]) for task in TASKS}


def build_session(view: SessionView, settings: TaskSettings
                  ) -> tuple[dict[TaskName, tuple[list[TaskInstance], Counter]], Counter]:
    """Every task's instances and drop reasons for one session, and how many RPP labels each field gave."""
    built: dict[TaskName, tuple[list[TaskInstance], Counter]] = {}
    sources: Counter = Counter()
    for name, task in TASK_SPECS.items():
        instances, dropped, supplied = task.build(view, settings)
        built[name] = (instances, dropped)
        sources.update(supplied)
    return built, sources


def build_tasks(sessions: Sequence[BenchmarkSession], settings: TaskSettings, schema: AnnotationSchema) -> TaskBuild:
    """Instances of every task, ordered by (sample_id, row): an order that only model-facing fields decide."""
    views = tuple(session_view(s, schema) for s in sorted(sessions, key=lambda s: s.sample_id))
    instances: dict[TaskName, list[TaskInstance]] = {task: [] for task in TASKS}
    dropped: dict[TaskName, Counter] = {task: Counter() for task in TASKS}
    label_sources: dict[str, dict[str, int]] = {}
    for view in views:
        built_session, sources = build_session(view, settings)
        label_sources[view.sample_id] = dict(sorted(sources.items()))
        for task, (built, reasons) in built_session.items():
            instances[task].extend(sorted(built, key=lambda i: i.row_index))
            dropped[task].update(reasons)
    for task, items in instances.items():
        ids = [i.id for i in items]
        if len(set(ids)) != len(ids):  # a bug, not bad input: ids come from unique (sample, row) pairs
            raise AssertionError(f"{task}: instance ids repeat")
    return TaskBuild(instances=instances, dropped={t: dict(sorted(c.items())) for t, c in dropped.items()},
                     views=views, schema=schema, label_sources=label_sources)
