"""The adjudication queue's round trip through Label Studio, inside the `adjudicate` step: push the queue, let the
project's extensions add answers (the demo's stored sample adjudications), pull the adjudicators' answers."""

from __future__ import annotations

from pipeline import layout
from pipeline.agreement.inputs import adjudication_answers
from pipeline.annotate.build_session import (ServerSession, adjudication_titles, combined_digest, export_map,
                                             fetch_exports)
from pipeline.step import Context, Inputs, StepDetail, file_sha


class AdjudicationPullDetail(StepDetail):
    """Where the adjudicators' answers went, and their sha256."""

    answers: str = ""
    answers_sha256: str = ""


def adjudication_round_trip(ctx: Context, server: ServerSession, *, push: bool) -> tuple[bool, list[str]]:
    """Push the queue (`push`: it was just rewritten), run the extensions' hooks, pull new answers.

    Returns whether anything changed and notes. The answers are pulled only when the adjudication
    projects' content, or the rows and schemas the answers are parsed with, differ from the last pull
    (a pull always writes a new answers file)."""
    from pipeline.agreement.gold import QueueItem
    from pipeline.agreement.queue_labelstudio import pull_adjudications, push_queue
    from pipeline.annotate.parse import parse_inputs
    from pipeline.store import read_jsonl

    notes: list[str] = []
    changed = False
    if push:
        items = read_jsonl(layout.adjudication_dir(ctx.project) / "queue.jsonl", QueueItem)
        notes += push_queue(ctx.project, ctx.agreement, items, server.connection)
    exports = fetch_exports(server.client, adjudication_titles(ctx.schema))
    created = [hook(ctx, server, exports) for hook in ctx.hooks("adjudication-exports")] if exports else []
    if any(created):  # a hook added adjudications: fetch what the server holds now
        exports = fetch_exports(server.client, adjudication_titles(ctx.schema))
    inputs = Inputs("adjudication-pull", "2", dict(exports=combined_digest(export_map(exports)),
                                                   parsed_with=parse_inputs(ctx.project))) if exports else None
    digest = inputs.fingerprint() if inputs is not None else ""
    previous = ctx.last_run("adjudication-pull")
    answers = adjudication_answers(ctx.project)
    if exports and (previous is None or previous.fingerprint != digest or answers is None):
        answers = pull_adjudications(ctx.project, ctx.agreement, server.connection)
        notes.append(f"adjudicators' answers -> {ctx.project.rel_or_abs(answers)}")
        changed = True
    if exports:
        ctx.done("adjudication-pull", digest, AdjudicationPullDetail(
            answers=ctx.project.rel_or_abs(answers) if answers else "",
            answers_sha256=file_sha(answers) if answers else ""))
    return changed, notes


