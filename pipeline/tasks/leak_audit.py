"""`rescue audit-leaks RELEASE`: which instances of a release's task files would show each other their answers.

Per task, over each sample's instances as the task file holds them (every field a mode can show): the
cross-record leaks (instance A's context shows the row that holds B's answer, with a revealing field: see
pipeline/tasks/answer_sites.py), as pairs and as instances exposed if a sample's instances were batched all
together, and under the paper's per-sample batches of `batch_size` (what `rescue run-model --batching paper`
sends). Separately: instances whose OWN record shows their own answer. Those must be zero; any is a defect of
the release (the command exits 1), while cross-record leaks are a property of the benchmark's design, which
`rescue run-model`'s default batching keeps out of every request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.records import Record
from pipeline.tasks.answer_sites import exposure, leaks_among
from pipeline.tasks.instances import TASKS
from pipeline.tasks.manifest import read_listed_jsonl, read_manifest
from pipeline.tasks.registry import task_spec

EXAMPLES = 5  # leaks named per task in the report


class TaskLeaks(Record):
    task: str
    instances: int
    samples: int
    answer_row: str  # the declaration, in words
    pairs: int  # (seer, owner) pairs of different instances of one sample
    exposed_if_batched_per_sample: int  # instances whose answer another instance of the sample shows
    exposed_in_paper_batches: int  # ... within the paper's per-sample batches of `batch_size`
    samples_with_leaks: int
    examples: tuple[str, ...] = ()  # "<seer> shows <owner>'s answer (row N)"
    own_answer_shown: tuple[str, ...] = ()  # ids whose own record shows their answer: must be empty


class LeakAudit(Record):
    release: str
    batch_size: int
    tasks: tuple[TaskLeaks, ...]

    @property
    def own_answer_shown(self) -> int:
        return sum(len(t.own_answer_shown) for t in self.tasks)


def task_leaks(task: str, records: list[dict[str, Any]], batch_size: int) -> TaskLeaks:
    site = task_spec(task).answer_site
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_sample.setdefault(str(record.get("sample_id")), []).append(record)
    pairs, exposed, in_batches, own, samples, examples = 0, set(), set(), [], 0, []
    for group in by_sample.values():
        found = leaks_among(site, [exposure(site, r) for r in group])
        cross = [leak for leak in found if leak.seer != leak.owner]
        own += [leak.owner for leak in found if leak.seer == leak.owner]
        pairs += len(cross)
        exposed |= {leak.owner for leak in cross}
        samples += bool(cross)
        examples += [f"{leak.seer} shows {leak.owner}'s answer (row {leak.row})" for leak in cross]
        for start in range(0, len(group), batch_size):
            batch = group[start:start + batch_size]
            in_batches |= {leak.owner for leak in leaks_among(site, [exposure(site, r) for r in batch])
                           if leak.seer != leak.owner}
    return TaskLeaks(task=task, instances=len(records), samples=len(by_sample), answer_row=site.describe(),
                     pairs=pairs, exposed_if_batched_per_sample=len(exposed), exposed_in_paper_batches=len(in_batches),
                     samples_with_leaks=samples, examples=tuple(examples[:EXAMPLES]),
                     own_answer_shown=tuple(sorted(set(own))))


def audit_release(release: Path, batch_size: int = 5) -> LeakAudit:
    """Every task file listed in the manifest (checked against it), audited for answer leaks."""
    manifest = read_manifest(release)
    listed = {entry.get("path") for entry in manifest.get("files", []) if isinstance(entry, dict)}
    tasks = tuple(task_leaks(task, read_listed_jsonl(release, manifest, f"tasks/{task}.jsonl"), batch_size)
                  for task in TASKS if f"tasks/{task}.jsonl" in listed)
    return LeakAudit(release=str(release), batch_size=batch_size, tasks=tasks)
