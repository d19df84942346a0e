"""Every step of `rescue build`, in graph order: the registry the plan, the loop, `rescue graph` and
`rescue status` read. Each step is one `Step` (pipeline/step.py) declared beside its function; this module
only lists them (and the resources steps open), and is the engine's only door to the step packages: the
Label Studio steps in pipeline/annotate/ (server, push, pull, the demo's stored sample annotations), the
agreement, adjudication, gold and freeze steps in pipeline/corpus/. Per-session steps come from
`pipeline.engine.session_steps.STAGES`; a corpus step marked `after_sessions` also waits for every session
step that no other session step waits for.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.annotate.pull_step import PULL
from pipeline.annotate.push_step import PUSH
from pipeline.annotate.sample_steps import SAMPLE_ADJUDICATIONS, SAMPLE_ANNOTATIONS
from pipeline.annotate.server_step import SERVER, SERVER_RESOURCE
from pipeline.corpus.gold_steps import ADJUDICATE, AGREE, GOLD
from pipeline.corpus.release_step import FREEZE
from pipeline.engine.session_steps import STAGES
from pipeline.step import LABEL_STUDIO, Resource, Step

__all__ = ["CORPUS_STEPS", "LABEL_STUDIO", "RESOURCES", "SESSION_STEPS", "STEPS", "Step"]

CORPUS = (SERVER, PUSH, SAMPLE_ANNOTATIONS, PULL, ADJUDICATE, SAMPLE_ADJUDICATIONS, AGREE, GOLD, FREEZE)
RESOURCES: dict[str, Resource] = {resource.name: resource for resource in (SERVER_RESOURCE,)}


def _leaves(steps: list[Step]) -> tuple[str, ...]:
    """Session steps no other session step waits for: the corpus needs each of them done."""
    needed = {name for step in steps for name in step.after}
    return tuple(step.name for step in steps if step.name not in needed)


def _registry() -> dict[str, Step]:
    session = list(STAGES.values())
    leaves = _leaves(session)
    corpus = [replace(step, after=(*step.after, *leaves)) if step.after_sessions else step for step in CORPUS]
    return {step.name: step for step in session + corpus}


STEPS: dict[str, Step] = _registry()
SESSION_STEPS: tuple[str, ...] = tuple(name for name, step in STEPS.items() if step.scope == "session")
CORPUS_STEPS: tuple[str, ...] = tuple(name for name, step in STEPS.items() if step.scope == "corpus")
