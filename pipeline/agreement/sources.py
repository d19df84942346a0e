"""Where `agree`, `gold` and acceptance read from: the schema of the settings, the newest snapshot's answers
and the text-embedding cache (one module, so that none of those imports another to reach them)."""

from __future__ import annotations

from pathlib import Path

from pipeline import layout
from pipeline.agreement.inputs import Snapshot, latest_annotations, load_snapshot
from pipeline.agreement.settings import AgreementSettings
from pipeline.project import Project
from pipeline.schema import AnnotationSchema, load_schema


def schema_for(project: Project, settings: AgreementSettings) -> AnnotationSchema:
    return load_schema(project.schemas / settings.schema_file)


def read_snapshot(project: Project, schema: AnnotationSchema, *, snapshot: str | None = None,
                  skip_other_versions: bool = False) -> Snapshot:
    path = latest_annotations(project, snapshot)
    return load_snapshot(path, schema_version=schema.id, known_fields=[f.name for f in schema.fields],
                         skip_other_versions=skip_other_versions, cache_dir=layout.cache_dir(project, "agreement"))


def embedding_cache(project: Project) -> Path:
    from pipeline.text_similarity import model_info

    info = model_info()
    safe = f"{info['package']}-{info['version']}".replace("/", "_")
    return layout.cache_dir(project, "agreement") / f"embeddings-{safe}.npz"
