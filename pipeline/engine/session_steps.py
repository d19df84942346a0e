"""The per-session steps, in run order: one `Stage` declaration each (what it reads, where it writes, how it
runs). The engine (pipeline/engine/steps.py) takes every stage listed in STAGES into the step graph, so a
new per-session step (e.g. preannotate, after rows) is one declaration here. Each step function receives the
build's one context: `run(ctx, entry, workdir, final)` (the families' functions are adapted by `family`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.layout import MEDIA_RECORD
from pipeline.media.ingest import ingest_session
from pipeline.project import Project
from pipeline.records import CatalogEntry, SessionMedia
from pipeline.settings import Settings
from pipeline.step import Context, Step


Stage = Step  # a per-session step: `Step(partitioned_by="session")` (pipeline/step.py)


def session_step(**declared: Any) -> Step:
    """A step partitioned by session; its outputs are its session folders and the manifest of their records."""
    name, area = declared["name"], declared["area"]
    return Step(partitioned_by="session", outputs=(f"build/{area}/<session>/", f"build/manifests/{name}.jsonl"),
                **declared)


def family(run: Callable[[Project, CatalogEntry, Settings, Path, Path], Any]) -> Callable[..., Any]:
    """A family's session function, `run(project, entry, settings, workdir, final)`, as a step function of the
    build's context: `step(ctx, entry, workdir, final)`."""
    def step(ctx: Context, entry: CatalogEntry, workdir: Path, final: Path) -> Any:
        return run(ctx.project, entry, ctx.settings, workdir, final)

    step.__qualname__ = f"family({run.__module__}.{run.__qualname__})"
    return step


def _ingest_inputs(project: Project, entry: CatalogEntry) -> list[Path]:
    return [project.abs(p) for p in (entry.video, entry.subtitles) if p]


INGEST = session_step(
    name="ingest",
    version="1",
    area="media",
    record_name=MEDIA_RECORD,
    record_type=SessionMedia,
    after=(),
    settings_of=lambda s: s.ingest,
    input_files=_ingest_inputs,
    run=lambda ctx, entry, workdir, final: ingest_session(ctx.project, entry, ctx.settings.ingest, workdir, final),
    summary="validate + hash source, probe, cut clip, 16 kHz mono WAV, keyframes",
    settings=("ingest",), sources="the catalog entry's video and subtitles",
)

# Speech family (pipeline/speech): one build area per stage, since a stage replaces its whole session folder.
from pipeline.speech import diarize as _diarize  # noqa: E402
from pipeline.speech import transcribe as _transcribe  # noqa: E402
from pipeline.speech import transcript_stage as _rows  # noqa: E402
from pipeline.speech.records import DiarizationRecord, TranscriptionRecord, TranscriptSummary  # noqa: E402
from pipeline.speech.settings import resolve_diarization, rows_stage_settings, transcribe_stage_settings  # noqa: E402

TRANSCRIBE = session_step(
    name="transcribe", version="1", area=_transcribe.AREA, record_name=_transcribe.RECORD_NAME,
    record_type=TranscriptionRecord, after=("ingest",),
    settings_of=lambda s: transcribe_stage_settings(s.speech),
    input_files=_transcribe.transcribe_inputs, run=family(_transcribe.transcribe_session),
    summary="WhisperX words with times (or the catalog's subtitles as text and timing)",
    settings=("speech", "speech.asr"), sources="the subtitles, where they are the text source",
)
DIARIZE = session_step(
    name="diarize", version="1", area=_diarize.AREA, record_name=_diarize.RECORD_NAME,
    record_type=DiarizationRecord, after=("ingest",),
    settings_of=lambda s: resolve_diarization(s.speech.diarization),
    input_files=lambda project, entry: [], run=family(_diarize.diarize_session),
    summary="pyannote.audio speaker turns (overlaps kept), RTTM",
    settings=("speech.diarization",),
)
ROWS = session_step(
    name="rows", version="1", area=_rows.AREA, record_name=_rows.RECORD_NAME,
    record_type=TranscriptSummary, after=("transcribe", "diarize"),
    settings_of=lambda s: rows_stage_settings(s.speech),
    input_files=_rows.rows_inputs, run=family(_rows.rows_session),
    summary="words -> speakers -> participants -> rows; JSON/SRT/VTT/RTTM exports; per-row clips",
    settings=("speech", "speech.rows"), sources="raw_video/speaker_maps/<session>.toml and the subtitles",
)


# Pre-annotation (pipeline/preannotate): drafts of every label field, which push sends as predictions.
from pipeline.preannotate import stage as _preannotate  # noqa: E402
from pipeline.preannotate.drafts import SessionDrafts  # noqa: E402

PREANNOTATE = session_step(
    name="preannotate", version="1", area=_preannotate.AREA, record_name=_preannotate.RECORD_NAME,
    record_type=SessionDrafts, after=("rows",),
    settings_of=_preannotate.stage_settings,
    input_files=_preannotate.preannotate_inputs, run=family(_preannotate.preannotate_session),
    summary="drafts of every label field (backend: transcript, gold-model or openai) for push to pre-fill",
    settings=("preannotate", "annotate.schema_file"), sources="the training gold files (gold-model)",
)

STAGES: dict[str, Stage] = {stage.name: stage for stage in (INGEST, TRANSCRIBE, DIARIZE, ROWS, PREANNOTATE)}
