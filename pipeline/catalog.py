"""The session catalog: every `sessions.csv` under raw_video/, validated into `CatalogEntry` records.

Columns (header required, order free): session_id, scenario, participants (names separated by ';'),
video, sha256, subtitles, clip_start, clip_end, source, and optionally therapist (empty or yes: a therapist
speaks, the default; no: only the participants do). `video` and `subtitles` are relative to the
folder of the CSV file that lists them and must stay inside raw_video/. Times are seconds or
HH:MM:SS[.,]mmm.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pipeline.errors import RescueError, describe_validation
from pipeline.project import Project, lexical
from pipeline.records import CatalogEntry
from pipeline.store import write_text_atomic

CATALOG_NAME = "sessions.csv"
COLUMNS = ("session_id", "scenario", "participants", "video", "sha256", "subtitles", "clip_start", "clip_end", "source")
REQUIRED = frozenset({"session_id", "scenario", "participants", "video", "sha256"})
OPTIONAL_COLUMNS = ("therapist",)  # written only where a session needs them, so older catalogs stay valid
_YES, _NO = frozenset({"", "yes", "true", "1"}), frozenset({"no", "false", "0"})
_TIME = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)$")
_FIX_CSV = "edit the catalog (see raw_video/README.md for the columns)"


@dataclass(frozen=True)
class Located:
    """A catalog entry with where it was read from, for error messages."""

    entry: CatalogEntry
    file: Path
    line: int


def parse_time(text: str) -> float:
    """'100', '100.5', '01:40' or '00:01:40,000' -> seconds."""
    text = text.strip()
    match = _TIME.match(text)
    if match:
        hours, minutes, seconds = match.groups()
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))
    return float(text)


def format_time(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RescueError(
            f"{path}: line {line} is not UTF-8 (byte 0x{data[exc.start]:02x})", "re-save the catalog as UTF-8"
        ) from exc


def _entry_from_row(project: Project, csv_path: Path, line: int, row: dict[str, str]) -> CatalogEntry:
    where = f"{project.rel_or_abs(csv_path)}:{line}"
    folder = csv_path.parent
    fix_path = f"give a path relative to {project.rel_or_abs(folder)}/ that stays inside raw_video/"

    def media_path(column: str) -> str | None:
        value = row.get(column, "").strip()
        if not value:
            return None
        if Path(value).is_absolute():
            raise RescueError(f"{where}: {column} {value!r} is an absolute path", fix_path)
        resolved = lexical(folder / value)  # lexical, so symlinked videos on another disk still work
        if not resolved.is_relative_to(project.raw_video):
            raise RescueError(f"{where}: {column} {value!r} escapes raw_video/", fix_path)
        return project.rel(resolved)

    try:
        clip_start = parse_time(row["clip_start"]) if row.get("clip_start", "").strip() else None
        clip_end = parse_time(row["clip_end"]) if row.get("clip_end", "").strip() else None
    except ValueError as exc:
        raise RescueError(f"{where}: clip time is not a number or HH:MM:SS ({exc})", _FIX_CSV) from exc
    therapist = row.get("therapist", "").strip().lower()
    if therapist not in _YES | _NO:
        raise RescueError(f"{where}: therapist {row['therapist'].strip()!r} is not yes or no",
                          "write no for a session where no therapist speaks; leave it empty otherwise")
    try:
        return CatalogEntry(
            session_id=row["session_id"].strip(),
            scenario=row["scenario"].strip().lower(),  # type: ignore[arg-type]
            participants=tuple(p.strip() for p in row["participants"].split(";") if p.strip()),
            video=media_path("video") or "",
            sha256=row["sha256"].strip().lower(),
            subtitles=media_path("subtitles"),
            clip_start=clip_start,
            clip_end=clip_end,
            source=row.get("source", "").strip(),
            therapist=therapist in _YES,
        )
    except ValidationError as exc:
        raise RescueError(f"{where}: {describe_validation(exc)}", _FIX_CSV) from exc


def read_catalog_file(project: Project, csv_path: Path) -> list[Located]:
    """Parse one catalog file; every problem names the file, the line and the column."""
    text = _read_text(csv_path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = REQUIRED.difference(header)
    unknown = set(header).difference(COLUMNS, OPTIONAL_COLUMNS)
    if missing or unknown:
        parts = [f"missing column(s) {', '.join(sorted(missing))}" if missing else "",
                 f"unknown column(s) {', '.join(sorted(unknown))}" if unknown else ""]
        raise RescueError(f"{project.rel_or_abs(csv_path)}: {'; '.join(p for p in parts if p)}",
                          f"use the header: {','.join(COLUMNS)} (optionally also {','.join(OPTIONAL_COLUMNS)})")
    reader.fieldnames = header
    located: list[Located] = []
    for row in reader:
        line = reader.line_num
        if None in row or any(value is None for value in row.values()):
            raise RescueError(f"{project.rel_or_abs(csv_path)}:{line}: expected {len(header)} fields",
                              "quote values that contain commas; one session per line")
        if not any(value.strip() for value in row.values()):
            continue
        located.append(Located(_entry_from_row(project, csv_path, line, row), csv_path, line))
    return located


def catalog_files(project: Project) -> list[Path]:
    if not project.raw_video.is_dir():
        return []
    return sorted(project.raw_video.rglob(CATALOG_NAME))


def load_catalog(project: Project) -> list[Located]:
    """All sessions from all catalogs, sorted by id; a session id listed twice is an error."""
    seen: dict[str, Located] = {}
    for path in catalog_files(project):
        for item in read_catalog_file(project, path):
            first = seen.get(item.entry.session_id)
            if first is not None:
                raise RescueError(
                    f"session id {item.entry.session_id!r} is listed twice: "
                    f"{project.rel(first.file)}:{first.line} and {project.rel(item.file)}:{item.line}",
                    "give each session a unique id (remove or rename one)",
                )
            seen[item.entry.session_id] = item
    return [seen[key] for key in sorted(seen)]


def _span(entry: CatalogEntry) -> tuple[float, float]:
    return (entry.clip_start or 0.0, entry.clip_end if entry.clip_end is not None else float("inf"))


def shared_videos(entries: Iterable[CatalogEntry], session_id: str | None = None) -> list[str]:
    """Warnings for sessions whose spans of the same video (same file or same sha256) overlap: their rows
    would be annotated twice and count twice in the benchmark. Distinct clips of one long video are fine.
    With `session_id`, only the warnings that concern that session."""
    by_content: dict[str, list[CatalogEntry]] = {}
    for entry in sorted(entries, key=lambda e: e.session_id):
        by_content.setdefault(entry.sha256, []).append(entry)  # the same file has the same sha256
    warnings = []
    for group in by_content.values():
        for i, first in enumerate(group):
            for second in group[i + 1:]:
                if session_id is not None and session_id not in {first.session_id, second.session_id}:
                    continue
                (a0, a1), (b0, b1) = _span(first), _span(second)
                if not (a0 < b1 and b0 < a1):
                    continue
                videos = first.video if first.video == second.video else \
                    f"{first.video} and {second.video} have the same sha256"
                warnings.append(f"sessions {first.session_id} and {second.session_id} show the same video "
                                f"({videos}) over overlapping spans: the same speech would be annotated twice; "
                                "remove one of them from the catalog, or give them distinct clip spans")
    return warnings


def render_catalog(project: Project, csv_path: Path, entries: Iterable[CatalogEntry],
                   columns: tuple[str, ...] | None = None) -> str:
    """CSV text for `entries`, media paths written relative to the CSV's folder. Columns: the given ones, else
    COLUMNS plus the optional ones some entry needs."""
    entries = list(entries)
    if columns is None:
        columns = (*COLUMNS, "therapist") if any(not e.therapist for e in entries) else COLUMNS
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    folder = lexical(csv_path.parent)
    for entry in entries:
        def rel(path: str | None) -> str:
            return "" if path is None else lexical(project.abs(path)).relative_to(folder).as_posix()

        values = {"session_id": entry.session_id, "scenario": entry.scenario,
                  "participants": ";".join(entry.participants), "video": rel(entry.video), "sha256": entry.sha256,
                  "subtitles": rel(entry.subtitles), "clip_start": format_time(entry.clip_start),
                  "clip_end": format_time(entry.clip_end), "source": entry.source,
                  "therapist": "" if entry.therapist else "no"}
        lost = [column for column, value in values.items() if value and column not in columns]
        if lost:
            raise RescueError(f"{project.rel_or_abs(csv_path)} has no column {', '.join(lost)} for session "
                              f"{entry.session_id}", f"add {', '.join(lost)} to the file's header")
        writer.writerow([values[column] for column in columns])
    return out.getvalue()


def _with_column(text: str, column: str) -> str:
    """Catalog text with one more (empty) column: every listed session keeps its values, and an empty optional
    column means what its absence meant (e.g. therapist: a therapist speaks)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    for number, row in enumerate(csv.reader(io.StringIO(text, newline=""))):
        writer.writerow([*row, column if number == 0 else ""] if row else [])
    return out.getvalue()


def append_entry(project: Project, csv_path: Path, entry: CatalogEntry) -> None:
    """Add one session to a catalog file (created if absent), refusing an id any catalog already has.

    The file is rewritten atomically: existing lines are kept byte for byte, except that a session without a
    therapist adds the `therapist` column to a file that lacks it (the other sessions get it empty: as before).
    """
    existing = {item.entry.session_id: item for item in load_catalog(project)}
    if entry.session_id in existing:
        item = existing[entry.session_id]
        raise RescueError(f"session id {entry.session_id!r} already exists in {project.rel(item.file)}:{item.line}",
                          "choose another --id, or edit that catalog line by hand")
    if not lexical(csv_path).is_relative_to(project.raw_video):
        raise RescueError(f"catalog {csv_path} is not inside raw_video/", "keep catalogs under raw_video/")
    current = _read_text(csv_path) if csv_path.exists() else ""
    header = next(csv.reader(io.StringIO(current)), None) if current else None
    columns = tuple(h.strip() for h in header) if header else None  # the file's own column order
    if columns is not None and not entry.therapist and "therapist" not in columns:
        current, columns = _with_column(current, "therapist"), (*columns, "therapist")
    new_rows = render_catalog(project, csv_path, [entry], columns).split("\n", 1)[1]
    if csv_path.exists():
        if current and not current.endswith("\n"):
            current += "\n"
        write_text_atomic(csv_path, current + new_rows)
    else:
        write_text_atomic(csv_path, render_catalog(project, csv_path, [entry]))
