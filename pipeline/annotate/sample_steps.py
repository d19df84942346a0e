"""The demo's steps: re-create the stored sample annotations (`sample-annotations`, after push) and adjudications
(`sample-adjudications`, inside adjudicate's round trip) where the server holds none for the sample sessions.

They are no product steps: `SAMPLE` declares them as an `Extension` that a project gets when its catalog lists
a stored-sample session (pipeline/engine/steps.py `registry`), with the two hooks product steps call for it:
push gives the sample's annotators their projects, adjudicate's round trip applies the stored adjudications."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache, partial

from pipeline.annotate.apply_stored import ApplySummary, apply_stored_export
from pipeline.annotate.build_session import ProjectExport, ServerSession
from pipeline.annotate.pull_step import annotation_exports, annotation_exports_of
from pipeline.annotate.server_step import LS, NOTHING_CHANGED, by_server
from pipeline.annotate.stored import Kind, StoredExport, accounts, load_stored
from pipeline.records import CatalogEntry
from pipeline.step import LABEL_STUDIO, Check, Context, Extension, State, Step, StepDetail
from pipeline.store import StepRun


class ApplyDetail(StepDetail):
    """What applying a stored sample export keeps: what it applied, or (interrupted) the sessions left to do."""

    applied: ApplySummary | None = None
    unfinished: tuple[str, ...] = ()


def _apply_notes(summary: ApplySummary, record: str) -> list[str]:
    notes = []
    if summary.reanchored:  # one line: the per-row pairs are kept in the step's record
        lowest = min(p.iou for p in summary.reanchored)
        notes.append(f"{len(summary.reanchored)} row(s) re-anchored by time overlap (lowest IoU {lowest:.2f}); "
                     f"each pair is in {record}")
    notes += [f"NOT applied: {u.annotations} stored {summary.kind}(s) of row {u.stored_row}: {u.reason}"
              for u in summary.unplaced]
    notes += [f"{session}: {why}" for session, why in sorted(summary.skipped.items())]
    return notes


def _in_catalog(stored: Mapping[str, StoredExport], ctx: Context) -> bool:
    """Some session of the stored sample export is a catalog session with rows (ctx.rows lists the catalog)."""
    return any(export.sessions() & set(ctx.rows) for export in stored.values())


def apply_step(ctx: Context, server: ServerSession, exports: Sequence[ProjectExport], kind: Kind) -> int:
    """Re-create the stored sample export of `kind` where the server holds none; returns annotations created."""
    step = "sample-annotations" if kind == "annotation" else "sample-adjudications"
    if kind == "adjudication" and step not in ctx.build.planned:  # adjudicate's hook, in a build that left it out
        return 0
    if not ctx.settings.build.sample_annotations:
        ctx.record(step, "skipped", "sample_annotations = false in [tool.rescue.build]")
        return 0
    stored = load_stored(kind)
    if not _in_catalog(stored, ctx):
        ctx.record(step, "not needed", "no session of the stored sample export is in the catalog")
        return 0
    previous = ctx.last_run(step)
    interrupted = ApplyDetail.of(previous) if previous and previous.status == "failed" else None
    resume = set(interrupted.unfinished) if interrupted else set()

    def started(sessions: set[str]) -> None:  # an interrupted apply is resumed (without duplicates) next time
        unfinished = ApplyDetail(unfinished=tuple(sorted(sessions | resume)))
        ctx.write_run(StepRun(step=step, status="failed", error="interrupted while applying",
                              detail=unfinished.model_dump(mode="json", include={"unfinished"})))

    summary = apply_stored_export(ctx.project, server, exports, stored, set(ctx.rows), resume, kind=kind,
                                  on_start=started)
    ctx.done(step, "", ApplyDetail(applied=summary))
    notes = _apply_notes(summary, ctx.project.rel_or_abs(ctx.state_file(step)))
    if summary.created or summary.sessions:
        ctx.record(step, "ran", f"{summary.created} stored {kind}(s) re-created on {len(summary.sessions)} sample "
                                f"session(s) ({len(summary.reanchored)} re-anchored, {len(summary.unplaced)} rows "
                                f"not placed)", notes)
    else:
        ctx.record(step, "up to date", "nothing to apply", notes)
    return summary.created


def sample_annotations_step(ctx: Context) -> None:
    """Re-create the stored sample annotations where the server holds none (the demo's data)."""
    if ctx.build.server is None:
        ctx.record("sample-annotations", "up to date", NOTHING_CHANGED)
        return
    if apply_step(ctx, ctx.build.server, annotation_exports_of(ctx), "annotation"):
        ctx.build.exports = annotation_exports(ctx.build.server, ctx)


def stored_sample(step: str, kind: Kind) -> Check:
    """The stored sample annotations (or adjudications), as `apply_step` decides what it has to do."""
    server = by_server(step)

    def check(ctx: Context) -> tuple[State, str]:
        if not ctx.settings.build.sample_annotations:
            return "done", "skipped: sample_annotations = false in [tool.rescue.build]"
        if not _in_catalog(load_stored(kind), ctx):
            return "done", "not needed: no session of the stored sample export is in the catalog"
        return server(ctx)

    return check


def sample_adjudications_step(ctx: Context) -> None:
    """Nothing of its own: the stored sample adjudications must land between adjudicate's push of the queue
    and its pull of the answers, so adjudicate's round trip applies them (and records this step's outcome)
    when this step is planned."""


SAMPLE_ANNOTATIONS = Step(
    "sample-annotations", sample_annotations_step, after=("push",), settings=("build",),
    sources="pipeline/sample/annotations/", outputs=("Label Studio annotations",),
    summary="re-create the stored sample annotations where the server holds none (re-anchored by time overlap)",
    needs=LS, check=stored_sample("sample-annotations", "annotation"))
SAMPLE_ADJUDICATIONS = Step(
    "sample-adjudications", sample_adjudications_step, after=("adjudicate",), settings=("build",),
    sources="pipeline/sample/annotations/", outputs=("Label Studio adjudications",),
    summary="re-create the stored sample adjudications (inside adjudicate's round trip)", needs=(LABEL_STUDIO,),
    check=stored_sample("sample-adjudications", "adjudication"))


@lru_cache(maxsize=1)
def _stored_sessions() -> frozenset[str]:
    return frozenset(session for kind in ("annotation", "adjudication")
                     for export in load_stored(kind).values() for session in export.sessions())  # type: ignore[arg-type]


def lists_stored_sample(catalog: tuple[CatalogEntry, ...]) -> bool:
    """The project's catalog lists a session of the stored sample export (the demo's; a real project's never
    does). The catalog, not a setting `rescue sample` writes: test projects copy the sample media without it."""
    return any(entry.session_id in _stored_sessions() for entry in catalog)


def sample_roster(ctx: Context, roster: set[str]) -> set[str]:
    """push's hook: while the stored annotations are in play, the sample's annotators get projects too (the
    stored adjudicators never do: they answer in the adjudication projects)."""
    if not ctx.settings.build.sample_annotations:
        return roster
    stored = load_stored("annotation")
    if _in_catalog(stored, ctx):
        return (roster | accounts(stored)) - accounts(load_stored("adjudication"))
    return roster


SAMPLE = Extension(
    "stored sample annotations", lists_stored_sample, (SAMPLE_ANNOTATIONS, SAMPLE_ADJUDICATIONS),
    before={"sample-annotations": ("pull",), "sample-adjudications": ("agree", "gold")},
    # adjudicate's hook, between its push of the queue and its pull of the answers: the stored adjudications
    hooks={"push-roster": sample_roster, "adjudication-exports": partial(apply_step, kind="adjudication")})
