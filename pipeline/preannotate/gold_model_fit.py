"""The gold-model's learning and predicting, without its caching and gating (gold_model_backend.py), so the
cross-validation of the gate (crossval.py) trains and drafts folds with the very code the backend uses.

Training: each gold row's values, with names turned into roles (roles.py), give the heads' classes
(gold_heads.py); the features are MiniLM embeddings of the row and its context (gold_features.py).
Predicting: the heads predict, the nearest gold rows give items and texts (gold_assemble.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import JsonValue

from pipeline.benchmark_format import BenchmarkSession
from pipeline.preannotate.baseline import Key, Majority
from pipeline.preannotate.drafts import FieldGate
from pipeline.preannotate.gold_assemble import GoldRow, Prediction, assemble
from pipeline.preannotate.gold_features import EmbedStats, Reducer, embed_texts, session_features
from pipeline.preannotate.gold_heads import Head, HeadModel, fit_head, head_key, schema_heads
from pipeline.preannotate.gold_rows import gold_values
from pipeline.preannotate.roles import RoleMap, encode_roles, role_maps
from pipeline.preannotate.session import DraftSession
from pipeline.preannotate.settings import GoldModelSettings
from pipeline.preannotate.transcript_backend import transcript_values
from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import clean


@dataclass
class TrainedModel:
    heads: dict[str, HeadModel]
    specs: list[Head]
    search: np.ndarray  # unit vectors of the training rows, for the nearest-row search
    rows: list[GoldRow]
    therapist_rows: np.ndarray  # bool per training row
    scenarios: list[Scenario]
    gold: dict[str, str]  # training file -> sha256
    reduce: Reducer | None = None
    notes: list[str] = field(default_factory=list)
    gates: tuple[FieldGate, ...] = ()  # set by the backend after cross-validation (crossval.py)
    majorities: dict[Key, Majority] = field(default_factory=dict)  # field baseline, for gated fields


def _session_parts(schema: AnnotationSchema, session: BenchmarkSession) -> tuple[list[str], list[RoleMap]]:
    speakers = [clean(r.primary_speaker) for r in session.rows]
    participants = [clean(p) for p in session.participants]
    return speakers, role_maps(speakers, participants, schema.therapist, schema.group_labels[session.scenario])


def train(sessions: Sequence[BenchmarkSession], gold: dict[str, str], schema: AnnotationSchema,
          settings: GoldModelSettings, cache: Path | None, stats: EmbedStats | None = None) -> TrainedModel:
    texts = [clean(r.dialogue_cleaned) for s in sessions for r in s.rows]
    vectors = embed_texts(texts, cache, stats)
    features, search, rows, scenarios, therapist = [], [], [], [], []
    start = 0
    for session in sessions:
        speakers, maps = _session_parts(schema, session)
        n = len(session.rows)
        x, s = session_features(vectors[start:start + n], speakers, schema.therapist, session.scenario == "family",
                                settings.context_rows)
        start += n
        features.append(x)
        search.append(s)
        entities = schema.entities(session.scenario, tuple(clean(p) for p in session.participants))
        for row, speaker, roles in zip(session.rows, speakers, maps):
            rows.append(GoldRow(encode_roles(schema, gold_values(schema, row, entities), roles), row.row_index,
                                roles, 0.0))
            scenarios.append(session.scenario)
            therapist.append(speaker == schema.therapist)
    X = np.vstack(features) if features else np.zeros((0, 1))
    reduce = Reducer(X, settings.embedding_dims)
    X = reduce(X)
    specs = schema_heads(schema)
    heads: dict[str, HeadModel] = {}
    notes = []
    for head in specs:
        groups: dict[str, list[tuple[int, str]]] = {}
        for i, r in enumerate(rows):
            value = head.value(r.values)
            if value is not None:
                groups.setdefault(head_key(head, scenarios[i], bool(therapist[i])), []).append((i, value))
        for key, picked in sorted(groups.items()):
            model = fit_head(X[[i for i, _ in picked]], [v for _, v in picked], settings)
            if model is None:
                notes.append(f"{key}: not drafted (no value seen in {settings.min_class_rows}+ training rows)")
                continue
            heads[key] = model
            notes.append(f"{key}: {model.describe()}")
    return TrainedModel(heads, specs, np.vstack(search) if search else np.zeros((0, 1), np.float32), rows,
                        np.array(therapist, dtype=bool), scenarios, gold, reduce, notes)


def predict_rows(model: TrainedModel, session: DraftSession, settings: GoldModelSettings, vectors: np.ndarray
                 ) -> list[tuple[dict[str, JsonValue], dict[str, float]]]:
    """Per row of `session` (whose row text embeddings are `vectors`): the model's draft values (over the
    transcript's) and per-field scores, before gating and validation."""
    schema = session.schema
    speakers = [row.speaker for row in session.rows]
    maps = role_maps(speakers, list(session.participants), schema.therapist, schema.group_labels[session.scenario])
    features, search = session_features(vectors, speakers, schema.therapist, session.scenario == "family",
                                        settings.context_rows)
    features = model.reduce(features) if model.reduce is not None else features
    predicted: list[dict[str, Prediction]] = [{} for _ in session.rows]
    for head in model.specs:
        groups: dict[str, list[int]] = {}
        for i, speaker in enumerate(speakers):
            groups.setdefault(head_key(head, session.scenario, speaker == schema.therapist), []).append(i)
        for key, members in groups.items():
            if key in model.heads:
                labels, scores = model.heads[key].predict(features[members])
                for i, label, score in zip(members, labels, scores):
                    predicted[i][head.name] = Prediction(label, float(score))
    neighbours = _neighbours(model, search, speakers, session.scenario, schema.therapist, settings.neighbours)
    out = []
    for i, row in enumerate(session.rows):
        near = [GoldRow(model.rows[j].values, model.rows[j].row_index, model.rows[j].roles, float(sim))
                for j, sim in neighbours[i]]
        out.append(assemble(schema, row.speaker, row.row_index, len(session.rows), transcript_values(session, row),
                            predicted[i], near, maps[i], session.entities))
    return out


def _neighbours(model: TrainedModel, search: np.ndarray, speakers: Sequence[str], scenario: Scenario,
                therapist_name: str, neighbours: int) -> list[list[tuple[int, float]]]:
    """Per row: the most similar training rows by the same kind of speaker, this scenario's first."""
    if not len(search) or not len(model.search):
        return [[] for _ in speakers]
    sims = search @ model.search.T
    same_scenario = np.array([s == scenario for s in model.scenarios])
    therapist = np.array([speaker == therapist_name for speaker in speakers])
    # cosine is in [-1, 1]: +2 puts this scenario's rows first, -4 rows of the other kind of speaker last
    rank = sims + same_scenario[None, :] * 2.0 - (model.therapist_rows[None, :] != therapist[:, None]) * 4.0
    k = min(neighbours, len(model.rows))
    top = np.argpartition(-rank, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(top, np.argsort(-np.take_along_axis(rank, top, axis=1), axis=1), axis=1)
    return [[(int(j), float(sims[i, j])) for j in row] for i, row in enumerate(order)]
