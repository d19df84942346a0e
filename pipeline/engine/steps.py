"""Every step of `rescue build`, declared once: scope, upstream steps, settings sections, sources, outputs.

Per-session steps come from `pipeline.stages.STAGES` (one `Stage` each: adding one there adds it here,
and the first corpus step waits for it). Corpus steps are declared below. The graph, the plan of
`rescue build --only`, `rescue graph` and `rescue status` all read this registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.stages import STAGES

Scope = Literal["session", "corpus"]
LABEL_STUDIO = "label-studio"  # a resource: the engine opens the server only for a step that needs it


@dataclass(frozen=True)
class Step:
    name: str
    scope: Scope
    after: tuple[str, ...]  # upstream steps
    settings: tuple[str, ...]  # [tool.rescue.*] sections it reads
    sources: str  # what it reads outside build/, in words
    outputs: tuple[str, ...]  # where it writes (pipeline/layout.py spells each path)
    summary: str
    needs: tuple[str, ...] = ()  # resources it opens (LABEL_STUDIO)


def _session_steps() -> list[Step]:
    return [Step(name=stage.name, scope="session", after=stage.after, settings=stage.settings_sections,
                 sources=stage.sources,
                 outputs=(f"build/{stage.area}/<session>/", f"build/manifests/{stage.name}.jsonl"),
                 summary=stage.summary) for stage in STAGES.values()]


def _leaves(steps: list[Step]) -> tuple[str, ...]:
    """Session steps no other session step waits for: the corpus needs each of them done."""
    needed = {name for step in steps for name in step.after}
    return tuple(step.name for step in steps if step.name not in needed)


def _corpus_steps(session_leaves: tuple[str, ...]) -> list[Step]:
    ls = (LABEL_STUDIO,)
    return [
        Step("server", "corpus", session_leaves, ("annotate",), "LABEL_STUDIO_URL, or the embedded server's database",
             ("build/state/corpus/server.json",),
             "open Label Studio only when something there can have changed (its database stamp is the input)", ls),
        Step("push", "corpus", ("server", *session_leaves), ("annotate",), "annotation_schemas/",
             ("Label Studio projects and tasks", "build/labelstudio/media/"),
             "rows -> tasks in every annotator's own project (matched by row id, never duplicated)", ls),
        Step("sample-annotations", "corpus", ("push",), ("build",), "pipeline/sample/annotations/",
             ("Label Studio annotations",),
             "re-create the stored sample annotations where the server holds none (re-anchored by time overlap)", ls),
        Step("pull", "corpus", ("sample-annotations",), ("annotate",), "Label Studio exports",
             ("build/annotations/<snapshot>/",),
             "a new immutable snapshot when the exports or the rows changed (re-anchoring, quarantine)", ls),
        Step("adjudicate", "corpus", ("pull",), ("agreement",), "annotation_schemas/",
             ("build/adjudication/queue.jsonl", "build/adjudication/summary.json"),
             "consensus; the queue of what it cannot settle, round trip through Label Studio", ls),
        Step("sample-adjudications", "corpus", ("adjudicate",), ("build",), "pipeline/sample/annotations/",
             ("Label Studio adjudications",),
             "re-create the stored sample adjudications (inside adjudicate's round trip)", ls),
        Step("agree", "corpus", ("adjudicate", "sample-adjudications"), ("agreement",), "annotation_schemas/",
             ("build/agreement/",),
             "agreement report of the newest snapshot, with the drafts' acceptance against the settled gold"),
        Step("gold", "corpus", ("adjudicate", "sample-adjudications"), ("agreement",), "",
             ("build/gold/benchmark.jsonl", "build/gold/provenance.jsonl", "build/gold/summary.json"),
             "gold rows per session; every session without gold is listed with the reason"),
        Step("freeze", "corpus", ("gold",), ("build",),
             "annotation_schemas/tasks-v1.yaml; with release_media the rows' clips "
             "(build/transcripts/<session>/clips/)",
             ("build/release/<version>/",),
             "six task files, media/ clips, manifest, card; a changed release supersedes the old one, never "
             "overwrites it"),
    ]


def _registry() -> dict[str, Step]:
    session = _session_steps()
    steps = session + _corpus_steps(_leaves(session))
    return {step.name: step for step in steps}


STEPS: dict[str, Step] = _registry()
SESSION_STEPS: tuple[str, ...] = tuple(name for name, step in STEPS.items() if step.scope == "session")
CORPUS_STEPS: tuple[str, ...] = tuple(name for name, step in STEPS.items() if step.scope == "corpus")
