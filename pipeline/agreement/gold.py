"""`rescue adjudicate` and `rescue gold` as library calls.

adjudicate: settle what can be settled and write the rest to build/adjudication/queue.jsonl (one
`QueueItem` per row field, with every annotator's answer). gold: write every session whose rows are
all settled to build/gold/benchmark.jsonl in the released benchmark format (`BenchmarkSession` per
line), with build/gold/provenance.jsonl (one `FieldProvenance` per row field: consensus or
adjudicated, by whom) and build/gold/summary.json (what was written, what is still pending and why).
Both are deterministic: the same snapshot and settings give byte-identical files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from pipeline import layout
from pipeline.agreement.adjudication import SETTLED, Answered, FieldOutcome, Resolver, resolve
from pipeline.agreement.sources import embedding_cache, read_snapshot, schema_for
from pipeline.agreement.consensus import Consensus, Similarity
from pipeline.agreement.inputs import Answer, Snapshot, adjudication_answers, load_snapshot, paused_gc
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.textsim import EmbeddingCache
from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.errors import RescueError, describe_validation
from pipeline.project import Project
from pipeline.records import GROUP_LABELS, Record, TranscriptRow
from pipeline.schema import AnnotationSchema
from pipeline.store import atomic_dir, sha256_file, write_text_atomic
from pipeline.transcripts import read_rows, rows_path


class QueueItem(Record):
    session_id: str
    scenario: str
    row_id: str
    row_index: int
    field: str
    speaker: str
    text: str
    reason: str
    rule: str
    answers: tuple[Answered, ...]


class FieldProvenance(Record):
    session_id: str
    row_id: str
    row_index: int
    field: str
    source: str  # adjudicated | consensus | single_annotator | default_empty | not_applicable
    rule: str
    detail: str
    annotators: tuple[str, ...]
    agreeing: tuple[str, ...]
    adjudicator: str
    snapshot: str


class GoldSummary(Record):
    snapshot: str
    schema_id: str
    sessions_written: tuple[str, ...]
    sessions_pending: dict[str, str]
    rows_written: int
    fields_by_source: dict[str, int]
    queue_items: int
    consensus_settings: dict[str, object]
    benchmark_sha256: str = ""


@dataclass(frozen=True)
class Settled:
    snapshot: Snapshot
    outcomes: dict[str, dict[str, FieldOutcome]]  # row_id -> field -> outcome


def _texts(answers: Sequence[Answer], schema: AnnotationSchema) -> list[str]:
    """Every distinct text the medoid rule may compare, normalised as the consensus sees it."""
    kinds = {f.name: f for f in schema.fields}
    found: set[str] = set()
    for answer in answers:
        field = kinds.get(answer.field)
        if field is None:
            continue
        if field.type == "text" and isinstance(answer.value, str):
            found.add(" ".join(answer.value.split()))
        elif field.type == "items" and isinstance(answer.value, list):
            for sub in field.items:
                if sub.type == "text":
                    found.update(" ".join(item[sub.name].split()) for item in answer.value
                                 if isinstance(item, dict) and isinstance(item.get(sub.name), str))
    return sorted(found)


def text_similarity(project: Project, settings: AgreementSettings, texts: Sequence[str] = ()
                    ) -> tuple[Similarity | None, EmbeddingCache | None]:
    """Pairwise similarity of texts with the offline MiniLM model; `texts` are embedded up front in
    batches (and cached on disk like `agree`'s embeddings), later look-ups are free."""
    if not settings.text_similarity:
        return None, None
    from pipeline.text_similarity import embed

    cache = EmbeddingCache(embedding_cache(project))
    cache.embed([t for t in texts if t], embed)

    def similarity(texts: Sequence[str]) -> list[list[float]]:
        vectors = cache.embed([t or " " for t in texts], embed)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        matrix = unit @ unit.T
        empty = np.array([not t for t in texts])
        matrix[np.ix_(empty, empty)] = 1.0
        matrix[np.ix_(empty, ~empty)] = matrix[np.ix_(~empty, empty)] = 0.0
        return matrix.astype(float).tolist()

    return similarity, cache


def settle(project: Project, settings: AgreementSettings, *, snapshot: str | None = None,
           skip_other_versions: bool = False, similarity: Similarity | None = None) -> tuple[Settled, AnnotationSchema]:
    schema = schema_for(project, settings)
    data = read_snapshot(project, schema, snapshot=snapshot, skip_other_versions=skip_other_versions)
    adjudicated = adjudication_answers(project)
    if adjudicated is not None:  # answers from the adjudication projects: adjudications by definition
        extra = load_snapshot(adjudicated, schema_version=schema.id, known_fields=[f.name for f in schema.fields],
                              skip_other_versions=skip_other_versions)
        data = replace(data, answers=sorted(data.answers + extra.answers, key=lambda a: (
            a.session_id, a.row_index, a.row_id, a.field, a.annotator, a.updated_at)))
        settings = settings.model_copy(update={"adjudicators": tuple(sorted({*settings.adjudicators,
                                                                               *extra.annotators}))})
    cache = None
    if similarity is None:
        similarity, cache = text_similarity(project, settings,
                                            _texts(data.answers, schema) if settings.text_similarity else ())
    resolver = Resolver(schema, settings, Consensus(settings, similarity))
    with paused_gc():
        outcomes = resolve(data.answers, resolver)
    if cache is not None:
        cache.save()
    return Settled(data, outcomes), schema


def _transcripts(project: Project, session_ids: Sequence[str]) -> dict[str, list[TranscriptRow]]:
    found = {}
    for session_id in session_ids:
        if rows_path(project, session_id).is_file():
            found[session_id] = read_rows(project, session_id)
    return found


def queue_items(settled: Settled, transcripts: dict[str, list[TranscriptRow]]) -> list[QueueItem]:
    rows = {row.row_id: row for rows in transcripts.values() for row in rows}
    items = []
    for row_id, fields in settled.outcomes.items():
        speaker_outcome = fields.get("primary_speaker")
        transcript = rows.get(row_id)
        speaker = str(speaker_outcome.value) if speaker_outcome and speaker_outcome.status in SETTLED else \
            (transcript.speaker if transcript else "")
        for outcome in fields.values():
            if outcome.status == "pending":
                items.append(QueueItem(session_id=outcome.session_id, scenario=outcome.scenario, row_id=row_id,
                                       row_index=outcome.row_index, field=outcome.field, speaker=speaker,
                                       text=transcript.text if transcript else "", reason=outcome.detail,
                                       rule=outcome.rule, answers=tuple(Answered(annotator=name, value=value)
                                                                        for name, value in outcome.answers)))
    return sorted(items, key=lambda q: (q.session_id, q.row_index, q.row_id, q.field))


def write_queue(project: Project, items: Sequence[QueueItem]) -> Path:
    folder = layout.adjudication_dir(project)
    path = folder / "queue.jsonl"
    write_text_atomic(path, "".join(item.model_dump_json() + "\n" for item in items))
    counts = Counter(item.field for item in items)
    write_text_atomic(folder / "summary.json", json.dumps(
        {"queue_items": len(items), "rows": len({item.row_id for item in items}),
         "sessions": len({item.session_id for item in items}), "by_field": dict(sorted(counts.items()))},
        indent=1) + "\n")
    return path


def run_adjudicate(project: Project, settings: AgreementSettings, **options: object) -> tuple[Path, list[QueueItem]]:
    with paused_gc():
        settled, _ = settle(project, settings, **options)  # type: ignore[arg-type]
        sessions = sorted({a.session_id for a in settled.snapshot.answers})
        items = queue_items(settled, _transcripts(project, sessions))
        return write_queue(project, items), items


def participants_of(rows: Sequence[BenchmarkRow], scenario: str, therapist: str) -> list[str]:
    """Client names in order of first appearance (primary_speaker, target, support targets), as the
    released scripts rebuild them; Therapist and the group labels are not participants."""
    skip = {therapist, *GROUP_LABELS.values()}
    names: list[str] = []
    for row in rows:
        for name in [row.primary_speaker, *row.target, *(t for s in row.support_strategy for t in s.target)]:
            if name and name not in skip and name not in names:
                names.append(name)
    return names


def gold_row(transcript: TranscriptRow, fields: dict[str, FieldOutcome], schema: AnnotationSchema) -> BenchmarkRow:
    values = {name: outcome.value for name, outcome in fields.items()}
    therapist_row = values.get("primary_speaker") == schema.therapist
    data: dict[str, object] = {"start_time": transcript.start, "end_time": transcript.end,
                               "row_index": transcript.row_index}
    for name, value in values.items():
        if name.startswith("relation_cycle_") and not therapist_row:
            continue  # client rows carry no relation-cycle fields (None in the released format)
        data[name] = value
    if "relation_cycle_evidence_rows" in data and data["relation_cycle_evidence_rows"] == "":
        data["relation_cycle_evidence_rows"] = []
    try:
        return BenchmarkRow.model_validate(data)
    except ValidationError as exc:
        raise RescueError(f"gold row {transcript.session_id} row {transcript.row_index}: "
                          f"{describe_validation(exc)}",
                          "the settled values do not fit the benchmark format; check the schema and the "
                          "adjudicated answers for this row") from exc


def run_gold(project: Project, settings: AgreementSettings, **options: object) -> GoldSummary:
    with paused_gc():
        return _run_gold(project, settings, **options)


def _run_gold(project: Project, settings: AgreementSettings, **options: object) -> GoldSummary:
    settled, schema = settle(project, settings, **options)  # type: ignore[arg-type]
    by_session: dict[str, dict[str, dict[str, FieldOutcome]]] = {}
    scenario: dict[str, str] = {}
    for answer in settled.snapshot.answers:
        scenario.setdefault(answer.session_id, answer.scenario)
    for row_id, fields in settled.outcomes.items():
        first = next(iter(fields.values()))
        by_session.setdefault(first.session_id, {})[row_id] = fields
    transcripts = _transcripts(project, sorted(by_session))
    sessions, provenance, pending = [], [], {}
    sources: Counter[str] = Counter()
    for session_id in sorted(by_session):
        rows = transcripts.get(session_id)
        outcomes = by_session[session_id]
        if rows is None:
            pending[session_id] = f"no transcript rows ({project.rel_or_abs(rows_path(project, session_id))})"
            continue
        unanswered = [r.row_index for r in rows if r.row_id not in outcomes]
        orphans = sorted(set(outcomes) - {r.row_id for r in rows})
        open_fields = sum(o.status == "pending" for f in outcomes.values() for o in f.values())
        if unanswered or orphans or open_fields:
            reasons = []
            if unanswered:
                reasons.append(f"{len(unanswered)} row(s) without answers (first: row {unanswered[0]})")
            if orphans:
                reasons.append(f"{len(orphans)} annotated row(s) no longer in the transcript")
            if open_fields:
                reasons.append(f"{open_fields} field(s) in the adjudication queue")
            pending[session_id] = "; ".join(reasons)
            continue
        gold_rows = [gold_row(row, outcomes[row.row_id], schema) for row in rows]
        sessions.append(BenchmarkSession(sample_id=session_id, scenario=scenario[session_id],  # type: ignore[arg-type]
                                         participants=participants_of(gold_rows, scenario[session_id],
                                                                      schema.therapist), rows=gold_rows))
        for row in rows:
            for outcome in outcomes[row.row_id].values():
                sources[outcome.status] += 1
                provenance.append(FieldProvenance(
                    session_id=session_id, row_id=row.row_id, row_index=row.row_index, field=outcome.field,
                    source=outcome.status, rule=outcome.rule, detail=outcome.detail, annotators=outcome.annotators,
                    agreeing=outcome.agreeing, adjudicator=outcome.adjudicator, snapshot=settled.snapshot.snapshot))
    items = queue_items(settled, transcripts)
    write_queue(project, items)
    summary = GoldSummary(
        snapshot=settled.snapshot.snapshot, schema_id=schema.id,
        sessions_written=tuple(s.sample_id for s in sessions), sessions_pending=pending,
        rows_written=sum(len(s.rows) for s in sessions), fields_by_source=dict(sorted(sources.items())),
        queue_items=len(items), consensus_settings=settings.model_dump(
            include={"min_annotators", "majority_share", "interval_max_spread", "text_min_similarity",
                     "consensus", "adjudicators"}))
    with atomic_dir(layout.gold_dir(project)) as tmp:
        (tmp / layout.GOLD_FILE).write_text("".join(s.model_dump_json() + "\n" for s in sessions), encoding="utf-8")
        (tmp / "provenance.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in provenance),
                                              encoding="utf-8")
        summary = summary.model_copy(update={"benchmark_sha256": sha256_file(tmp / layout.GOLD_FILE)})
        (tmp / "summary.json").write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return summary
