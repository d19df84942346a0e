"""Backend name -> factory. A factory gets the project (for build/ caches and the project's gold), the step's
settings and the schema, and returns a `DraftBackend` (drafts.py). A backend that is named but not installed
or not configured is an error naming the setting to change."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from pipeline import layout
from pipeline.errors import RescueError
from pipeline.preannotate.drafts import DraftBackend
from pipeline.preannotate.settings import BACKEND_NAMES, PreannotateSettings
from pipeline.project import Project
from pipeline.schema import AnnotationSchema

SETTING = "[tool.rescue.preannotate] backend"
Factory = Callable[[Project, PreannotateSettings, AnnotationSchema], DraftBackend]


def cache_dir(project: Project) -> Path:
    return layout.cache_dir(project, "preannotate")


def train_gold_files(project: Project, settings: PreannotateSettings) -> list[Path]:
    """The gold-model's training files: the settings' (relative to the project root), else the project's gold."""
    if settings.train_gold:
        return [Path(p) if Path(p).is_absolute() else project.root / p for p in settings.train_gold]
    return [layout.gold_file(project)]


def _need(module: str, backend: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise RescueError(f"{SETTING} = {backend!r}, but {package} is not installed",
                          "pip install -e '.[preannotate]' (or run `make setup`), or choose another backend "
                          f"({', '.join(BACKEND_NAMES)})")


def _transcript(project: Project, settings: PreannotateSettings, schema: AnnotationSchema) -> DraftBackend:
    from pipeline.preannotate.transcript_backend import TranscriptBackend

    return TranscriptBackend()


def _gold_model(project: Project, settings: PreannotateSettings, schema: AnnotationSchema) -> DraftBackend:
    _need("sklearn", "gold-model", "scikit-learn")
    files = train_gold_files(project, settings)
    missing = [f for f in files if not f.is_file()]
    if missing:
        given = bool(settings.train_gold)
        raise RescueError(
            f"{SETTING} = 'gold-model' needs training gold, but {', '.join(project.rel_or_abs(f) for f in missing)} "
            f"{'does' if len(missing) == 1 else 'do'} not exist"
            + ("" if given else " (no [tool.rescue.preannotate] train_gold is set, so the project's own gold is used)"),
            "set [tool.rescue.preannotate] train_gold (or pass --train-gold) to gold files in the released benchmark "
            "format" + ("" if given else ", or build the project's gold first (`rescue gold`)"))
    from pipeline.preannotate.gold_model_backend import GoldModelBackend

    return GoldModelBackend(schema, settings.gold_model, files, cache_dir(project), settings.gate)


def _openai(project: Project, settings: PreannotateSettings, schema: AnnotationSchema) -> DraftBackend:
    _need("openai", "openai", "the openai SDK")
    if not settings.openai.model:
        raise RescueError(f"{SETTING} = 'openai', but [tool.rescue.preannotate.openai] model is not set",
                          "set model (and base_url, the OpenAI-compatible endpoint; default: OpenAI's) under "
                          "[tool.rescue.preannotate.openai] in pyproject.toml (docs/llm.md)")
    from pipeline.preannotate.openai_backend import OpenAIBackend

    return OpenAIBackend(project, settings.openai, schema)


FACTORIES: dict[str, Factory] = {"transcript": _transcript, "gold-model": _gold_model, "openai": _openai}


def make_backend(project: Project, settings: PreannotateSettings, schema: AnnotationSchema) -> DraftBackend:
    factory = FACTORIES.get(settings.backend)
    if factory is None:  # settings validation names the allowed values; this guards a registry out of step
        raise RescueError(f"{SETTING} = {settings.backend!r} is not a known backend",
                          f"choose one of {', '.join(FACTORIES)}")
    return factory(project, settings, schema)
