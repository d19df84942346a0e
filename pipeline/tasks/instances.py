"""A task instance, split at birth into what a model may see and what it must not.

`model_facing()` is the only thing written to tasks/<task>.jsonl; `gold_record()` goes to
gold/<task>.jsonl. Builders put gold-derived values only into `gold` or `meta`, never into `input`,
and ids carry no gold (tests/test_tasks_leaks.py checks both by changing the gold and diffing).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

TaskName = Literal["er", "vp", "rpp", "itp", "stp", "ssp"]
TASKS: tuple[TaskName, ...] = ("er", "vp", "rpp", "itp", "stp", "ssp")  # each declared in pipeline/tasks/registry.py


@dataclass(frozen=True, slots=True)
class TaskInstance:
    task: TaskName
    id: str
    sample_id: str
    scenario: str
    row_index: int = field(metadata={"doc": "target row (decision row for ITP): the sort key"})
    input: dict[str, Any]
    gold: dict[str, Any]
    meta: dict[str, Any]

    def model_facing(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "sample_id": self.sample_id, "scenario": self.scenario,
                **self.input}

    def gold_record(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "sample_id": self.sample_id, "scenario": self.scenario,
                "row_index": self.row_index, "gold": self.gold, "meta": self.meta}


def row_id(sample_id: str, row_index: int) -> str:
    """The released checkpoint id `<sample_id>__row<k>` (ER/VP), also used for RPP/STP/SSP.

    Unlike the released turn ids (`<file stem>__row<k>`), it is unique across samples.
    """
    return f"{sample_id}__row{row_index}"


def opaque_id(task: str, key: str, sample_id: str, row_index: int) -> str:
    """A keyed hash of the sample and the decision row: the same for a yes and a no instance."""
    digest = hashlib.sha256(f"{key}\n{sample_id}\n{row_index}".encode()).hexdigest()[:16]
    return f"{task}-{digest}"
