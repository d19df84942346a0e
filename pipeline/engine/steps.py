"""Every step of `rescue build`, in graph order: the registry the plan, the loop, `rescue graph` and
`rescue status` read. Each step is one `Step` (pipeline/step.py) declared beside its function; this module
only lists them. Per-session steps come from `pipeline.engine.session_steps.STAGES`; a corpus step marked
`after_sessions` also waits for every session step that no other session step waits for.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.corpus.gold_steps import ADJUDICATE, AGREE, GOLD, SAMPLE_ADJUDICATIONS
from pipeline.corpus.release_step import FREEZE
from pipeline.corpus.server_step import SERVER
from pipeline.corpus.server_steps import PULL, PUSH, SAMPLE_ANNOTATIONS
from pipeline.engine.session_steps import STAGES
from pipeline.step import LABEL_STUDIO, Step

__all__ = ["CORPUS_STEPS", "LABEL_STUDIO", "SESSION_STEPS", "STEPS", "Step"]

CORPUS = (SERVER, PUSH, SAMPLE_ANNOTATIONS, PULL, ADJUDICATE, SAMPLE_ADJUDICATIONS, AGREE, GOLD, FREEZE)


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
