"""The `gold-model` backend: learns from gold rows, offline, and drafts every categorical, set and text field
where that helps.

Learning and predicting: gold_model_fit.py. Gating (gate.py, crossval.py): per field, the model's gain over
the majority baseline is measured on the training gold by cross-validation grouped by session; a field is
drafted from the model only where that gain's bootstrap interval lies above 0, else from the baseline or not
at all, whichever scored better. Every draft goes through the annotation validator (validate.py): a baseline
value that does not fit the row is left out; a draft that still fails keeps the transcript values and is
quarantined with the reason. The trained model and its gates are kept under build/cache/preannotate/models/,
keyed by the training files' sha256, the settings and the schema, so the sessions of one build train once.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import JsonValue

from pipeline import __version__
from pipeline.agreement.textsim import EmbeddingCache
from pipeline.errors import RescueError
from pipeline.preannotate.baseline import field_majorities, majority_for
from pipeline.preannotate.crossval import baseline_values, gate_fields
from pipeline.preannotate.drafts import QuarantinedDraft, RowDraft, SessionDrafts
from pipeline.preannotate.gold_features import EmbedStats, embed_texts
from pipeline.preannotate.gold_model_fit import TrainedModel, predict_rows, train
from pipeline.preannotate.gold_rows import read_training_gold
from pipeline.preannotate.roles import role_maps
from pipeline.preannotate.session import DraftSession
from pipeline.preannotate.settings import GateSettings, GoldModelSettings
from pipeline.preannotate.transcript_backend import transcript_values
from pipeline.preannotate.validate import draft_problems
from pipeline.records import TranscriptRow
from pipeline.schema import AnnotationSchema
from pipeline.store import sha256_json, write_bytes_atomic

NAME = "gold-model"
MODEL_FAMILY = "minilm-logreg"
TRAINING_CODE = ("gold_model_backend.py", "gold_model_fit.py", "gold_heads.py", "gold_features.py", "gold_rows.py",
                 "roles.py", "baseline.py", "crossval.py", "gate.py", "margins.py", "scoring.py")


def _code_digest() -> str:
    """The training code's own hash: a cached model is reused only by the code that made it."""
    import hashlib

    here = Path(__file__).parent
    return hashlib.sha256(b"\0".join((here / name).read_bytes() for name in TRAINING_CODE)).hexdigest()


class GoldModelBackend:
    name = NAME

    def __init__(self, schema: AnnotationSchema, settings: GoldModelSettings, train_files: Sequence[Path],
                 cache_dir: Path | None, gate: GateSettings | None = None) -> None:
        self.schema, self.settings, self.train_files, self.cache_dir = schema, settings, list(train_files), cache_dir
        self.gate = gate or GateSettings()
        self.stats = EmbedStats()
        self.gate_seconds = 0.0  # the cross-validation behind the gates, when this backend trained the model
        self._trained: TrainedModel | None = None
        self._cache: EmbeddingCache | None = None

    @property
    def embeddings_cache(self) -> Path | None:
        from pipeline.preannotate.gold_features import embedding_cache_path

        return embedding_cache_path(self.cache_dir) if self.cache_dir else None

    def trained(self) -> TrainedModel:
        if self._trained is None:
            sessions, gold = read_training_gold(self.train_files, self.schema)
            if not any(s.rows for s in sessions):
                raise RescueError(f"gold-model: the training gold ({', '.join(map(str, self.train_files))}) holds no "
                                  "rows", "train on a gold file with annotated sessions ([tool.rescue.preannotate] "
                                  "train_gold or --train-gold)")
            key = sha256_json({"gold": sorted(gold.values()), "settings": self.settings.model_dump(),
                               "gate": self.gate.model_dump(), "schema": self.schema.model_dump(mode="json"),
                               "code": __version__, "training_code": _code_digest()})
            path = self.cache_dir / "models" / f"{key}.pkl" if self.cache_dir else None
            if path is not None and path.is_file():
                self._trained = pickle.loads(path.read_bytes())  # our own build folder's cache
            else:
                model = train(sessions, gold, self.schema, self.settings, self.embeddings_cache, self.stats)
                started = time.perf_counter()
                model.gates = gate_fields(sessions, self.schema, self.settings, self.gate, self.embeddings_cache,
                                          self.stats)
                self.gate_seconds = time.perf_counter() - started
                model.majorities = field_majorities(self.schema, [g.field for g in model.gates], sessions)
                self._trained = model
                if path is not None:
                    write_bytes_atomic(path, pickle.dumps(self._trained))
        return self._trained

    def model(self) -> str:
        digest = sha256_json(sorted(self.trained().gold.values()))[:12]
        return f"{MODEL_FAMILY}-gold-{digest}"

    def draft(self, session: DraftSession) -> SessionDrafts:
        model = self.trained()
        schema = session.schema
        if self._cache is None:
            self._cache = EmbeddingCache(self.embeddings_cache)
        vectors = embed_texts([row.text for row in session.rows], self.embeddings_cache, self.stats, self._cache)
        speakers = [row.speaker for row in session.rows]
        maps = role_maps(speakers, list(session.participants), schema.therapist, schema.group_labels[session.scenario])
        drafts, quarantined = [], []
        for row, (values, scores), roles in zip(session.rows, predict_rows(model, session, self.settings, vectors),
                                                maps):
            base = transcript_values(session, row)
            values, scores, fallback = _gated(model, session, row, values, scores, base, roles)
            problems = draft_problems(session, values)
            unfit = {name for name in fallback if any(p.startswith(f"{name}:") for p in problems)}
            if unfit:  # a baseline value that does not fit this row (a row number past its end, say): left out
                values = {k: v for k, v in values.items() if k not in unfit} | {k: base[k] for k in unfit if k in base}
                scores = {k: v for k, v in scores.items() if k not in unfit}
                problems = draft_problems(session, values)
            if problems:
                quarantined.append(QuarantinedDraft(row_id=row.row_id, reason="; ".join(problems)))
                values, scores = base, {}
            drafts.append(RowDraft(row_id=row.row_id, values=values, scores=scores))
        return SessionDrafts(session_id=session.session_id, backend=NAME, model=self.model(), schema_id=schema.id,
                             rows=tuple(drafts), quarantined=tuple(quarantined), training_gold=dict(model.gold),
                             notes=tuple(model.notes), gates=model.gates)


def _gated(model: TrainedModel, session: DraftSession, row: TranscriptRow, values: dict[str, JsonValue],
           scores: dict[str, float], base: dict[str, JsonValue], roles) -> tuple[  # type: ignore[no-untyped-def]
               dict[str, JsonValue], dict[str, float], set[str]]:
    """One row's draft with each gated field from where its gate says: the model's value, the baseline's (scored
    by its share of the training rows), or none (the transcript's own value, if any, stays). Also the fields
    that took the baseline."""
    schema = session.schema
    not_model = [g.field for g in model.gates if g.source != "model"]
    values = {k: v for k, v in values.items() if k not in not_model}
    scores = {k: v for k, v in scores.items() if k not in not_model}
    values.update({k: base[k] for k in not_model if k in base})
    wanted = [g.field for g in model.gates if g.source == "baseline"]
    chosen = baseline_values(schema, wanted, model.majorities, session.scenario, row.speaker, roles)
    therapist = row.speaker == schema.therapist
    for name, value in chosen.items():
        found = majority_for(model.majorities, name, session.scenario, therapist)
        values[name] = value
        scores[name] = found.share if found is not None else 0.0
    return values, scores, set(chosen)
