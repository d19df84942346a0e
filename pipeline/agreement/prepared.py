"""What `agree` needs from a snapshot, coded once: rows, annotators and the ratings of every measure.

Coding hundreds of thousands of answers into ratings is Python work that grows with the snapshot, and a
snapshot never changes, so the coded form is cached under build/cache/agreement/ (numpy arrays plus a
marshal blob, no pickle), keyed by the snapshot file's sha256, the schema, the adjudicators and whether
text fields are coded. A re-run of `agree` on the same snapshot (another seed, interval count or set
distance) then starts from the coded ratings.
"""

from __future__ import annotations

import io
import marshal
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.agreement.inputs import Snapshot, paused_gc
from pipeline.agreement.plan import build_plan
from pipeline.agreement.ratings import Ratings, RowIndex, build_row_index, extract_all
from pipeline.agreement.settings import AgreementSettings
from pipeline.schema import AnnotationSchema
from pipeline.store import sha256_json, write_bytes_atomic

CACHE_VERSION = "2"  # bump when the coding of answers changes
CACHE_KEEP = 4


@dataclass(frozen=True)
class Prepared:
    snapshot: str
    path: Path
    duplicates: int
    other_versions: dict[str, int]
    answers_total: int  # answers in the snapshot (after de-duplication)
    answers_used: int  # without the adjudicators'
    rows: RowIndex
    annotators: tuple[str, ...]
    per_annotator: dict[str, int]  # answers with a value, per annotator
    ratings: dict[str, Ratings]  # measures coded (text measures only when text similarity is on)
    task_ids: dict[tuple[str, str], int]  # (row id, annotator) -> Label Studio task id (for links to disagreements)


def prepare(snapshot: Snapshot, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool) -> Prepared:
    adjudicators = set(settings.adjudicators)
    with paused_gc():
        answers = [a for a in snapshot.answers if a.annotator not in adjudicators]
        rows = build_row_index(answers)
        annotators = tuple(sorted({a.annotator for a in answers}))
        measures = [m for m in build_plan(schema) if use_text or m.level != "text"]
        ratings = extract_all(measures, answers, rows, annotators, schema)
        per_annotator = dict.fromkeys(annotators, 0)
        task_ids = {(a.row_id, a.annotator): a.task_id for a in answers}
        for answer in answers:
            if answer.value not in (None, "", []):
                per_annotator[answer.annotator] += 1
    return Prepared(snapshot=snapshot.snapshot, path=snapshot.path, duplicates=snapshot.duplicates,
                    other_versions=dict(snapshot.other_versions), answers_total=len(snapshot.answers),
                    answers_used=len(answers), rows=rows, annotators=annotators, per_annotator=per_annotator,
                    ratings=ratings, task_ids=task_ids)


def cache_key(file_sha256: str, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool,
              skip_other_versions: bool) -> str:
    return sha256_json([CACHE_VERSION, file_sha256, schema.model_dump(mode="json"), sorted(settings.adjudicators),
                        use_text, skip_other_versions])[:24]


def save(path: Path, prepared: Prepared) -> None:
    rows = prepared.rows
    arrays: dict[str, np.ndarray] = {"row_index": rows.row_index, "row_session": rows.row_session}
    measures = []
    for number, (measure_id, r) in enumerate(prepared.ratings.items()):
        arrays.update({f"{number}_unit_row": r.unit_row, f"{number}_unit": r.unit, f"{number}_rater": r.rater,
                       f"{number}_code": r.code})
        measures.append((measure_id, r.values, r.declared, r.unit_key))
    meta = (prepared.snapshot, str(prepared.path), prepared.duplicates, prepared.other_versions,
            prepared.answers_total, prepared.answers_used, rows.row_ids, rows.sessions, rows.session_scenario,
            prepared.annotators, prepared.per_annotator, measures, prepared.task_ids)
    arrays["meta"] = np.frombuffer(marshal.dumps(meta), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_bytes_atomic(path, buffer.getvalue())
    for old in sorted(path.parent.glob("prepared-*.npz"), key=lambda p: p.stat().st_mtime)[:-CACHE_KEEP]:
        old.unlink(missing_ok=True)


def load(path: Path, schema: AnnotationSchema) -> Prepared | None:
    """The cached coded snapshot, or None when absent or unreadable (then it is simply rebuilt)."""
    if not path.is_file():
        return None
    plan = {m.id: m for m in build_plan(schema)}
    try:
        with paused_gc(), np.load(path, allow_pickle=False) as data:
            (snapshot, file, duplicates, versions, total, used, row_ids, sessions, scenarios, annotators,
             per_annotator, measures, task_ids) = marshal.loads(data["meta"].tobytes())
            rows = RowIndex(row_ids=row_ids, row_index=data["row_index"], row_session=data["row_session"],
                            sessions=sessions, session_scenario=scenarios)
            ratings = {
                measure_id: Ratings(measure=plan[measure_id], values=values, declared=declared,
                                    unit_row=data[f"{n}_unit_row"], unit_key=unit_key, unit=data[f"{n}_unit"],
                                    rater=data[f"{n}_rater"], code=data[f"{n}_code"], annotators=annotators)
                for n, (measure_id, values, declared, unit_key) in enumerate(measures)}
    except (OSError, ValueError, EOFError, KeyError, TypeError):
        return None
    return Prepared(snapshot=snapshot, path=Path(file), duplicates=duplicates, other_versions=versions,
                    answers_total=total, answers_used=used, rows=rows, annotators=annotators,
                    per_annotator=per_annotator, ratings=ratings, task_ids=task_ids)
