"""What push and pull say about the server's trustworthiness: strangers, answers another account changed,
answers kept because the server lost them, losses accepted. One line each, printed by `rescue push`/`pull`
and by the build's push and pull steps."""

from __future__ import annotations

from pipeline.annotate.carry_forward import KEPT_FILE
from pipeline.annotate.pull import QUARANTINE_FILE, PullSummary
from pipeline.annotate.push import PushSummary
from pipeline.annotate.roster import stranger_line

SHOWN = 20  # kept answers listed one by one; the rest are counted (all are in kept.jsonl)


def push_notes(summary: PushSummary) -> list[str]:
    notes = [stranger_line(s) + "; push made no project for it" for s in summary.strangers]
    return notes + list(summary.recreated)


def pull_notes(summary: PullSummary) -> list[str]:
    answers: dict[str, int] = {}
    for part in summary.projects:
        for email, count in part.strangers.items():
            answers[email] = answers.get(email, 0) + count
    notes = [stranger_line(s, answers.pop(s.email, 0)) for s in summary.strangers]
    notes += [f"account {email} (not on the roster): {count} answer(s) quarantined" for email, count in answers.items()]
    disowned = sum(p.disowned for p in summary.projects)
    if disowned:
        notes.append(f"{disowned} annotation(s) created or changed by another account than the one credited: "
                     f"quarantined (who and when: {summary.folder}/{QUARANTINE_FILE})")
    for kept in summary.kept[:SHOWN]:
        notes.append(f"kept: {kept.line()}")
    if len(summary.kept) > SHOWN:
        notes.append(f"... and {len(summary.kept) - SHOWN} more kept answer(s): {summary.folder}/{KEPT_FILE}")
    if any(k.kind != "changed" for k in summary.kept):
        notes.append("answers gone from the server are kept until the annotator answers those rows again, or until "
                     "you accept the loss: `rescue pull --accept-deleted`")
    if summary.accepted_deleted:
        notes.append(f"{len(summary.accepted_deleted)} answer(s) gone from the server let go (--accept-deleted; "
                     f"recorded in {summary.folder}/summary.json)")
        notes += [f"let go: {k.line()}" for k in summary.accepted_deleted[:SHOWN]]
    return notes
