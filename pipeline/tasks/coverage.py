"""What a freeze reports about coverage: per sample, how many RPP instances took their label from each field
(the label source is decided per row), and which samples yield no instance of a task (so a sample that
silently drops out of a task is always named)."""

from __future__ import annotations

from pipeline.tasks.build import TaskBuild
from pipeline.tasks.registry import TASK_SPECS
from pipeline.tasks.settings import TaskSettings


def label_sources(build: TaskBuild) -> dict[str, dict[str, int]]:
    """Sample -> {label field: RPP instances whose label it supplied} ({} : none); MANIFEST coverage."""
    return {sample: dict(counts) for sample, counts in sorted(build.label_sources.items())}


def label_field_totals(sources: dict[str, dict[str, int]]) -> dict[str, tuple[int, int]]:
    """Field -> (instances, samples) over all samples."""
    totals: dict[str, tuple[int, int]] = {}
    for counts in sources.values():
        for field, count in counts.items():
            instances, samples = totals.get(field, (0, 0))
            totals[field] = (instances + count, samples + 1)
    return dict(sorted(totals.items()))


def coverage_warnings(build: TaskBuild, settings: TaskSettings) -> tuple[str, ...]:
    """One line per sample and task that yields no instance, with why where the task can tell (RPP)."""
    notes = []
    views = {view.sample_id: view for view in build.views}
    for task, samples in build.without_instances.items():
        explain = TASK_SPECS[task].why_none
        for sample in samples:
            why = explain(views[sample], settings) if explain else ""
            notes.append(f"{sample}: no {task.upper()} instance{why}")
    return tuple(sorted(notes))


def describe_label_sources(sources: dict[str, dict[str, int]], shown: int = 10) -> str:
    """'rpp labels per row: relation_cycle_state 40 in 2 sample(s), relation_pattern 6 in 2 sample(s) (a: 2,
    b: 4)': the samples are named, with their counts, for every field but the one most instances came from."""
    totals = label_field_totals(sources)
    if not totals:
        return "rpp labels per row: no RPP instance"
    common = max(totals, key=lambda f: totals[f][0])
    parts = []
    for field, (instances, samples) in sorted(totals.items(), key=lambda item: (-item[1][0], item[0])):
        named = [f"{sample}: {counts[field]}" for sample, counts in sources.items() if field in counts]
        listed = "" if field == common else " (" + ", ".join(named[:shown]) + (", ..." if len(named) > shown
                                                                                else "") + ")"
        parts.append(f"{field} {instances} in {samples} sample(s){listed}")
    return "rpp labels per row: " + ", ".join(parts)


__all__ = ["coverage_warnings", "describe_label_sources", "label_field_totals", "label_sources"]
