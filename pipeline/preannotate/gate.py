"""Drafts only where they help: per field, the model, the majority baseline or nothing.

From cross-validated answers on the training gold (crossval.py), each field is scored three ways: the model's
drafts, the baseline's (the field's most frequent value for the row's scenario and kind of speaker,
baseline.py) and no draft at all. The fallback is the better of baseline and nothing (a tie goes to nothing:
no anchoring on a constant that does not help; so a text draft is never worse than an empty one). The field
is drafted from the model only where the model's margin over the fallback has a bootstrap interval over
sessions above 0, measured on at least `min_sessions` sessions (margins.py); otherwise from the fallback.

A field's score is the mean over its scored units (scoring.py: a label field's macro-F1; a list field's item
keys, item targets, intensity and texts), each computed over the rows whose gold answers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import JsonValue

from pipeline.preannotate.drafts import FieldGate
from pipeline.preannotate.margins import Margin, Tally, combined, label_tally, margin, mean_tally
from pipeline.preannotate.scoring import PRIMARY, Unit, row_scores
from pipeline.preannotate.settings import GateSettings

OPTIONS = ("model", "baseline", "nothing")


@dataclass
class UnitAnswers:
    """One unit's gold values on held-out rows, each option's answers, and the session of each row."""

    gold: list[JsonValue] = field(default_factory=list)
    sessions: list[int] = field(default_factory=list)
    answers: dict[str, list[JsonValue | None]] = field(default_factory=lambda: {o: [] for o in OPTIONS})

    def add(self, session: int, gold: JsonValue, answers: dict[str, JsonValue | None]) -> None:
        self.gold.append(gold)
        self.sessions.append(session)
        for option in OPTIONS:
            self.answers[option].append(answers.get(option))


def unit_tally(unit: Unit, gold: Sequence[JsonValue], pred: Sequence[JsonValue | None], sessions: Sequence[int],
               n_sessions: int) -> Tally:
    """A unit's answers as per-session counts of its primary measure (scoring.PRIMARY)."""
    if unit.kind == "label":
        return label_tally([str(g) for g in gold], [None if p is None else str(p) for p in pred], sessions,
                           n_sessions)
    return mean_tally(row_scores(unit, gold, pred).tolist(), sessions, n_sessions)


def _point(tallies: Sequence[Tally]) -> float | None:
    if not tallies:
        return None
    value = combined(tallies, np.ones((1, tallies[0].counts.shape[0])))[0]
    return None if np.isnan(value) else round(float(value), 4)


def decide(name: str, units: Sequence[Unit], found: dict[str, UnitAnswers], n_sessions: int,
           settings: GateSettings) -> FieldGate:
    """The gate of one field from its units' cross-validated answers."""
    answered = [u for u in units if found.get(u.name) and found[u.name].gold]
    measure = ", ".join(f"{u.name} {PRIMARY[u.kind]}" for u in units)
    tallies = {option: [unit_tally(u, found[u.name].gold, found[u.name].answers[option], found[u.name].sessions,
                                   n_sessions) for u in answered] for option in OPTIONS}
    scores = {option: _point(tallies[option]) for option in OPTIONS}
    rows = max((len(found[u.name].gold) for u in answered), default=0)
    baseline, nothing = scores["baseline"], scores["nothing"]
    against = "baseline" if baseline is not None and (nothing is None or baseline > nothing) else "nothing"
    gain = margin(tallies["model"], tallies[against], rows, samples=settings.bootstrap_samples, seed=settings.seed,
                  level=settings.confidence)
    if not answered:
        reason = "no held-out gold row answers it"
    elif gain.significant(settings.min_sessions):
        reason = f"the model beats the {against} by {gain.describe()}"
    elif gain.sessions < settings.min_sessions:
        reason = (f"measured on {gain.sessions} session(s), fewer than the {settings.min_sessions} a significant "
                  f"gain needs: model - {against} = {gain.describe()}")
    else:
        reason = f"no significant gain over the {against}: model - {against} = {gain.describe()}"
    source = "model" if answered and gain.significant(settings.min_sessions) else against
    if source == "baseline":
        reason += f"; the baseline scores {baseline} against {nothing} for no draft"
    return FieldGate(field=name, source=source, reason=reason, measure=measure, scores=scores, against=against,
                     margin=gain)


def field_units(units: Sequence[Unit]) -> dict[str, list[Unit]]:
    """Schema field -> its scored units, in schema order."""
    out: dict[str, list[Unit]] = {}
    for unit in units:
        out.setdefault(unit.field, []).append(unit)
    return out


def untestable(fields: Sequence[str], units: dict[str, list[Unit]], why: str) -> tuple[FieldGate, ...]:
    """Gates when nothing can be cross-validated: every field is left undrafted, saying why."""
    return tuple(FieldGate(field=name, source="nothing", reason=why,
                           measure=", ".join(f"{u.name} {PRIMARY[u.kind]}" for u in units[name]),
                           scores={o: None for o in OPTIONS}, against="nothing",
                           margin=Margin(value=None, low=None, high=None, sessions=0)) for name in fields)


__all__ = ["OPTIONS", "UnitAnswers", "decide", "field_units", "unit_tally", "untestable"]
