"""Speech benchmark: per-stage real-time factor on this CPU for the sample sessions, the share of wall time
spent outside model inference (our overhead), and our transcription against faster-whisper run directly on the
same audio with the same model in the same process.

    .venv/bin/python benchmarks/bench_speech.py [--repeats 2] [--no-docs]

Writes benchmarks/results/bench_speech.json and the table between the markers in docs/speech.md.
Models are loaded before timing (load times are reported on their own). Each timing is the fastest of
`--repeats` runs, alternating ours and the direct run, because the machine's cores are shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["PYANNOTE_METRICS_ENABLED"] = "false"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

from pipeline.engine.context import StepContext  # noqa: E402
from pipeline.engine.runner import fingerprint, run_session, run_stage  # noqa: E402
from pipeline.engine.session_steps import STAGES  # noqa: E402
from pipeline.project import Project  # noqa: E402
from pipeline.sample_sessions import install_samples  # noqa: E402
from pipeline.speech import diarize, transcribe  # noqa: E402
from pipeline.speech.assign import assign_words  # noqa: E402
from pipeline.speech.settings import resolve_asr, resolve_diarization  # noqa: E402
from pipeline.speech.transcript_stage import cut_clips, make_rows  # noqa: E402

DOCS = ROOT / "docs" / "speech.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_speech.json"
START, END = "<!-- bench_speech:start -->", "<!-- bench_speech:end -->"


def fastest(function, repeats: int):
    best, value = float("inf"), None
    for _ in range(repeats):
        began = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - began)
    return best, value


def direct_faster_whisper(model_dir: str, settings):
    """faster-whisper on its own: batched pipeline, Silero VAD, word timestamps, same model and options."""
    import faster_whisper

    model = faster_whisper.WhisperModel(model_dir, device=settings.device, compute_type=settings.compute_type,
                                        cpu_threads=settings.threads or os.cpu_count() or 1)
    pipeline = faster_whisper.BatchedInferencePipeline(model)

    def run(audio_path: Path) -> int:
        samples = transcribe.wav.read_span(audio_path, 0.0, float("inf"))
        segments, _ = pipeline.transcribe(samples, language=settings.language, batch_size=settings.batch_size,
                                          beam_size=settings.beam_size, word_timestamps=True,
                                          chunk_length=int(settings.chunk_seconds))
        return sum(len(s.words or ()) for s in segments)

    return run


def bench(repeats: int) -> dict:
    from pipeline.speech.whisperx_adapter import resolve_model

    root = Path(tempfile.mkdtemp(prefix="bench_speech_")).resolve()
    (root / "raw_video").mkdir()
    project = Project(root)
    install_samples(project)
    context = StepContext.load(project)
    run_stage(context, STAGES["ingest"], list(context.catalog))
    speech = context.settings.speech
    asr, dia = resolve_asr(speech.asr), resolve_diarization(speech.diarization)
    began = time.perf_counter()
    loaded_asr = transcribe.loaded_asr(asr)
    asr_load = time.perf_counter() - began
    began = time.perf_counter()
    loaded_dia = diarize.loaded_pipeline(dia)
    dia_load = time.perf_counter() - began
    direct = None
    sessions = []
    for entry in context.catalog:
        media = transcribe.read_media(project, entry.session_id)
        audio = project.abs(media.audio)
        stages: dict[str, dict] = {}
        for name, loaded in (("transcribe", loaded_asr), ("diarize", loaded_dia)):
            wanted = fingerprint(context, STAGES[name], entry) or ""
            runs = []
            for _ in range(repeats):  # keep each run's wall and inference together; report the fastest run
                before = loaded.inference_seconds
                wall, run = fastest(lambda n=name, w=wanted: run_session(root, n, entry, w), 1)
                assert run.status == "done", run.error
                runs.append((wall, loaded.inference_seconds - before))
            wall, inference = min(runs)
            stages[name] = {"wall_s": wall, "inference_s": inference}
        if direct is None:
            direct = direct_faster_whisper(resolve_model(asr.model)[0], asr)
        ours_wall = direct_wall = float("inf")
        for _ in range(repeats):  # alternate, so both see the same background load
            ours_time, ours = fastest(lambda: transcribe.transcribe_audio(audio, asr), 1)
            direct_time, direct_words = fastest(lambda: direct(audio), 1)
            ours_wall, direct_wall = min(ours_wall, ours_time), min(direct_wall, direct_time)
        segments = transcribe.read_segments(project, entry.session_id)
        turns = diarize.read_turns(project, entry.session_id)
        words = [w for s in segments for w in s.words]
        stages["assign"] = {"wall_s": fastest(lambda: assign_words(words, turns), repeats)[0], "inference_s": 0.0}
        rows_wall, (rows, _) = fastest(lambda: make_rows(project, entry, context.settings), repeats)
        stages["rows"] = {"wall_s": rows_wall, "inference_s": 0.0}
        with tempfile.TemporaryDirectory() as scratch:
            final = project.session_dir("transcripts", entry.session_id)  # only names the clips' paths
            clips_wall, _ = fastest(lambda: cut_clips(project, entry, rows, Path(scratch), final), 1)
        stages["clips"] = {"wall_s": clips_wall, "inference_s": 0.0, "note": "ffmpeg re-encode, one process per 16 rows"}
        for values in stages.values():
            values["rtf"] = values["wall_s"] / media.duration
        sessions.append({
            "session_id": entry.session_id, "audio_s": round(media.duration, 3), "rows": len(rows),
            "stages": stages,
            "transcription_vs_faster_whisper": {
                "ours_s": ours_wall, "faster_whisper_s": direct_wall, "ratio": ours_wall / direct_wall,
                "ours_words": sum(len(s.words) for s in ours.segments), "faster_whisper_words": direct_words},
        })
    model_stages = ("transcribe", "diarize")
    wall = sum(s["stages"][n]["wall_s"] for s in sessions for n in model_stages)
    inference = sum(s["stages"][n]["inference_s"] for s in sessions for n in model_stages)
    return {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
                   f"Python {platform.python_version()}",
        "models": {"asr": f"{asr.model} {asr.device}/{asr.compute_type}, batch {asr.batch_size}, beam "
                          f"{asr.beam_size}, VAD {asr.vad}", "diarization": dia.pipeline},
        "model_load_s": {"transcribe": asr_load, "diarize": dia_load},
        "repeats": repeats,
        "sessions": sessions,
        "overhead_share_of_model_stages": (wall - inference) / wall if wall else None,
        "transcription_ratio_overall": sum(s["transcription_vs_faster_whisper"]["ours_s"] for s in sessions)
        / sum(s["transcription_vs_faster_whisper"]["faster_whisper_s"] for s in sessions),
    }


def markdown(result: dict) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}; {result['models']['asr']}; diarization "
             f"{result['models']['diarization']}. Fastest of {result['repeats']} runs; model loading (once per "
             f"process) not included: transcribe {result['model_load_s']['transcribe']:.1f} s, diarize "
             f"{result['model_load_s']['diarize']:.1f} s.", "",
             "| session | audio | stage | wall | real-time factor | inside models | outside models |",
             "|---|---|---|---|---|---|---|"]
    for s in result["sessions"]:
        for name, v in s["stages"].items():
            outside = v["wall_s"] - v["inference_s"]
            lines.append(f"| {s['session_id']} | {s['audio_s']:.1f} s | {name} | {v['wall_s']:.2f} s | "
                         f"{v['rtf']:.3f} | {v['inference_s']:.2f} s | {outside:.2f} s |")
    lines += ["", f"Share of the model stages' wall time spent outside model inference (our overhead): "
              f"**{100 * result['overhead_share_of_model_stages']:.1f} %** (goal < 5 %).", "",
              "| session | ours (whisperx + word times) | faster-whisper directly | ratio | words (ours / direct) |",
              "|---|---|---|---|---|"]
    for s in result["sessions"]:
        c = s["transcription_vs_faster_whisper"]
        lines.append(f"| {s['session_id']} | {c['ours_s']:.2f} s | {c['faster_whisper_s']:.2f} s | {c['ratio']:.2f} |"
                     f" {c['ours_words']} / {c['faster_whisper_words']} |")
    lines += ["", f"Overall transcription ratio: **{result['transcription_ratio_overall']:.2f}** (goal <= 1.05)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/speech.md")
    args = parser.parse_args()
    result = bench(args.repeats)
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
