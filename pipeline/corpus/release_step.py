"""Freeze the gold sessions into build/release/<version>/ as a corpus step of `rescue build`.

The release is rebuilt when the gold file, the task settings, the schema, the version or the models
change, and when the release on disk is not the one this step last made (its MANIFEST.json differs,
e.g. after `rescue freeze --force` or an edit, or `rescue verify` finds it damaged). A new annotation
snapshot that yields the same gold does not touch it (its manifest keeps the snapshot that gold first
came from, which gives the same gold). A release whose content changes is never overwritten: the
previous folder moves to build/release/superseded/<version>-<UTC time>/. The new release is rendered
into a staging folder first, so a failure leaves the old one in place. Gold that comes back byte-identical
(rows re-cut and cut back) keeps the snapshot names of the release frozen from it, so the same release is
kept, not superseded. A release is never replaced by one holding fewer sessions or instances unless
`allow_shrink` (`rescue freeze --allow-shrink`): the step stops saying what would be lost
(pipeline/tasks/shrink.py). While the gold file holds no session, the step waits and says what the
existing release, if any, holds.

With `release_media` on (the default), the gold rows' clips are packed under the release's media/ folder;
flipping the setting, or a clip rewritten in the build (its size or modification time changes), makes the
step run again. A gold session without clips stops the step with an error naming the fix.

The card and croissant.json summarise the build's agreement report (build/agreement/report.json) and carry
the citation of `[tool.rescue.build]`: a new report, citation or public flag freezes the release again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipeline import layout
from pipeline.agreement.inputs import adjudication_answers, latest_annotations
from pipeline.corpus.agreement_card import build_agreement
from pipeline.annotate.pull_step import PullDetail
from pipeline.step import Context, Inputs, State, Step, StepDetail, file_sha, judge
from pipeline.store import read_jsonl
from pipeline.tasks.freeze_gold import GoldInput, ReleaseDefaults
from pipeline.tasks.release import ModelVersion
from pipeline.tasks.shrink import BUILD_SHRINK_FIX, ReleaseWouldShrink, release_contents


class FreezeDetail(StepDetail):
    """What freeze keeps: the release it made, of which sessions, and its MANIFEST.json's sha256 (the release on
    disk is the one it made only while that matches)."""

    release: str = ""
    sessions: tuple[str, ...] = ()
    manifest_sha256: str = ""


def _packages(packages: dict[str, str], *names: str) -> str:
    return ", ".join(f"{name} {packages[name]}" for name in names if name in packages)


def model_versions(ctx: Context, session_ids: set[str]) -> tuple[ModelVersion, ...]:
    """The models behind the gold sessions' rows (from the stage manifests) and the consensus text model."""
    from pipeline.speech.records import DiarizationRecord, TranscriptionRecord

    found: set[tuple[str, str, str]] = set()
    transcribed = layout.manifest_file(ctx.project, "transcribe")
    diarized = layout.manifest_file(ctx.project, "diarize")
    if transcribed.is_file():
        for asr in read_jsonl(transcribed, TranscriptionRecord):
            if asr.session_id in session_ids:
                if asr.source == "subtitles":
                    found.add(("transcript", "subtitles from the catalog", ""))
                else:
                    found.add(("asr", f"whisper {asr.model} ({asr.model_origin})",
                               _packages(asr.packages, "whisperx", "faster-whisper", "ctranslate2")))
    if diarized.is_file():
        for dia in read_jsonl(diarized, DiarizationRecord):
            if dia.session_id in session_ids:
                version = _packages(dia.packages, "pyannote.audio", "resemblyzer")
                found |= {("diarization", dia.pipeline, version),
                          ("speaker segmentation", dia.segmentation_model, version),
                          ("speaker embedding", dia.embedding_model, version)}
    if ctx.agreement.text_similarity:
        from pipeline.text_similarity import model_info

        info = model_info()
        found.add(("text similarity (consensus)", info["name"], f"{info['package']} {info['version']}"))
    return tuple(ModelVersion(role=r, name=n, version=v) for r, n, v in sorted(found))


def release_is_current(out: Path, done: FreezeDetail | None) -> bool:
    """The release folder is the one the last successful freeze made, intact."""
    from pipeline.tasks.verify import verify_release

    recorded = done.manifest_sha256 if done is not None else ""
    return bool(recorded) and file_sha(out / "MANIFEST.json") == recorded and verify_release(out).ok


def _snapshots(ctx: Context) -> list[str]:
    """The annotation snapshot (and adjudication answers) the gold now comes from, for the manifest."""
    pull = PullDetail.of(ctx.last_run("pull"))
    snapshots = [pull.snapshot if pull is not None and pull.snapshot else latest_annotations(ctx.project).parent.name]
    answers = adjudication_answers(ctx.project)
    if answers is not None:
        snapshots.append(f"adjudication answers {answers.parent.name}")
    return snapshots


def _same_gold_snapshots(out: Path, gold_sha: str) -> list[str]:
    """The snapshots the existing release names when it was frozen from this very gold file (same sha256):
    gold that came back byte-identical (rows re-cut and cut back, a new snapshot with the same answers)
    gives the same release, which is then kept as it is instead of being re-frozen under a new snapshot name."""
    manifest = _manifest(out)
    provenance = manifest.get("provenance") if manifest else None
    if not isinstance(provenance, dict) or provenance.get("gold_sha256") != gold_sha:
        return []
    found = provenance.get("annotation_snapshots")
    return [str(s) for s in found] if isinstance(found, list) else []


def _manifest(out: Path) -> dict[str, object] | None:
    try:
        data = json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _kept_release(ctx: Context, out: Path) -> str:
    """Why nothing is frozen now, and what the existing release (if any) holds: it is left as it is."""
    from pipeline.tasks.verify import verify_release

    contents = release_contents(out) if out.is_dir() else None
    if contents is None:
        return f"release {out.name} not frozen"
    intact = "verifies" if verify_release(out).ok else f"does NOT verify (`rescue verify {ctx.project.rel(out)}`)"
    return (f"release {out.name} not refreshed, kept as it is -> {ctx.project.rel(out)}/ ({intact}): "
            f"{contents.describe()}")


@dataclass(frozen=True)
class FreezePlan:
    """What the freeze step would freeze now, and the inputs that decide it (its fingerprint)."""

    given: GoldInput
    release: ReleaseDefaults
    out: Path
    models: tuple[ModelVersion, ...]
    clips: object  # the gold rows' clips (None: release_media is off)
    agreement: object
    inputs: Inputs


def freeze_plan(ctx: Context) -> FreezePlan | None:
    """The release to freeze from the gold file, or None while the gold file holds no session."""
    from pipeline.tasks.clips import clips_signature
    from pipeline.tasks.freeze_gold import gold_clips, read_gold_input
    from pipeline.tasks.gold_input import NoGoldYet

    gold = layout.gold_file(ctx.project)
    release = ReleaseDefaults.of(ctx.settings)
    out = layout.release_dir(ctx.project, release.version)
    given = None
    try:
        given = read_gold_input(ctx.project, gold) if gold.is_file() else None
    except NoGoldYet:
        pass
    if given is None or not given.sessions:
        return None
    models = model_versions(ctx, {s.sample_id for s in given.sessions})
    clips = gold_clips(ctx.project, given) if ctx.settings.build.release_media else None
    # media keys only when on, so the fingerprint of a text-only release is what it was before media existed
    media = {"media": True, "clips": clips_signature(ctx.project, clips)} if clips is not None else {}
    agreement = build_agreement(ctx.project)
    # version 2: the card's sections for strangers and croissant.json, whose inputs are the last three keys
    inputs = Inputs("freeze", FREEZE.version, dict(
        gold=file_sha(gold), task_settings=file_sha(given.settings_file), schema=file_sha(given.schema_file),
        version=release.version, models=[m.model_dump() for m in models], license=release.license, **media,
        citation=release.citation, public=release.public,
        agreement=agreement.model_dump(mode="json") if agreement else None), ("build",))
    return FreezePlan(given, release, out, models, clips, agreement, inputs)


def freeze_freshness(ctx: Context) -> tuple[State, str]:
    """The freeze step's state without running it: the one rule, with the release verified as its output."""
    plan = freeze_plan(ctx)
    if plan is None:
        return "blocked", "no session has complete gold yet"
    run = ctx.last_run("freeze")
    state, reason = judge(run, plan.inputs)
    if state == "done" and not (plan.out.is_dir() and release_is_current(plan.out, FreezeDetail.of(run))):
        return "stale", f"release {plan.out.name} is not the one the last freeze made (missing, edited or damaged)"
    return state, reason


def freeze_step(ctx: Context) -> Path | None:
    """Returns the release folder, or None while no session has complete gold. Freezes through the same
    `freeze_gold` as `rescue freeze --gold FILE`, with the same defaults (pipeline/tasks/freeze_gold.py)."""
    from pipeline.tasks.coverage import describe_label_sources
    from pipeline.tasks.freeze_gold import freeze_gold

    plan = freeze_plan(ctx)
    if plan is None:
        out = layout.release_dir(ctx.project, ReleaseDefaults.of(ctx.settings).version)
        ctx.record("freeze", "waiting", f"no session has complete gold yet: {_kept_release(ctx, out)}")
        return None
    gold, given, release, out, clips = layout.gold_file(ctx.project), plan.given, plan.release, plan.out, plan.clips
    version, models, agreement = release.version, plan.models, plan.agreement
    sessions, warnings = given.sessions, given.warnings
    done = ctx.last_done_with(plan.inputs)
    if done is not None and out.is_dir() and release_is_current(out, FreezeDetail.of(done)):
        ctx.record("freeze", "up to date", f"release {version}: {len(sessions)} session(s) -> {ctx.project.rel(out)}/")
        ctx.build.release = out
        return out
    snapshots = _same_gold_snapshots(out, file_sha(gold)) or _snapshots(ctx)
    try:
        summary = freeze_gold(ctx.project, given, release, snapshots=snapshots, models=models, out=out,
                              overwrite=True, media=clips if clips is not None else False, agreement=agreement,
                              allow_shrink=ctx.settings.build.allow_shrink)
    except ReleaseWouldShrink as exc:  # the build's own fix: find what the gold lost, or allow it for one run
        raise ReleaseWouldShrink(exc.shrink, BUILD_SHRINK_FIX) from exc
    notes = [str(w) for w in warnings[:10]]
    notes.append(describe_label_sources(summary.label_sources))
    notes.extend(summary.coverage_warnings[:10])
    if len(summary.coverage_warnings) > 10:
        notes.append(f"... and {len(summary.coverage_warnings) - 10} more sample(s) and task(s) without an "
                     f"instance (MANIFEST.json coverage)")
    if summary.shrunk:
        notes.append(f"allow_shrink: {summary.shrunk.describe()}")
    if summary.superseded:
        notes.append(f"the previous {version} was kept as {ctx.project.rel(Path(summary.superseded))}/")
    ctx.done("freeze", plan.inputs, FreezeDetail(release=ctx.project.rel(out),
                                                 sessions=tuple(s.sample_id for s in sessions),
                                                 manifest_sha256=file_sha(out / "MANIFEST.json")))
    counts = ", ".join(f"{task.upper()} {c['all']}" for task, c in summary.instances.items())
    if clips is not None:
        counts += f"; {summary.media_note}"
    status = "up to date" if summary.unchanged else "ran"
    ctx.record("freeze", status, f"release {version}: {len(sessions)} session(s), instances {counts} -> "
                                 f"{ctx.project.rel(out)}/", notes)
    ctx.build.release = out
    return out


FREEZE = Step("freeze", freeze_step, after=("gold",), settings=("build",), version="2",
              sources="annotation_schemas/tasks-v1.yaml; with release_media the rows' clips "
                      "(build/transcripts/<session>/clips/)",
              outputs=("build/release/<version>/",),
              summary="six task files, media/ clips, manifest, card; a changed release supersedes the old one, never "
                      "overwrites it", check=freeze_freshness)
