"""Nothing vanishes between snapshots: each pull compares its answers with the previous snapshot's.

An annotator's answer to a row that the previous snapshot held and this pull does not get from the server
is kept (its records copied into the new snapshot, listed in `kept.jsonl` with why and since when), when:
- the annotation is gone from the server (deleted, or its whole project deleted): kept, marked deleted on
  the server with the time it was first missed, until the user accepts the loss (`rescue pull
  --accept-deleted`; the snapshot records what was accepted in `summary.json`);
- the annotation is still there but another account changed it (`authorship`): the annotator's last own
  version is kept; the changed one is quarantined with who changed it. The annotator saving it again makes
  it theirs (the server then names them as its last writer) and the kept version gives way.
An annotation that is still there and the annotator's own, but did not give records (skipped, or refused by
the schema: see quarantine.jsonl), is the annotator's latest word and is not replaced by an older one.
Carried records bear the new snapshot's name (a snapshot's records are of one snapshot); kept.jsonl says
which snapshot each came from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from pipeline.records import Annotation, Record, Scenario

KEPT_FILE = "kept.jsonl"
_ANNOTATIONS, _SUMMARY = "annotations.jsonl", "summary.json"  # pull's names (not imported: pull imports this)


class KeptAnswer(Record):
    """One annotator's answer to one row, carried from an earlier snapshot because the server lost or changed it."""

    kind: Literal["deleted", "project_deleted", "changed"]
    annotator: str
    scenario: Scenario
    session_id: str
    row_id: str
    row_index: int
    fields: tuple[str, ...]
    annotation_id: int
    task_id: int
    from_snapshot: str = Field(description="the snapshot whose records were carried")
    missed_at: str = Field(description="UTC time a pull first found it missing or changed on the server")
    reason: str

    def line(self) -> str:
        where = (f"{self.annotator}, row {self.row_id} ({self.session_id} #{self.row_index}), "
                 f"field(s) {', '.join(self.fields)}")
        return f"{where}: {self.reason}"


@dataclass
class Carried:
    pairs: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)  # (sort key, record line), sorted
    kept: list[KeptAnswer] = field(default_factory=list)
    accepted: list[KeptAnswer] = field(default_factory=list)  # deleted answers let go (--accept-deleted)
    previous: str = ""  # the snapshot compared with ("" when none)


def previous_snapshot(base: Path) -> Path | None:
    """The newest snapshot folder whose records are intact (their sha256 is the one its pull recorded)."""
    if not base.is_dir():
        return None
    for folder in sorted((p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")), reverse=True):
        try:
            summary = json.loads((folder / _SUMMARY).read_text(encoding="utf-8"))
            data = (folder / _ANNOTATIONS).read_bytes()
        except (OSError, ValueError):
            continue
        recorded = str(summary.get("annotations_sha256") or "") if isinstance(summary, dict) else ""
        if summary.get("error") or (recorded and hashlib.sha256(data).hexdigest() != recorded):
            continue  # a failed or damaged snapshot is no reference
        return folder
    return None


def _kept_before(folder: Path) -> dict[int, KeptAnswer]:
    """The answers the previous snapshot already kept, by annotation id (their first miss and first origin)."""
    path = folder / KEPT_FILE
    if not path.is_file():
        return {}
    kept = (KeptAnswer.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip())
    return {answer.annotation_id: answer for answer in kept}


def carry_forward(previous: Path | None, *, snapshot: str, present_pairs: Collection[tuple[str, str]],
                  present_ids: Collection[int], disowned: Mapping[int, str], projects_now: Collection[tuple[str, str]],
                  field_order: Mapping[str, int], accept_deleted: bool) -> Carried:
    """What of `previous` to copy into `snapshot`. `present_pairs`: (row id, annotator) of the annotations
    that count now; `present_ids`: every annotation id the exports hold; `disowned`: annotation id -> who else
    changed it; `projects_now`: (scenario, annotator) of the projects exported now."""
    out = Carried(previous=previous.name if previous else "")
    if previous is None:
        return out
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    before = _kept_before(previous)
    groups: dict[tuple[str, str], list[Annotation]] = {}
    with (previous / _ANNOTATIONS).open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            raw = json.loads(line)  # validated only when carried: most pairs are present again
            if (raw["row_id"], raw["annotator"]) not in present_pairs:
                groups.setdefault((raw["row_id"], raw["annotator"]), []).append(Annotation.model_validate(raw))
    for records in groups.values():
        first = records[0]
        aid = first.annotation_id
        if aid in disowned:
            kind, reason = "changed", f"{disowned[aid]}; {first.annotator}'s last own version is kept"
        elif aid in present_ids:
            continue  # still there and the annotator's own: their latest word (see the module's doc)
        elif (first.scenario, first.annotator) not in projects_now:
            kind, reason = "project_deleted", (f"the {first.scenario} project of {first.annotator} is gone from the "
                                               "server: kept from the earlier snapshot")
        else:
            kind, reason = "deleted", f"annotation {aid} is gone from the server: kept from the earlier snapshot"
        earlier = before.get(aid)
        since = earlier.missed_at if earlier else now
        if kind != "changed":
            reason += f" (missed since {since})"
        kept = KeptAnswer(kind=kind, annotator=first.annotator, scenario=first.scenario, session_id=first.session_id,
                          row_id=first.row_id, row_index=first.row_index, fields=tuple(r.field for r in records),
                          annotation_id=aid, task_id=first.task_id,
                          from_snapshot=earlier.from_snapshot if earlier else first.snapshot, missed_at=since,
                          reason=reason)
        if kind != "changed" and accept_deleted:
            out.accepted.append(kept)
            continue
        out.kept.append(kept)
        for record in records:
            key = (record.session_id, record.row_index, record.annotator, field_order.get(record.field, 1 << 30),
                   record.annotation_id)
            out.pairs.append((key, record.model_copy(update={"snapshot": snapshot}).model_dump_json()))
    out.pairs.sort(key=lambda pair: pair[0])
    out.kept.sort(key=lambda k: (k.session_id, k.row_index, k.annotator))
    out.accepted.sort(key=lambda k: (k.session_id, k.row_index, k.annotator))
    return out

