"""Put the built-in synthetic sample sessions into raw_video/sample/ with their own catalog file."""

from __future__ import annotations

from pipeline.catalog import CATALOG_NAME, read_catalog_file, render_catalog
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.store import sha256_file, write_text_atomic

SAMPLE_FOLDER = "sample"
SOURCE_NOTE = "synthetic sample (espeak-ng voices, OpenCV frames); made by `rescue sample`"


def _present(project: Project) -> list[CatalogEntry] | None:
    """The sample entries if their catalog exists and every file still has its hash; else None."""
    path = project.raw_video / SAMPLE_FOLDER / CATALOG_NAME
    if not path.exists():
        return None
    try:
        entries = [item.entry for item in read_catalog_file(project, path)]
    except RescueError:
        return None
    for entry in entries:
        video = project.abs(entry.video)
        if not video.is_file() or sha256_file(video) != entry.sha256:
            return None
        if entry.subtitles and not project.abs(entry.subtitles).is_file():
            return None
    return entries or None


def install_samples(project: Project, *, force: bool = False) -> tuple[list[CatalogEntry], bool]:
    """Make the sample sessions unless they are already present and intact. Returns (entries, made)."""
    if not force and (entries := _present(project)) is not None:
        return entries, False
    from pipeline.sample import make_samples  # espeak-ng + OpenCV rendering, only when needed

    folder = project.raw_video / SAMPLE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    entries = [
        CatalogEntry(
            session_id=sample.truth.session_id,
            scenario=sample.truth.scenario,
            participants=sample.truth.participants,
            video=project.rel(sample.video),
            sha256=sha256_file(sample.video),
            subtitles=project.rel(sample.subtitles),
            source=SOURCE_NOTE,
        )
        for sample in make_samples(folder)
    ]
    catalog = folder / CATALOG_NAME
    write_text_atomic(catalog, render_catalog(project, catalog, entries))
    return entries, True
