"""The `gold-model` backend: learns from gold rows, offline, and drafts every categorical, set and text field.

Training: each gold row's values, with names turned into roles (roles.py), give the heads' classes
(gold_heads.py); the features are MiniLM embeddings of the row and its context (gold_features.py). Drafting:
the heads predict, the nearest gold rows give items and texts (gold_assemble.py), and every draft goes
through the annotation validator (validate.py); a draft that fails keeps the transcript values and is
quarantined with the reason. The trained model is kept under build/cache/preannotate/models/, keyed by the
training files' sha256, the settings and the schema, so the sessions of one build train once.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline import __version__
from pipeline.agreement.textsim import EmbeddingCache
from pipeline.benchmark_format import BenchmarkSession
from pipeline.errors import RescueError
from pipeline.preannotate.drafts import QuarantinedDraft, RowDraft, SessionDrafts
from pipeline.preannotate.gold_assemble import GoldRow, Prediction, assemble
from pipeline.preannotate.gold_features import EmbedStats, Reducer, embed_texts, session_features
from pipeline.preannotate.gold_heads import Head, HeadModel, fit_head, head_key, schema_heads
from pipeline.preannotate.gold_rows import gold_values, read_training_gold
from pipeline.preannotate.roles import RoleMap, encode_roles, role_maps
from pipeline.preannotate.session import DraftSession
from pipeline.preannotate.settings import GoldModelSettings
from pipeline.preannotate.transcript_backend import transcript_values
from pipeline.preannotate.validate import draft_problems
from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema
from pipeline.store import sha256_json, write_bytes_atomic
from pipeline.tasks.context import clean

NAME = "gold-model"
MODEL_FAMILY = "minilm-logreg"


def _code_digest() -> str:
    """The training code's own hash: a cached model is reused only by the code that made it."""
    import hashlib

    here = Path(__file__).parent
    parts = [(here / name).read_bytes() for name in ("gold_model_backend.py", "gold_heads.py", "gold_features.py",
                                                     "gold_rows.py", "roles.py")]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


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


class GoldModelBackend:
    name = NAME

    def __init__(self, schema: AnnotationSchema, settings: GoldModelSettings, train_files: Sequence[Path],
                 cache_dir: Path | None) -> None:
        self.schema, self.settings, self.train_files, self.cache_dir = schema, settings, list(train_files), cache_dir
        self.stats = EmbedStats()
        self._trained: TrainedModel | None = None
        self._cache: EmbeddingCache | None = None

    @property
    def embeddings_cache(self) -> Path | None:
        from pipeline.preannotate.gold_features import embedding_cache_path

        return embedding_cache_path(self.cache_dir.parent.parent) if self.cache_dir else None

    def trained(self) -> TrainedModel:
        if self._trained is None:
            sessions, gold = read_training_gold(self.train_files, self.schema)
            if not any(s.rows for s in sessions):
                raise RescueError(f"gold-model: the training gold ({', '.join(map(str, self.train_files))}) holds no "
                                  "rows", "train on a gold file with annotated sessions ([tool.rescue.preannotate] "
                                  "train_gold or --train-gold)")
            key = sha256_json({"gold": sorted(gold.values()), "settings": self.settings.model_dump(),
                               "schema": self.schema.model_dump(mode="json"), "code": __version__,
                               "training_code": _code_digest()})
            path = self.cache_dir / "models" / f"{key}.pkl" if self.cache_dir else None
            if path is not None and path.is_file():
                self._trained = pickle.loads(path.read_bytes())  # our own build folder's cache
            else:
                self._trained = train(sessions, gold, self.schema, self.settings, self.embeddings_cache, self.stats)
                if path is not None:
                    write_bytes_atomic(path, pickle.dumps(self._trained))
        return self._trained

    def model(self) -> str:
        digest = sha256_json(sorted(self.trained().gold.values()))[:12]
        return f"{MODEL_FAMILY}-gold-{digest}"

    def draft(self, session: DraftSession) -> SessionDrafts:
        model = self.trained()
        schema = session.schema
        speakers = [row.speaker for row in session.rows]
        maps = role_maps(speakers, list(session.participants), schema.therapist, schema.group_labels[session.scenario])
        if self._cache is None:
            self._cache = EmbeddingCache(self.embeddings_cache)
        vectors = embed_texts([row.text for row in session.rows], self.embeddings_cache, self.stats, self._cache)
        features, search = session_features(vectors, speakers, schema.therapist, session.scenario == "family",
                                             self.settings.context_rows)
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
        neighbours = self._neighbours(model, search, speakers, session.scenario)
        drafts, quarantined = [], []
        for i, row in enumerate(session.rows):
            base = transcript_values(session, row)
            heads = predicted[i]
            near = [GoldRow(model.rows[j].values, model.rows[j].row_index, model.rows[j].roles, float(sim))
                    for j, sim in neighbours[i]]
            values, scores = assemble(schema, row.speaker, row.row_index, len(session.rows), base, heads, near,
                                      maps[i], session.entities)
            problems = draft_problems(session, values)
            if problems:
                quarantined.append(QuarantinedDraft(row_id=row.row_id, reason="; ".join(problems)))
                values, scores = base, {}
            drafts.append(RowDraft(row_id=row.row_id, values=values, scores=scores))
        return SessionDrafts(session_id=session.session_id, backend=NAME, model=self.model(), schema_id=schema.id,
                             rows=tuple(drafts), quarantined=tuple(quarantined), training_gold=dict(model.gold),
                             notes=tuple(model.notes))

    def _neighbours(self, model: TrainedModel, search: np.ndarray, speakers: Sequence[str], scenario: Scenario
                    ) -> list[list[tuple[int, float]]]:
        """Per row: the most similar training rows by the same kind of speaker, this scenario's first."""
        if not len(search) or not len(model.search):
            return [[] for _ in speakers]
        sims = search @ model.search.T
        same_scenario = np.array([s == scenario for s in model.scenarios])
        therapist = np.array([speaker == self.schema.therapist for speaker in speakers])
        # cosine is in [-1, 1]: +2 puts this scenario's rows first, -4 rows of the other kind of speaker last
        rank = sims + same_scenario[None, :] * 2.0 - (model.therapist_rows[None, :] != therapist[:, None]) * 4.0
        k = min(self.settings.neighbours, len(model.rows))
        top = np.argpartition(-rank, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(top, np.argsort(-np.take_along_axis(rank, top, axis=1), axis=1), axis=1)
        return [[(int(j), float(sims[i, j])) for j in row] for i, row in enumerate(order)]
