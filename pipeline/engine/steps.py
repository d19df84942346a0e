"""Every step of `rescue build`, in graph order: the registry the plan, the loop, `rescue graph` and
`rescue status` read. Each step is one `Step` (pipeline/step.py) declared beside its function; this module
only lists them (and the resources steps open), and is the engine's only door to the step packages: the
Label Studio steps in pipeline/annotate/ (server, push, pull), the agreement, adjudication, gold and freeze
steps in pipeline/corpus/. Per-session steps come from `pipeline.engine.session_steps.STAGES`; a corpus step
marked `after_sessions` also waits for every session step that no other session step waits for.

`STEPS` is the product's registry. A project's registry (`registry(catalog)`) adds the `Extension`s its
catalog calls for; this is the one place that decides which: today only the demo's stored sample
annotations (`SAMPLE`, pipeline/annotate/sample_steps.py), for a catalog that lists a stored-sample session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pipeline.annotate.pull_step import PULL
from pipeline.annotate.push_step import PUSH
from pipeline.annotate.sample_steps import SAMPLE
from pipeline.annotate.server_step import SERVER, SERVER_RESOURCE
from pipeline.corpus.gold_steps import ADJUDICATE, AGREE, GOLD
from pipeline.corpus.release_step import FREEZE
from pipeline.engine.session_steps import STAGES
from pipeline.records import CatalogEntry
from pipeline.step import LABEL_STUDIO, Extension, Resource, Step

__all__ = ["CORPUS_STEPS", "LABEL_STUDIO", "RESOURCES", "SESSION_STEPS", "STEPS", "Registry", "Step", "registry"]

CORPUS = (SERVER, PUSH, PULL, ADJUDICATE, AGREE, GOLD, FREEZE)
EXTENSIONS: tuple[Extension, ...] = (SAMPLE,)
RESOURCES: dict[str, Resource] = {resource.name: resource for resource in (SERVER_RESOURCE,)}


@dataclass(frozen=True)
class Registry:
    """One project's steps in graph order, and the extensions that added some of them."""

    steps: dict[str, Step]
    extensions: tuple[Extension, ...] = ()

    @property
    def session(self) -> tuple[str, ...]:
        return tuple(name for name, step in self.steps.items() if step.scope == "session")

    @property
    def corpus(self) -> tuple[str, ...]:
        return tuple(name for name, step in self.steps.items() if step.scope == "corpus")

    def hooks(self, name: str) -> list[Callable[..., Any]]:
        return [ext.hooks[name] for ext in self.extensions if name in ext.hooks]


def _leaves(steps: list[Step]) -> tuple[str, ...]:
    """Session steps no other session step waits for: the corpus needs each of them done."""
    needed = {name for step in steps for name in step.after}
    return tuple(step.name for step in steps if step.name not in needed)


def _extended(corpus: list[Step], extension: Extension) -> list[Step]:
    """`corpus` with the extension's steps, each right after its last upstream step (the order stays
    topological), and the product steps it names in `before` waiting for it too."""
    for step in extension.steps:
        at = max(i for i, known in enumerate(corpus) if known.name in step.after) + 1
        corpus.insert(at, step)
    waits = {later: name for name, laters in extension.before.items() for later in laters}
    return [replace(step, after=(*step.after, waits[step.name])) if step.name in waits else step for step in corpus]


@lru_cache(maxsize=None)
def _registry(extensions: tuple[Extension, ...]) -> Registry:
    session = list(STAGES.values())
    leaves = _leaves(session)
    corpus = list(CORPUS)
    for extension in extensions:
        corpus = _extended(corpus, extension)
    corpus = [replace(step, after=(*step.after, *leaves)) if step.after_sessions else step for step in corpus]
    return Registry({step.name: step for step in session + corpus}, extensions)


def registry(catalog: Iterable[CatalogEntry]) -> Registry:
    """The steps of a project with this catalog: the product's, plus every extension the catalog calls for."""
    entries = tuple(catalog)
    return _registry(tuple(extension for extension in EXTENSIONS if extension.applies(entries)))


PRODUCT = _registry(())
STEPS: dict[str, Step] = PRODUCT.steps
SESSION_STEPS: tuple[str, ...] = PRODUCT.session
CORPUS_STEPS: tuple[str, ...] = PRODUCT.corpus
