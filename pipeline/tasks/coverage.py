"""What a freeze reports about coverage: which field supplied each sample's RPP labels, and which samples
yield no instance of a task (so a sample that silently drops out of a task is always named)."""

from __future__ import annotations

from pipeline.tasks.build import TaskBuild
from pipeline.tasks.settings import TaskSettings


def label_sources(build: TaskBuild) -> dict[str, list[str]]:
    """RPP label field -> the samples whose labels it supplied ("none": no field of rpp.label_fields set)."""
    found: dict[str, list[str]] = {}
    for sample, field in sorted(build.label_sources.items()):
        found.setdefault(field or "none", []).append(sample)
    return dict(sorted(found.items()))


def coverage_warnings(build: TaskBuild, settings: TaskSettings) -> tuple[str, ...]:
    """One line per sample and task that yields no instance, with the RPP label field where it matters."""
    notes = []
    for task, samples in build.without_instances.items():
        for sample in samples:
            why = ""
            if task == "rpp":
                field = build.label_sources.get(sample, "")
                why = (f" (labels read from {field}: no usable label on an RPP row)" if field else
                       f" (no RPP row sets {' or '.join(settings.rpp.label_fields)})")
            notes.append(f"{sample}: no {task.upper()} instance{why}")
    return tuple(sorted(notes))


def describe_label_sources(sources: dict[str, list[str]], shown: int = 10) -> str:
    """'rpp labels: relation_cycle_state in 2 sample(s), relation_pattern in 1 sample(s) (a/1)': samples are
    named for every field but the most common one."""
    common = max(sources, key=lambda f: len(sources[f]), default="")
    parts = []
    for field, samples in sorted(sources.items(), key=lambda item: (-len(item[1]), item[0])):
        named = "" if field == common else " (" + ", ".join(samples[:shown]) + (", ..." if len(samples) > shown
                                                                                 else "") + ")"
        parts.append(f"{field} in {len(samples)} sample(s){named}")
    return "rpp labels: " + ", ".join(parts)


__all__ = ["coverage_warnings", "describe_label_sources", "label_sources"]
