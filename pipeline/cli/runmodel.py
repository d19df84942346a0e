"""`rescue run-model`: run an OpenAI-compatible chat model on one task of a release in one input mode. Parsing
and printing only; flags override `[tool.rescue.run_model]` for this run."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.options import overrides_of, project_of
from pipeline.cli.tasks import TASK_CHOICE, _release_dir
from pipeline.errors import RescueError
from pipeline.settings import SettingsOverrides

MODES_HELP = """Input modes (spec section 5):
  dialogue (alias text)  the transcript only: speaker, target, dialogue, background dialogue
  audio                  + the annotated tone of voice
  visual                 + the annotated posture, facial expressions, self-directed and interaction behaviour
  audiovisual            + both
  turn_video_audio       the transcript plus the rows' own clips (video with sound) in place of the annotated
  (frames,               cues; ER, VP: the context clips then the row's clip; SSP: the context clips, an
  speaker_frames_audio)  instance without one is left out; needs a release frozen with media
ITP, RPP and STP take the four text modes only."""


def _header(value: str) -> tuple[str, str]:
    name, sep, text = value.partition(":")
    if not sep or not name.strip():
        raise click.BadParameter(f"{value!r}: use NAME:VALUE, e.g. X-DashScope-OssResourceResolve:enable")
    return name.strip(), text.strip()


@click.command("run-model", help=f"""Run a chat model on one task of a release in one input mode.

Sends the task's instances to any OpenAI-compatible chat endpoint (batched per sample, never two instances
where one's prompt shows the other's answer unless --batching paper; every request audited before it is sent;
ids echoed, JSON answers, temperature 0; answers cached by request hash under build/llm-cache/) and writes
build/runs/<run_id>/: predictions.jsonl (scored by `rescue evaluate --run`), unanswered.jsonl (each
instance without a usable answer and why) and run.json (model, endpoint host, mode, prompt version, release,
batching and request audit, counts, tokens). The key is read from the environment variable named by
--api-key-env and never written. See docs/run-model.md.

\b
{MODES_HELP}""")
@click.option("--task", required=True, type=TASK_CHOICE, help="The task to run.")
@click.option("--mode", required=True, help="Input mode: dialogue, audio, visual, audiovisual, turn_video_audio.")
@click.option("--release", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Release folder (default: the only one under build/release/).")
@click.option("--model", default=None, help="Model name the endpoint serves.")
@click.option("--base-url", default=None, help="The endpoint's OpenAI-compatible base URL (…/v1).")
@click.option("--api-key-env", default=None, help="Environment variable holding the key ('' for none).")
@click.option("--batch-size", type=click.IntRange(1, 50), default=None, help="Instances of one sample per request.")
@click.option("--batching", type=click.Choice(["leak-free", "paper"]), default=None,
              help="leak-free (default): no request holds two instances where one's prompt shows the other's "
                   "answer; paper: the paper's per-sample batches, answers visible, the run marked so.")
@click.option("--concurrency", type=click.IntRange(1, 64), default=None, help="Requests in flight at once.")
@click.option("--max-completion-tokens", type=click.IntRange(min=0), default=None, help="Per answer (0: unset).")
@click.option("--max-total-tokens", type=click.IntRange(min=1), default=None,
              help="Budget: tokens this run may spend (cached answers are free); then it stops cleanly.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, help="Budget in money; needs a price.")
@click.option("--price-per-1k-tokens", type=click.FloatRange(min=0), default=None, help="To report and cap cost.")
@click.option("--media-base-url", default=None,
              help="turn_video_audio: send clips as <URL>/<clip path> (the release folder served there) "
                   "instead of data URLs.")
@click.option("--header", "headers", multiple=True, help="Extra HTTP header NAME:VALUE (repeat).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N instances (a trial).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default build/runs/<run_id>).")
@click.pass_context
def run_model(ctx: click.Context, task: str, mode: str, release: Path | None, model: str | None,
              base_url: str | None, api_key_env: str | None, batch_size: int | None, batching: str | None,
              concurrency: int | None,
              max_completion_tokens: int | None, max_total_tokens: int | None, max_cost: float | None,
              price_per_1k_tokens: float | None, media_base_url: str | None, headers: tuple[str, ...],
              limit: int | None, out: Path | None) -> None:
    from pipeline.runmodel.run import run_model as run
    from pipeline.schema import load_schema
    from pipeline.settings import load_settings

    project = project_of(ctx)
    folder = _release_dir(project, release)
    flags = SettingsOverrides.of("run_model", {
        "model": model, "base_url": base_url, "api_key_env": api_key_env, "batch_size": batch_size,
        "batching": batching, "concurrency": concurrency, "max_completion_tokens": max_completion_tokens,
        "max_total_tokens": max_total_tokens, "max_cost": max_cost, "price_per_1k_tokens": price_per_1k_tokens,
        "media_base_url": media_base_url, "extra_headers": dict(map(_header, headers)) or None})
    settings = load_settings(project.root, overrides_of(ctx) | flags)
    if not settings.run_model.model:
        raise RescueError("no model is set (--model, or model in [tool.rescue.run_model])",
                          "pass --model NAME (and --base-url for an endpoint other than OpenAI's)")
    schema = load_schema(project.schemas / settings.annotate.schema_file)
    with console.status(f"running {settings.run_model.model} on {task.upper()} ({mode})"):
        result = run(project, folder, task, mode, settings.run_model, schema, limit=limit, out=out)
    counts = result.record["counts"]
    reasons = ", ".join(f"{n} {kind}" for kind, n in counts["unanswered_by_reason"].items())
    console.print(f"{counts['answered']} answered, {counts['unanswered']} unanswered"
                  + (f" ({reasons})" if reasons else "")
                  + (f", {counts['left_out_of_mode']} not in this mode" if counts["left_out_of_mode"] else ""),
                  highlight=False)
    console.print(result.stats.describe(), highlight=False)
    audit = result.record["request_audit"]
    console.print(f"audited {audit['requests_audited']} request(s), {audit['instances_audited']} instance(s): "
                  f"{audit['requests_showing_answers']} showed an answer ({audit['requests_split']} split, "
                  f"{audit['instances_refused']} instance(s) refused); batching {audit['batching']}", highlight=False)
    if "batching_warning" in result.record:
        err_console.print(line(styled("warning", "yellow"), f" {result.record['batching_warning']}"))
    # `evaluate --run` (not --predictions) writes the run's scores.json, which the leaderboard reads; the path is
    # one the user can type where they are (relative only when they stand in the project root)
    typed = project.rel_or_abs(result.folder) if Path.cwd().resolve() == project.root else str(result.folder)
    root = "" if Path.cwd().resolve() == project.root else f"--root {project.root} "
    console.print(f"run: {project.rel_or_abs(result.folder)}/  (score it for the leaderboard: rescue {root}evaluate "
                  f"--run {typed})", highlight=False)
    console.print(f"per instance (prompt, raw answer, parsed, score): rescue {root}show-run {typed}", highlight=False)
