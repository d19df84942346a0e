"""`rescue agree` as a library call: newest snapshot -> build/agreement/ (HTML, CSV, Markdown, JSON, PNGs).

The folder is replaced as a whole (atomic rename), so a failed run leaves the previous report intact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline import layout
from pipeline.agreement.acceptance import report_acceptance
from pipeline.agreement.breakdowns import Progress, compute_report
from pipeline.agreement.columnar import prepare_verified
from pipeline.agreement.disagreements import find_disagreements
from pipeline.agreement.inputs import check_snapshot, latest_annotations, load_checked_snapshot, paused_gc
from pipeline.agreement.prepared import Prepared, cache_key, prepare
from pipeline.agreement.prepared import load as load_prepared
from pipeline.agreement.prepared import save as save_prepared
from pipeline.agreement.results import AgreementReport
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.snapshot_notes import snapshot_notes
from pipeline.agreement.sources import embedding_cache, read_snapshot, schema_for

__all__ = ["AgreeOutput", "coded_snapshot", "embedding_cache", "read_snapshot", "run_agree", "schema_for",
           "write_report"]
from pipeline.project import Project
from pipeline.schema import AnnotationSchema
from pipeline.store import atomic_dir, sha256_file


@dataclass(frozen=True)
class AgreeOutput:
    report: AgreementReport
    folder: Path

    @property
    def html(self) -> Path:
        return self.folder / "report.html"


def coded_snapshot(project: Project, schema: AnnotationSchema, settings: AgreementSettings, path: Path,
                   use_text: bool, skip_other_versions: bool) -> Prepared:
    """The snapshot coded as ratings, from the cache when this file content was coded before."""
    folder = layout.cache_dir(project, "agreement")
    digest = sha256_file(path)
    # before the cache: a damaged snapshot is never used, not even via a cache
    verified = check_snapshot(path, digest)
    cached = folder / f"prepared-{cache_key(digest, schema, settings, use_text, skip_other_versions)}.npz"
    data = load_prepared(cached, schema)
    if data is None and verified:  # the records pull validated: read them in columns
        data = prepare_verified(path, schema, settings, use_text, skip_other_versions)
        if data is not None:
            save_prepared(cached, data)
    if data is None:
        answers = load_checked_snapshot(path, schema_version=schema.id, known_fields=[f.name for f in schema.fields],
                                        skip_other_versions=skip_other_versions)
        data = prepare(answers, schema, settings, use_text)
        save_prepared(cached, data)
    return data


def write_report(report: AgreementReport, folder: Path) -> None:
    """Write every report file into `folder` (replaced atomically)."""
    from pipeline.agreement.report_html import figure_files, to_html
    from pipeline.agreement.report_tables import disagreements_csv, to_csv, to_markdown

    pngs = figure_files(report)
    with atomic_dir(folder) as tmp:
        (tmp / "report.html").write_text(to_html(report, pngs), encoding="utf-8")
        (tmp / "agreement.csv").write_text(to_csv(report), encoding="utf-8")
        (tmp / "disagreements.csv").write_text(disagreements_csv(report), encoding="utf-8")
        (tmp / "agreement.md").write_text(to_markdown(report), encoding="utf-8")
        (tmp / "report.json").write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
        (tmp / "figures").mkdir()
        for name, png in pngs.items():
            (tmp / "figures" / name).write_bytes(png)


def run_agree(project: Project, settings: AgreementSettings, *, snapshot: str | None = None,
              skip_other_versions: bool = False, text: bool | None = None,
              progress: Progress | None = None) -> AgreeOutput:
    with paused_gc():  # millions of small acyclic objects: the cyclic collector would rescan them again and again
        return _run_agree(project, settings, snapshot=snapshot, skip_other_versions=skip_other_versions, text=text,
                          progress=progress)


def _run_agree(project: Project, settings: AgreementSettings, *, snapshot: str | None, skip_other_versions: bool,
               text: bool | None, progress: Progress | None) -> AgreeOutput:
    schema = schema_for(project, settings)
    path = latest_annotations(project, snapshot)
    use_text = settings.text_similarity if text is None else text
    embedder = cache = model = None
    if use_text:
        from pipeline.text_similarity import embed, model_info

        embedder, cache, model = embed, embedding_cache(project), model_info()
    data = coded_snapshot(project, schema, settings, path, use_text, skip_other_versions)
    report = compute_report(data, schema, settings.model_copy(update={"text_similarity": use_text}),
                            embedder=embedder, cache_path=cache, text_model=model, progress=progress)
    disagreements = find_disagreements(project, data, settings.disagreements_per_field)
    acceptance = report_acceptance(project, settings, snapshot=snapshot, skip_other_versions=skip_other_versions,
                                   use_text=use_text)
    report = report.model_copy(update={"annotations_file": project.rel_or_abs(path), "disagreements": disagreements,
                                       "acceptance": acceptance,
                                       "notes": report.notes + tuple(snapshot_notes(path))})
    folder = layout.agreement_dir(project)
    write_report(report, folder)
    return AgreeOutput(report=report, folder=folder)
