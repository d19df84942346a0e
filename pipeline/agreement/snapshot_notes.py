"""What the snapshot's pull found about the server, repeated by `rescue agree`: accounts not on the roster
(their answers were quarantined, so they are not among the annotators compared) and answers kept from an
earlier snapshot because the server lost them or another account changed them."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.agreement.results import InputNote
from pipeline.annotate.pull import SUMMARY_FILE, PullSummary
from pipeline.annotate.roster import stranger_line


def snapshot_notes(annotations: Path) -> list[InputNote]:
    try:
        summary = PullSummary.model_validate(json.loads((annotations.parent / SUMMARY_FILE).read_text("utf-8")))
    except (OSError, ValueError):
        return []  # a snapshot without a readable summary: check_snapshot has already said what it could
    answers: dict[str, int] = {}
    for part in summary.projects:
        for email, count in part.strangers.items():
            answers[email] = answers.get(email, 0) + count
    notes = [InputNote(kind="not_on_roster", message=stranger_line(s, answers.get(s.email, 0)))
             for s in summary.strangers]
    kinds = {"deleted": "deleted on the server", "project_deleted": "in a project deleted on the server",
             "changed": "changed by another account"}
    for kind, label in kinds.items():
        kept = [k for k in summary.kept if k.kind == kind]
        if kept:
            who = ", ".join(sorted({k.annotator for k in kept}))
            notes.append(InputNote(kind="kept_answers", message=(
                f"{len(kept)} answer(s) {label} are compared as kept from an earlier snapshot ({who}; "
                f"{annotations.parent.name}/kept.jsonl)")))
    return notes
