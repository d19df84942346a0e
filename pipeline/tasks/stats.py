"""Release statistics, pure: the paper's Table 3, instance counts, label distributions and the
relation-pattern transition matrix. Every float is rounded with `fixed` before it reaches a file."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from pipeline.schema import AnnotationSchema
from pipeline.tasks.build import TaskBuild
from pipeline.tasks.context import SessionView, clean
from pipeline.tasks.instances import TASKS, TaskInstance
from pipeline.tasks.jsonio import fixed
from pipeline.tasks.registry import TASK_SPECS

SCENARIOS = ("couple", "family")
TABLE3_ROWS = (
    ("samples", "Samples"),
    ("total_minutes", "Total duration (min)"),
    ("total_rows", "Total turns (rows)"),
    ("avg_minutes", "Avg duration / sample (min)"),
    ("avg_rows", "Avg turns / sample"),
    ("avg_speakers", "Avg speakers / sample"),
    ("therapist_share", "Therapist turn share"),
)


Cell = float | int | None   # None: an average or share over no sessions ("n/a", JSON null, empty CSV cell)


def _table3_column(views: Sequence[SessionView]) -> dict[str, Cell]:
    samples = len(views)
    # The benchmark file has no duration field: a session lasts until its last row ends (spec section 1).
    minutes = sum(max((r.end_time for r in v.rows), default=0.0) for v in views) / 60
    rows = sum(len(v.rows) for v in views)
    speakers = sum(len({clean(r.primary_speaker) for r in v.rows} - v.all_group_labels - {""}) for v in views)
    therapist_rows = sum(1 for v in views for r in v.rows if v.is_therapist(r))
    return {
        "samples": samples,
        "total_minutes": fixed(minutes, 1),
        "total_rows": rows,
        "avg_minutes": fixed(minutes / samples, 2) if samples else None,
        "avg_rows": fixed(rows / samples, 2) if samples else None,
        "avg_speakers": fixed(speakers / samples, 2) if samples else None,
        "therapist_share": fixed(therapist_rows / rows, 3) if rows else None,
    }


def table3(views: Sequence[SessionView]) -> dict[str, dict[str, Cell]]:
    """Per scenario and overall: sessions, minutes, rows, averages, speakers, therapist share."""
    columns = {s: _table3_column([v for v in views if v.scenario == s]) for s in SCENARIOS}
    columns["all"] = _table3_column(views)
    return columns


def instance_counts(build: TaskBuild) -> dict[str, dict[str, int]]:
    """Instances and covered samples per task and scenario."""
    counts: dict[str, dict[str, int]] = {}
    for task in TASKS:
        items = build.instances[task]
        entry: dict[str, int] = {}
        for scenario in SCENARIOS:
            chosen = [i for i in items if i.scenario == scenario]
            entry[scenario] = len(chosen)
            entry[f"{scenario}_samples"] = len({i.sample_id for i in chosen})
        entry["all"] = len(items)
        counts[task] = entry
    return counts


def label_orders(schema: AnnotationSchema) -> dict[str, dict[str, list[str]]]:
    """The category order of each task's distribution, per scenario (label sets from the schema)."""
    return {name: {scenario: task.distribution.order(schema, scenario) for scenario in SCENARIOS}
            for name, task in TASK_SPECS.items()}


def label_distributions(build: TaskBuild) -> dict[str, dict[str, dict[str, int]]]:
    """Gold label counts per task and scenario, in label-set order (labels outside it come last, sorted)."""
    group_labels = frozenset(build.schema.group_labels.values())
    orders = label_orders(build.schema)
    result: dict[str, dict[str, dict[str, int]]] = {}
    for task in TASKS:
        result[task] = {}
        distribution = TASK_SPECS[task].distribution
        for scenario in SCENARIOS:
            counts = Counter(distribution.category(i.gold, group_labels)
                             for i in build.instances[task] if i.scenario == scenario)
            order = orders[task][scenario]
            keys = [k for k in order if k in counts or distribution.keep_empty] + sorted(set(counts) - set(order))
            result[task][scenario] = {k: counts.get(k, 0) for k in keys}
    return result


def transitions(build: TaskBuild) -> dict[str, dict[str, Any]]:
    """Relation-pattern transitions between consecutive RPP gold labels of a session, per scenario.

    Self-transitions are excluded; each row is normalised to sum 1 (a label never left gives a zero row).
    """
    orders = label_orders(build.schema)["rpp"]
    by_sample: dict[str, list[TaskInstance]] = {}
    for instance in build.instances["rpp"]:
        by_sample.setdefault(instance.sample_id, []).append(instance)
    result: dict[str, dict[str, Any]] = {}
    for scenario in SCENARIOS:
        labels = list(orders[scenario])
        counts = Counter()
        for items in by_sample.values():
            if items[0].scenario != scenario:
                continue
            sequence = [i.gold["relation_label"] for i in sorted(items, key=lambda i: i.row_index)]
            counts.update((a, b) for a, b in pairwise(sequence) if a != b)
        extra = sorted({x for pair in counts for x in pair} - set(labels))
        labels += extra
        matrix = [[counts[(a, b)] for b in labels] for a in labels]
        normalised = [[fixed(c / sum(r), 4) if sum(r) else 0.0 for c in r] for r in matrix]
        result[scenario] = {"labels": labels, "counts": matrix, "row_normalised": normalised}
    return result


def statistics(build: TaskBuild) -> dict[str, Any]:
    return {"table3": table3(build.views), "instances": instance_counts(build),
            "label_distributions": label_distributions(build), "relation_transitions": transitions(build),
            "dropped": build.dropped}


def _cell(key: str, value: Cell) -> str:
    if value is None:
        return "n/a"
    if key == "therapist_share":
        return f"{value * 100:.1f}%"
    if key == "total_minutes":
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else f"{value:.2f}"


def table3_markdown(table: dict[str, dict[str, Cell]]) -> str:
    lines = ["| Statistic | Couple | Family | All |", "|---|---:|---:|---:|"]
    for key, title in TABLE3_ROWS:
        lines.append(f"| {title} | " + " | ".join(_cell(key, table[s][key]) for s in (*SCENARIOS, "all")) + " |")
    return "\n".join(lines) + "\n"


def table3_csv(table: dict[str, dict[str, Cell]]) -> str:
    """Missing values (no sessions) are empty cells, which CSV readers take as missing."""
    lines = ["statistic,couple,family,all"]
    for key, _title in TABLE3_ROWS:
        cells = ("" if table[s][key] is None else repr(table[s][key]) for s in (*SCENARIOS, "all"))
        lines.append(",".join([key, *cells]))
    return "\n".join(lines) + "\n"


def instances_markdown(counts: dict[str, dict[str, int]]) -> str:
    lines = ["| Task | Couple inst. | Family inst. | All | Samples C / F |", "|---|---:|---:|---:|---:|"]
    for task in TASKS:
        c = counts[task]
        lines.append(f"| {task.upper()} ({TASK_SPECS[task].title}) | {c['couple']:,} | {c['family']:,} | "
                     f"{c['all']:,} | {c['couple_samples']} / {c['family_samples']} |")
    return "\n".join(lines) + "\n"


def instances_csv(counts: dict[str, dict[str, int]]) -> str:
    lines = ["task,couple,family,all,couple_samples,family_samples"]
    for task in TASKS:
        c = counts[task]
        lines.append(f"{task},{c['couple']},{c['family']},{c['all']},{c['couple_samples']},{c['family_samples']}")
    return "\n".join(lines) + "\n"
