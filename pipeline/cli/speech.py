"""`rescue transcribe | diarize | rows | speakers | score-transcript`: argument parsing and printing only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pipeline import layout
from pipeline.cli.aliases import run_stages
from pipeline.cli.console import console
from pipeline.cli.executor import with_executor
from pipeline.cli.kept_flags import keep_step_flags
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of
from pipeline.settings import NO_OVERRIDES, SettingsOverrides

_jobs = click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Sessions processed in parallel (separate processes; each loads the models).")


def _run(ctx: click.Context, stages: list[str], session_ids: tuple[str, ...], jobs: int, executor: object,
         flags: SettingsOverrides = NO_OVERRIDES) -> None:
    """Flags override the environment's RESCUE_* values, which override the settings file; they reach every
    session's job as data (a pool worker or another host sees exactly these), and are kept in the settings file
    (kept_flags: the next build transcribes and diarizes the same way)."""
    project = project_of(ctx)
    if run_stages(project, stages, session_ids, jobs, keep_step_flags(project, flags, overrides_of(ctx)),
                  executor=executor):
        sys.exit(1)


@click.command()
@click.argument("session_ids", nargs=-1)
@click.option("--model", help="Whisper model: tiny.en (embedded), large-v3, ... or a CTranslate2 folder.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where to run (default: settings).")
@click.option("--compute-type", help="CTranslate2 compute type, e.g. int8, float16 (default: settings).")
@click.option("--language", help="Spoken language code, e.g. en.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Chunks decoded together.")
@click.option("--align-model", help="'none', 'auto' or a wav2vec2 model for whisperx alignment.")
@_jobs
@click.pass_context
@with_executor
@writer
def transcribe(ctx: click.Context, session_ids: tuple[str, ...], model: str | None, device: str | None,
               compute_type: str | None, language: str | None, batch_size: int | None, align_model: str | None,
               jobs: int, executor: object) -> None:
    """Transcribe sessions with WhisperX (or take the catalog's subtitles; see docs/speech.md)."""
    flags = SettingsOverrides.of("speech.asr", dict(model=model, device=device, compute_type=compute_type,
                                                    language=language, batch_size=batch_size, align_model=align_model))
    _run(ctx, ["ingest", "transcribe"], session_ids, jobs, executor, flags)


@click.command()
@click.argument("session_ids", nargs=-1)
@click.option("--pipeline", "pipeline_name", help="'embedded', or a pyannote pipeline (needs $HF_TOKEN).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]))
@click.option("--speaker-count", type=click.Choice(["exact", "at_least", "free"]),
              help="How the catalog's speaker count is passed to pyannote.")
@_jobs
@click.pass_context
@with_executor
@writer
def diarize(ctx: click.Context, session_ids: tuple[str, ...], pipeline_name: str | None, device: str | None,
            speaker_count: str | None, jobs: int, executor: object) -> None:
    """Find who spoke when with pyannote.audio (overlapping speech kept)."""
    flags = SettingsOverrides.of("speech.diarization",
                                 dict(pipeline=pipeline_name, device=device, speaker_count=speaker_count))
    _run(ctx, ["ingest", "diarize"], session_ids, jobs, executor, flags)


@click.command()
@click.argument("session_ids", nargs=-1)
@_jobs
@click.pass_context
@with_executor
@writer
def rows(ctx: click.Context, session_ids: tuple[str, ...], jobs: int, executor: object) -> None:
    """Cut transcripts into speaker-named rows; write JSON/SRT/VTT/RTTM exports and per-row clips."""
    _run(ctx, ["ingest", "transcribe", "diarize", "rows"], session_ids, jobs, executor)


@click.command()
@click.argument("session_ids", nargs=-1)
@click.option("--refresh", is_flag=True, help="Replace a file made for an older diarization (kept as .bak), carrying "
              "its names to the new labels whose turns overlap the old ones.")
@click.pass_context
@writer
def speakers(ctx: click.Context, session_ids: tuple[str, ...], refresh: bool) -> None:
    """Write raw_video/speaker_maps/<session>.toml: proposed names per diarization label, for you to check, with
    audio snippets (build/snippets/) and first words of each label's longest turns."""
    from pipeline.engine.context import StepContext
    from pipeline.speech.speaker_evidence import snippets_dir
    from pipeline.speech.speaker_map import write_speaker_map

    project = project_of(ctx)
    if run_stages(project, ["ingest", "transcribe", "diarize"], session_ids, 1, overrides_of(ctx)):
        sys.exit(1)
    context = StepContext.load(project, overrides_of(ctx))
    for entry in context.select(session_ids):
        written = write_speaker_map(project, entry, context.settings, refresh=refresh)
        console.print(f"{entry.session_id}: wrote {project.rel(written.path)}; listen to the snippets in "
                      f"{project.rel(snippets_dir(project, entry.session_id))}/", highlight=False)
        for proposal in written.proposals.values():
            carried = written.carried.get(proposal.label)
            yours = written.kept.get(proposal.label)  # a name the person wrote: it stands, whatever was proposed
            mark = "ok " if yours or proposal.confident or carried else "?? "
            name = yours or (carried.name if carried else proposal.name)
            why = ("yours, kept from the file" if yours else
                   f"carried from {' + '.join(carried.old_labels)} ({carried.share:.0%} overlap)" if carried
                   else proposal.evidence)
            console.print(f"  {mark}{proposal.label} -> {name or '(unknown)'}: {why}", highlight=False)
        for warning in written.warnings:
            console.print(f"  warning: {warning}", highlight=False)


@click.command("score-transcript")
@click.argument("session_ids", nargs=-1)
@click.option("--references", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder with <session_id>.stm (text + speakers), or <session_id>.srt/.vtt/.txt, and optionally "
              "<session_id>.rttm (speakers) (default: catalog subtitles).")
@click.option("--collar", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="DER: seconds forgiven around each reference boundary.")
@click.option("--skip-overlap", is_flag=True, help="DER: do not score overlapped reference speech.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON instead of a table.")
@click.pass_context
@writer
def score_transcript(ctx: click.Context, session_ids: tuple[str, ...], references: Path | None, collar: float,
                     skip_overlap: bool, as_json: bool) -> None:
    """WER (jiwer) and DER (pyannote.metrics) of built transcripts, per session and overall."""
    from rich.table import Table

    from pipeline.engine.context import StepContext
    from pipeline.speech.scoring import score_sessions
    from pipeline.store import write_text_atomic

    project = project_of(ctx)
    context = StepContext.load(project, overrides_of(ctx))
    result = score_sessions(project, context.select(session_ids), references, collar=collar,
                            skip_overlap=skip_overlap, encoding=context.settings.speech.subtitle_encoding)
    text = json.dumps(result, indent=2)
    out = layout.scores_dir(project) / "transcript_scores.json"
    write_text_atomic(out, text + "\n")
    if as_json:
        click.echo(text)
        return

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f} %"

    table = Table(title=f"transcript quality (DER collar {collar:g} s, overlap "
                        f"{'not ' if skip_overlap else ''}scored)")
    for column in ("session", "reference", "WER", "DER (turns)", "DER (rows)"):
        table.add_column(column)
    for r in result["sessions"]:
        table.add_row(r["session_id"], r["reference"], pct(r["wer"]), pct((r.get("der") or {}).get("der")),
                      pct((r.get("rows_der") or {}).get("der")))
    overall = result["overall"]
    table.add_row("overall", "", pct(overall["wer"]), pct(overall["der"]), pct(overall["rows_der"]))
    console.print(table)
    console.print(f"written to {project.rel(out)}", highlight=False)
