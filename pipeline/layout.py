"""Every path under build/ that more than one module reads or writes: ask here, never spell it again.

The step declarations (pipeline/engine/steps.py) name their outputs with these functions, so the step
graph, the state files and the readers agree on one spelling.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.project import Project

MEDIA_AREA = "media"
MEDIA_RECORD = "media.json"  # ingest's record of a session: build/media/<session_id>/media.json
STATE_AREA = "state"
CORPUS_STATE = "corpus"  # build/state/corpus/<step>.json: the state of the corpus steps
TRANSCRIPTS_AREA = "transcripts"  # the rows step's output: build/transcripts/<session_id>/
GOLD_AREA = "gold"
GOLD_FILE = "benchmark.jsonl"


def session_area(project: Project, area: str, session_id: str) -> Path:
    """build/<area>/<session_id>/: one per-session step's whole output (replaced atomically)."""
    return project.session_dir(area, session_id)


def media_record(project: Project, session_id: str) -> Path:
    return session_area(project, MEDIA_AREA, session_id) / MEDIA_RECORD


def state_dir(project: Project, step: str) -> Path:
    """build/state/<step>/: the per-session state files of a session step."""
    return project.build / STATE_AREA / step


def state_file(project: Project, step: str, session_id: str = "") -> Path:
    """The state of a step: build/state/<step>/<session_id>.json per session, build/state/corpus/<step>.json
    for a corpus step (`session_id` "")."""
    if session_id:
        return project.session_dir(f"{STATE_AREA}/{step}", session_id + ".json")
    return project.build / STATE_AREA / CORPUS_STATE / f"{step}.json"


def manifest_file(project: Project, step: str) -> Path:
    """build/manifests/<step>.jsonl: the records of every session whose step is done."""
    return project.build / "manifests" / f"{step}.jsonl"


def gold_dir(project: Project) -> Path:
    return project.build / GOLD_AREA


def gold_file(project: Project) -> Path:
    """build/gold/benchmark.jsonl: the gold sessions that the freeze step releases."""
    return gold_dir(project) / GOLD_FILE


def release_dir(project: Project, version: str) -> Path:
    return releases_dir(project) / version


def agreement_dir(project: Project) -> Path:
    """build/agreement/: the agreement report of the newest snapshot."""
    return project.build / "agreement"


def adjudication_dir(project: Project) -> Path:
    """build/adjudication/: queue.jsonl, summary.json and answers/<UTC time>/ pulled from adjudication projects."""
    return project.build / "adjudication"


def adjudication_answers_dir(project: Project) -> Path:
    return adjudication_dir(project) / "answers"


def annotations_dir(project: Project) -> Path:
    """build/annotations/: the pulled snapshots, one folder each, never overwritten."""
    return project.build / "annotations"


def labelstudio_dir(project: Project) -> Path:
    """build/labelstudio/: the embedded server's own files (database, secrets, logs, roster): never published."""
    return project.build / "labelstudio"


def cache_dir(project: Project, family: str) -> Path:
    """build/cache/<family>/: what a family may recompute (embeddings, coded snapshots); safe to delete."""
    return project.build / "cache" / family


def scores_dir(project: Project) -> Path:
    return project.build / "scores"


def releases_dir(project: Project) -> Path:
    return project.build / "release"


RUNS_AREA = "runs"
RUN_PREDICTIONS = "predictions.jsonl"  # what `rescue evaluate` scores: one parsed answer per instance id
RUN_UNANSWERED = "unanswered.jsonl"  # one {"id", "reason"} per instance without a usable answer
RUN_RECORD = "run.json"  # model, endpoint host, mode, prompt version, release id and hash, counts, tokens
RUN_SCORES = "scores.json"  # written by `rescue evaluate` when it scores a run folder; read by the leaderboard
# The run's log (`rescue show-run`): per request the payload as sent and the raw answer, per instance its span of
# the prompt, what the model gave for it, the prediction or the reason there is none; written as the run goes to
# the `.partial` names (a killed run keeps them), then in order to the final names before run.json.
RUN_REQUESTS = "requests.jsonl"
RUN_SAMPLES = "samples.jsonl"
RUN_REQUESTS_PARTIAL = "requests.partial.jsonl"
RUN_SAMPLES_PARTIAL = "samples.partial.jsonl"
RUN_SAMPLE_SCORES = "sample_scores.jsonl"  # per instance: the answer the scorer used, the gold and its scores


def runs_dir(project: Project) -> Path:
    """build/runs/: one folder per model run (`rescue run-model`), scored in place by `rescue evaluate`."""
    return project.build / RUNS_AREA


def run_dir(project: Project, run_id: str) -> Path:
    return runs_dir(project) / run_id
