"""What the gold-model backend predicts with classifiers ("heads"), and the classifiers themselves.

From the schema: every `label` field (utterance_type, relation_cycle_state), every `entities` field as a
set (target), and per list field the set of its items' keys (the item persons of body_posture,
facial_expressions, internal_emotion, ...; the strategy types of support_strategy; the targets of
viewpoints_attitudes), the union of each `entities` sub-field (support_strategy targets, interaction
targets) and each `integer` sub-field of the first item (intensity). Names are roles (pipeline/preannotate/
roles.py); a set is predicted as one class (its members joined), so its score is the probability of the
whole set. A head whose labels differ between scenarios is learnt per scenario.

Classifier: a multinomial logistic regression on the row features. Values seen in fewer than
`min_class_rows` training rows are not predicted. With at least `calibrate_min_rows` rows and
`calibration_folds` rows of every value, the scores come from CalibratedClassifierCV (sigmoid, k-fold);
otherwise they are the regression's own probabilities; with one value left, the score is its share of the
training rows. `HeadModel.method` says which.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import JsonValue

from pipeline.annotate.config import anchor
from pipeline.preannotate.settings import GoldModelSettings
from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema, SchemaField

SET_JOIN = "|"
Kind = Literal["label", "set", "keys", "sub_set", "sub_int"]


@dataclass(frozen=True)
class Head:
    name: str  # field, or field.sub
    field: str
    kind: Kind
    sub: str | None = None
    per_scenario: bool = False
    per_speaker: bool = False  # a field of every row: therapist and client rows are learnt apart

    def value(self, values: dict[str, JsonValue]) -> str | None:
        """This head's class in one row's role-encoded values; None when the row does not answer it."""
        if self.field not in values:
            return None
        value = values[self.field]
        if self.kind == "label":
            return str(value)
        if self.kind == "set":
            return SET_JOIN.join(sorted(set(value)))  # type: ignore[arg-type]
        items = value or []
        if self.kind == "keys":
            keys = {str(i[self.sub]) for i in items if i.get(self.sub)}  # type: ignore[union-attr, index]
            return SET_JOIN.join(sorted(keys))
        if not items:
            return None
        if self.kind == "sub_set":
            return SET_JOIN.join(sorted({m for i in items for m in i.get(self.sub) or []}))  # type: ignore[union-attr]
        first = items[0].get(self.sub)  # type: ignore[union-attr, index]
        return None if first is None else str(first)


def split_set(value: str) -> list[str]:
    return [part for part in value.split(SET_JOIN) if part]


def _differs(schema: AnnotationSchema, label_set: str | None) -> bool:
    if not label_set:
        return False
    return schema.labels(label_set, "couple") != schema.labels(label_set, "family")


def schema_heads(schema: AnnotationSchema) -> list[Head]:
    heads: list[Head] = []
    for f in schema.fields:
        if not f.annotated:
            continue
        both = f.applies_to == "all"
        if f.type == "label":
            heads.append(Head(f.name, f.name, "label", per_scenario=_differs(schema, f.labels), per_speaker=both))
        elif f.type == "entities":
            heads.append(Head(f.name, f.name, "set", per_speaker=both))
        elif f.type == "items":
            heads.extend(_item_heads(schema, f, both))
    return heads


def _item_heads(schema: AnnotationSchema, f: SchemaField, both: bool) -> list[Head]:
    key = f.key or anchor(f).name
    key_part = next(sub for sub in f.items if sub.name == key)
    heads = [Head(f.name, f.name, "keys", key, per_scenario=_differs(schema, key_part.labels), per_speaker=both)]
    for sub in f.items:
        if sub.name == key:
            continue
        if sub.type == "entities":
            heads.append(Head(f"{f.name}.{sub.name}", f.name, "sub_set", sub.name, per_speaker=both))
        elif sub.type == "integer":
            heads.append(Head(f"{f.name}.{sub.name}", f.name, "sub_int", sub.name, per_speaker=both))
    return heads


def head_key(head: Head, scenario: Scenario, therapist_row: bool) -> str:
    """Which classifier answers this head on a row: per scenario and per kind of speaker where they differ."""
    key = f"{head.name}@{scenario}" if head.per_scenario else head.name
    return f"{key}:{'therapist' if therapist_row else 'client'}" if head.per_speaker else key


@dataclass
class HeadModel:
    classes: list[str]
    method: Literal["calibrated", "plain", "constant"]
    rows: int
    estimator: object = None
    shares: list[float] = field(default_factory=list)
    direct: bool = False  # probabilities computed by `_calibrated_proba` (checked equal to scikit-learn's at fit)

    def predict(self, features: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Per row: the most probable class and its probability."""
        if self.estimator is None:
            best = int(np.argmax(self.shares))
            return [self.classes[best]] * len(features), np.full(len(features), self.shares[best])
        if self.direct:
            probs = _calibrated_proba(self.estimator, features)
        else:
            probs = self.estimator.predict_proba(features)  # type: ignore[attr-defined]
        order = list(self.estimator.classes_)  # type: ignore[attr-defined]
        best = probs.argmax(axis=1)
        return [str(order[i]) for i in best], probs[np.arange(len(best)), best]

    def describe(self) -> str:
        return f"{self.method} on {self.rows} rows, {len(self.classes)} value(s)"


def fit_head(features: np.ndarray, labels: list[str], settings: GoldModelSettings) -> HeadModel | None:
    counts = Counter(labels)
    kept = sorted(label for label, n in counts.items() if n >= settings.min_class_rows)
    if not kept:
        return None
    mask = np.array([label in kept for label in labels])
    X, y = features[mask], np.array([label for label in labels if label in kept])
    if len(kept) == 1:
        return HeadModel(kept, "constant", int(mask.sum()), shares=[float(mask.sum()) / len(labels)])
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression

    from sklearn import config_context

    # lbfgs on ~70 whitened features; a looser tolerance than the default stops once the scores settle
    base = LogisticRegression(C=settings.regularization, tol=1e-3, max_iter=100)
    calibrate = len(y) >= settings.calibrate_min_rows and min(counts[k] for k in kept) >= settings.calibration_folds
    estimator = (CalibratedClassifierCV(base, cv=settings.calibration_folds, method="sigmoid") if calibrate
                 else base)
    with warnings.catch_warnings(), config_context(assume_finite=True):
        warnings.simplefilter("ignore")  # convergence notes on tiny training sets: the scores say how sure it is
        estimator.fit(X, y)
    direct = False
    if calibrate:  # scikit-learn's per-call input checks cost more than the arithmetic for one session's rows
        try:
            direct = bool(np.allclose(_calibrated_proba(estimator, X[:200]), estimator.predict_proba(X[:200]),
                                      atol=1e-6))
        except (AttributeError, IndexError, ValueError):
            direct = False
    return HeadModel(kept, "calibrated" if calibrate else "plain", len(y), estimator, direct=direct)


def _calibrated_proba(calibrated: object, features: np.ndarray) -> np.ndarray:
    """CalibratedClassifierCV(LogisticRegression, method="sigmoid").predict_proba in numpy: per fold, the
    regression's decision values through each class's sigmoid, normalised; the mean over folds. Used only
    where `fit_head` found it equal to scikit-learn's own answer."""
    from scipy.special import expit

    members = calibrated.calibrated_classifiers_  # type: ignore[attr-defined]
    total = None
    for member in members:
        model = member.estimator
        decision = features @ model.coef_.T + model.intercept_
        if len(member.calibrators) == 1:  # binary: one sigmoid for the positive class
            c = member.calibrators[0]
            positive = expit(-(c.a_ * decision[:, 0] + c.b_))
            proba = np.column_stack([1.0 - positive, positive])
        else:
            proba = np.column_stack([expit(-(c.a_ * decision[:, k] + c.b_))
                                     for k, c in enumerate(member.calibrators)])
            sums = proba.sum(axis=1, keepdims=True)
            proba = np.divide(proba, sums, out=np.full_like(proba, 1.0 / proba.shape[1]), where=sums > 0)
        total = proba if total is None else total + proba
    return total / len(members)  # type: ignore[operator]
