"""Reference labels of the built-in sample sessions, and simulated annotators who disagree with them.

Annotation is human work, so the demo ships it: `labels/<couple|family>.json` hold hand-written reference
labels for every turn of the two sample scripts (synthetic demo data, see their `note`), and
`simulated_annotations` derives what each of several annotators answers from them. Everything here is a
pure function of the label files: the same call gives the same answers on every machine (choices come from
sha256 of the unit, never from Python's `hash()` or a random generator).

How the simulated annotators differ (by position in `annotators`, cycling for more than three):
- 1st, careful: rarely off (an intensity one point away, now and then a neighbouring label);
- 2nd, label swapper: picks a plausible neighbouring label (accusation -> defense, track -> reframe,
  pursue_withdraw -> attack_attack), adds or drops a target name, writes terse notes;
- 3rd, paraphraser: shifts intensities by 1-2, rewords notes from a small synonym list, writes the
  transcript with contractions, leaves out optional list items.
Each unit (one field of one row, or one part of one list item) has at most one annotator off, except for
a few *contested* label and intensity units where the 2nd and 3rd answer differently from each other and
from the reference. So, with two or more annotators, no wrong answer ever has a majority: consensus recovers
the reference, or the unit has no majority and needs adjudication, and the adjudicator
(`adjudicator_answers`) gives the reference. The gold built from them therefore equals `reference_session`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, JsonValue

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.errors import RescueError
from pipeline.records import Record, SampleTruth, Scenario
from pipeline.label_rules import row_problems
from pipeline.sample.script import Script, load_script
from pipeline.schema import DEFAULT_SCHEMA, AnnotationSchema, SchemaField, SubField, load_schema

ANNOTATORS = ("ann1@example.org", "ann2@example.org", "ann3@example.org")
ADJUDICATOR = "adjudicator@example.org"
SAMPLE_NAMES = ("couple", "family")
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "annotation_schemas" / DEFAULT_SCHEMA
SEED = "rescue-sample-annotators-v1.7"  # one of several tried: every label field shows disagreement in both sessions
PROFILES = ("careful", "swapper", "paraphraser")

# Per kind of unit: (share of contested units, {profile: share of units where only that annotator is off}).
RATES: dict[str, tuple[float, dict[str, float]]] = {
    "label": (0.10, {"careful": 0.03, "swapper": 0.12, "paraphraser": 0.05}),
    "key": (0.0, {"careful": 0.02, "swapper": 0.15, "paraphraser": 0.05}),  # an item's key label: never contested
    "names": (0.0, {"careful": 0.02, "swapper": 0.12, "paraphraser": 0.04}),
    "rows": (0.0, {"careful": 0.03, "swapper": 0.15, "paraphraser": 0.10}),
    "integer": (0.06, {"careful": 0.08, "swapper": 0.08, "paraphraser": 0.35}),
    "text": (0.0, {"careful": 0.04, "swapper": 0.08, "paraphraser": 0.35}),
    "transcript": (0.0, {"careful": 0.0, "swapper": 0.0, "paraphraser": 0.20}),
    "omit": (0.0, {"careful": 0.02, "swapper": 0.04, "paraphraser": 0.10}),
}

_UTTERANCE = {"accusation": ("defense", "recollection"), "defense": ("accusation", "withdrawal"),
              "disclosure": ("reflection", "request"), "request": ("repair", "disclosure"),
              "recollection": ("disclosure", "accusation"), "reflection": ("disclosure", "withdrawal"),
              "repair": ("validation", "disclosure"), "withdrawal": ("defense", "reflection"),
              "validation": ("repair", "disclosure"), "other": ("disclosure", "reflection")}
# label set -> scenario -> label -> (first, second) plausible neighbour: what a careless annotator picks instead.
NEIGHBOURS: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
    "utterance_type": {"couple": _UTTERANCE, "family": _UTTERANCE},
    "support_strategy": {
        "couple": {"track": ("reframe", "detach"), "reframe": ("track", "detach"), "evoke": ("join", "counterbalance"),
                   "enact": ("evoke", "join"), "join": ("evoke", "repair"), "detach": ("goal_align", "reframe"),
                   "repair": ("join", "safeguard"), "counterbalance": ("safeguard", "evoke"),
                   "safeguard": ("counterbalance", "repair"), "goal_align": ("detach", "track")},
        "family": {"join": ("reframe", "repair"), "track": ("boundary", "reframe"),
                   "counterbalance": ("safeguard", "enact"), "enact": ("counterbalance", "boundary"),
                   "boundary": ("track", "enact"), "reframe": ("join", "track"), "repair": ("join", "safeguard"),
                   "safeguard": ("counterbalance", "boundary")}},
    "relation_pattern": {
        "couple": {"pursue_withdraw": ("attack_attack", "withdraw_withdraw"),
                   "attack_attack": ("pursue_withdraw", "mixed_transition"),
                   "withdraw_withdraw": ("pursue_withdraw", "mixed_transition"),
                   "repair_softening": ("constructive_alignment", "mixed_transition"),
                   "constructive_alignment": ("repair_softening", "mixed_transition"),
                   "mixed_transition": ("pursue_withdraw", "repair_softening")},
        "family": {"escalation_conflict": ("cross_generational_coalition", "mixed_transition"),
                   "pursue_withdraw": ("mutual_disengagement", "boundary_hierarchy_strain"),
                   "mutual_disengagement": ("pursue_withdraw", "mixed_transition"),
                   "cross_generational_coalition": ("boundary_hierarchy_strain", "escalation_conflict"),
                   "boundary_hierarchy_strain": ("cross_generational_coalition", "mixed_transition"),
                   "repair_softening": ("cooperative_family_alliance", "mixed_transition"),
                   "cooperative_family_alliance": ("repair_softening", "mixed_transition"),
                   "mixed_transition": ("escalation_conflict", "repair_softening")}},
}
# Rewordings of notes (whole words or phrases); one pass, so a replacement is never reworded again.
SYNONYMS = (
    ("leaning forward", "bent forward"), ("leaning toward", "inclined toward"), ("leans toward", "inclines toward"),
    ("turns toward", "faces"), ("turned toward", "facing"), ("arms folded", "arms crossed"),
    ("arms crossed", "arms folded"), ("looks at", "glances at"), ("looks down", "glances down"),
    ("small smile", "slight smile"), ("warm smile", "kind smile"),
    ("frown", "scowl"), ("scowl", "frown"), ("expression", "look"), ("gestures", "motions"), ("toward", "towards"),
    ("feels", "is feeling"), ("frustrated", "exasperated"), ("angry", "upset"), ("scared", "afraid"),
    ("afraid", "frightened"), ("worried", "anxious"), ("anxious", "worried"), ("hurt", "wounded"),
    ("sad", "sorrowful"), ("hopeful", "optimistic"), ("tender", "affectionate"), ("resentful", "bitter"),
    ("defensive", "guarded"), ("dismissive", "curt"), ("calm", "steady"), ("warm", "kind"),
    ("gentle", "soft"), ("soft", "gentle"), ("sharp", "cutting"), ("flat", "monotone"),
    ("tense", "strained"), ("earnest", "sincere"), ("sincere", "earnest"), ("blame", "fault-finding"),
    ("cycle", "loop"), ("pattern", "sequence"), ("invites", "encourages"), ("asks", "prompts"),
    ("names", "points out"), ("brings", "draws"), ("relieved", "reassured"), ("wary", "cautious"),
)
CONTRACTIONS = (("do not", "don't"), ("does not", "doesn't"), ("did not", "didn't"), ("is not", "isn't"),
                ("I am", "I'm"), ("It is", "It's"), ("it is", "it's"), ("That is", "That's"), ("that is", "that's"),
                ("Let us", "Let's"), ("I will", "I'll"), ("you are", "you're"), ("There is", "There's"))
_CUTS = (", ", " and ", " while ", " after ", ": ")


class SimulatedAnnotation(Record):
    """One simulated annotator's value for one field of one turn (1-based), in the schema's value shape."""

    annotator: str
    turn_index: int = Field(ge=1)
    field: str
    value: JsonValue


@dataclass(frozen=True)
class ReferenceLabels:
    name: str  # "couple" | "family", the script's name
    script: Script
    schema: AnnotationSchema
    note: str
    turns: tuple[dict[str, Any], ...]  # turn_index - 1 -> field -> value (only the fields that apply)

    @property
    def session_id(self) -> str:
        return self.script.session_id

    @property
    def scenario(self) -> Scenario:
        return self.script.scenario

    @property
    def entities(self) -> tuple[str, ...]:
        return self.schema.entities(self.scenario, self.script.participants)


def sample_name(scenario_or_session_id: str) -> str:
    """'couple' / 'family' for a scenario name or a sample session id."""
    if scenario_or_session_id in SAMPLE_NAMES:
        return scenario_or_session_id
    for name in SAMPLE_NAMES:
        if _labels_text(name)[1] == scenario_or_session_id:
            return name
    raise RescueError(f"{scenario_or_session_id!r} is not a built-in sample session",
                      f"use one of {', '.join(SAMPLE_NAMES)} or their session ids "
                      f"({', '.join(_labels_text(n)[1] for n in SAMPLE_NAMES)})")


@cache
def _labels_text(name: str) -> tuple[str, str]:
    text = resources.files("pipeline.sample").joinpath("labels", f"{name}.json").read_text(encoding="utf-8")
    return text, str(json.loads(text).get("session_id", ""))


@cache
def _default_schema() -> AnnotationSchema:
    return load_schema(SCHEMA_FILE)


def reference_labels(scenario_or_session_id: str, schema: AnnotationSchema | None = None) -> ReferenceLabels:
    """The reference labels of a sample session, checked against its script and the schema."""
    name = sample_name(scenario_or_session_id)
    schema = schema or _default_schema()
    where = f"pipeline/sample/labels/{name}.json"
    data = json.loads(_labels_text(name)[0])
    script = load_script(name)
    turns = [{k: v for k, v in turn.items() if k != "turn_index"} for turn in data.get("turns", [])]
    problems = []
    if data.get("session_id") != script.session_id or data.get("schema") != schema.id:
        problems.append(f"session_id/schema must be {script.session_id}/{schema.id}")
    if [t.get("turn_index") for t in data.get("turns", [])] != list(range(1, len(script.turns) + 1)):
        problems.append(f"turn_index must run 1..{len(script.turns)}, one entry per script turn")
    for n, (turn, values) in enumerate(zip(script.turns, turns), start=1):
        said = {"primary_speaker": turn.speaker, "target": list(turn.target), "dialogue_cleaned": turn.text}
        problems += [f"turn {n} {k}: differs from the script" for k, v in said.items() if values.get(k) != v]
        problems += [f"turn {n} {p}" for p in row_problems(schema, script.scenario, script.participants,
                                                            len(script.turns), values)]
    if problems:
        raise RescueError(f"{where}: {'; '.join(problems[:8])}" + (f"; and {len(problems) - 8} more"
                                                                  if len(problems) > 8 else ""),
                          "fix the named turns (labels from annotation_schemas/rescue-v1.yaml, names from "
                          "the session's participants, Therapist and the group label)")
    return ReferenceLabels(name=name, script=script, schema=schema, note=str(data.get("note", "")), turns=tuple(turns))


def reference_session(scenario_or_session_id: str, truth: SampleTruth,
                      schema: AnnotationSchema | None = None) -> BenchmarkSession:
    """The reference labels as a gold session in the released benchmark format, timed by the sample's truth."""
    ref = reference_labels(scenario_or_session_id, schema)
    turns = truth.turns
    same = truth.session_id == ref.session_id and len(turns) == len(ref.turns) and all(
        (t.speaker, list(t.target), t.text) == (v["primary_speaker"], v["target"], v["dialogue_cleaned"])
        for t, v in zip(turns, ref.turns))
    if not same:
        raise RescueError(f"the truth of {truth.session_id} does not match the reference labels of {ref.session_id}",
                          "pass the <stem>.truth.json written by `rescue sample` for this session")
    rows = [BenchmarkRow(start_time=t.start, end_time=t.end, row_index=n, **values)
            for n, (t, values) in enumerate(zip(turns, ref.turns), start=1)]
    return BenchmarkSession(sample_id=ref.session_id, scenario=ref.scenario, participants=list(ref.script.participants),
                            rows=rows)


# -- the simulated annotators ---------------------------------------------------------------------------

def _uniform(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, (SEED, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _off(unit: str, kind: str, n: int) -> dict[int, int]:
    """Annotator position -> rank (0, or 1 for the second of a contested pair) of those who are off on a unit."""
    contested, single = RATES[kind]
    u = _uniform(unit, "who")
    if n >= 3 and u < contested:
        return {1: 0, 2: 1}
    u -= contested
    shares = [single[PROFILES[i % len(PROFILES)]] for i in range(n)]
    scale = min(1.0, 0.9 / sum(shares)) if sum(shares) else 0.0
    for position, share in enumerate(shares):
        if u < share * scale:
            return {position: 0}
        u -= share * scale
    return {}


def _reword(text: str, unit: str, style: str) -> str:
    if style == "terse":
        for cut in _CUTS:
            head = text.split(cut)[0]
            if head != text and len(head.split()) >= 2:
                return head
        return text
    pairs = dict(SYNONYMS if style != "transcript" else CONTRACTIONS)
    found = sorted({m.group(0) for m in re.finditer(_PATTERNS[style != "transcript"], text)},
                   key=lambda s: _uniform(unit, s))
    chosen = found[: (1 if style == "careful" else 2)] if style != "transcript" else found
    if not chosen:
        return text
    pattern = re.compile(r"(?<![A-Za-z'])(" + "|".join(map(re.escape, chosen)) + r")(?![A-Za-z'])")
    return pattern.sub(lambda m: pairs[m.group(0)], text)


_PATTERNS = {flag: re.compile(r"(?<![A-Za-z'])(" + "|".join(
    re.escape(a) for a, _ in sorted(table, key=lambda p: -len(p[0]))) + r")(?![A-Za-z'])")
    for flag, table in ((True, SYNONYMS), (False, CONTRACTIONS))}


class _Annotator:
    """Derives the answers of all annotators for one session from the reference labels."""

    def __init__(self, ref: ReferenceLabels, count: int) -> None:
        self.ref = ref
        self.n = count

    def names(self, value: list[str], exclude: Iterable[str], unit: str) -> list[str]:
        """Add or drop a name: the group label becomes its members, two or more lose one, one gains one."""
        order, group = self.ref.entities, self.ref.schema.group_labels[self.ref.scenario]
        people = [p for p in self.ref.script.participants if p not in exclude]
        if group in value:
            changed = people
        elif len(value) >= 2:
            changed = value[:-1]
        else:
            extra = [p for p in people if p not in value]
            changed = value + [extra[int(_uniform(unit, "name") * len(extra))]] if extra else value
        return sorted(changed, key=order.index) if changed else value

    def variant(self, kind: str, part: SchemaField | SubField, value: Any, position: int, rank: int, unit: str,
                context: dict[str, Any]) -> Any:
        profile = PROFILES[position % len(PROFILES)]
        if kind in ("label", "key"):
            options = NEIGHBOURS[part.labels or ""][self.ref.scenario].get(value, ())  # type: ignore[index]
            pick = rank if context["contested_pair"] else int(profile == "paraphraser")
            return options[pick % len(options)] if options else value
        if kind == "names":
            return self.names(value, context["exclude"], unit)
        if kind == "rows":
            if len(value) >= 2:
                return value[1:]
            later = [r for r in range(1, context["turn"]) if r not in value]
            return sorted(value + later[-1:]) if later else value
        if kind == "integer":
            low, high = part.min, part.max
            if context["contested_pair"]:  # far apart on both sides: no majority within the consensus spread
                return max(low, value - 3) if rank == 0 else min(high, value + 3)  # type: ignore[type-var]
            size = 1 if profile != "paraphraser" else 1 + int(_uniform(unit, "size") * 2)
            step = size if _uniform(unit, "sign") < 0.5 else -size
            return value + step if low <= value + step <= high else value - step  # type: ignore[operator]
        if kind == "transcript":
            changed = _reword(value, unit, "transcript")
            return changed if changed != value else value.rstrip(".")
        style = {"careful": "careful", "swapper": "terse", "paraphraser": "paraphraser"}[profile]
        changed = _reword(value, unit, style)
        return changed if changed != value else _reword(value, unit, "terse" if style != "terse" else "careful")

    def scalar(self, kind: str, part: SchemaField | SubField, value: Any, unit: str,
               context: dict[str, Any]) -> list[Any]:
        """The value each annotator gives for one unit."""
        off = _off(unit, kind, self.n)
        answers = [value] * self.n
        context = {**context, "contested_pair": len(off) > 1}
        for position, rank in off.items():
            answers[position] = self.variant(kind, part, value, position, rank, unit, context)
        return answers

    def field(self, field: SchemaField, values: dict[str, Any], turn: int) -> list[Any]:
        unit = f"{self.ref.session_id}|{turn}|{field.name}"
        value = values[field.name]
        speaker = values[self.ref.schema.speaker_field]
        if field.type != "items":
            kind = _kind(field)
            if kind is None:
                return [value] * self.n
            return self.scalar(kind, field, value, unit, {"exclude": [speaker], "turn": turn})
        per_item: list[list[Any]] = []
        for number, item in enumerate(value):
            item_unit = f"{unit}|{item[field.key] if field.key else number}"
            own = [item[sub.name] for sub in field.items if sub.type == "entity"]
            parts = {sub.name: self.scalar(kind, sub, item[sub.name], f"{item_unit}|{sub.name}",
                                           {"exclude": own, "turn": turn})
                     if (kind := _kind(sub, field.key)) else [item[sub.name]] * self.n for sub in field.items}
            omitted = set(_off(item_unit, "omit", self.n)) if _optional(field, item, speaker, number) else set()
            rekeyed = {a for a in range(self.n) if field.key and parts[field.key][a] != item[field.key]}
            # Whoever leaves an item out or changes its key is off on the whole item; with one such annotator
            # the others must agree on every part, else the item's parts would be settled by two answers.
            whole = omitted or rekeyed
            for a in range(self.n) if whole else ():
                if a not in whole:
                    for sub in field.items:
                        parts[sub.name][a] = item[sub.name]
            per_item.append([None if a in omitted else {name: parts[name][a] for name in parts}
                             for a in range(self.n)])
        return [[item[a] for item in per_item if item[a] is not None] for a in range(self.n)]


def _kind(part: SchemaField | SubField, key: str | None = None) -> str | None:
    if part.type == "label":
        return "key" if part.name == key else "label"
    if part.type == "text":
        return "transcript" if getattr(part, "prefill", None) == "text" else "text"
    return {"entities": "names", "row_refs": "rows", "integer": "integer"}.get(part.type)


def _optional(field: SchemaField, item: dict[str, Any], speaker: str, number: int) -> bool:
    """List items an annotator may leave out: all but the speaker's own emotion, the support strategy and
    the first viewpoint (what a row is mainly about)."""
    if field.name == "internal_emotion":
        return item["person"] != speaker
    if field.name == "viewpoints_attitudes":
        return number > 0
    return field.name != "support_strategy"


def simulated_annotations(scenario_or_session_id: str, annotators: Sequence[str] = ANNOTATORS,
                          schema: AnnotationSchema | None = None) -> list[SimulatedAnnotation]:
    """Every annotator's answer to every field that applies to every turn, annotator by annotator, in turn
    and schema order. Deterministic; see the module doc for how the annotators differ."""
    if not annotators or len(set(annotators)) != len(annotators):
        raise RescueError(f"annotators {list(annotators)!r} must be one or more distinct accounts",
                          "pass distinct e-mail addresses")
    ref = reference_labels(scenario_or_session_id, schema)
    engine = _Annotator(ref, len(annotators))
    answers: list[list[SimulatedAnnotation]] = [[] for _ in annotators]
    for turn, values in enumerate(ref.turns, start=1):
        for field in ref.schema.fields:
            if field.name not in values:
                continue
            for position, value in enumerate(engine.field(field, values, turn)):
                answers[position].append(SimulatedAnnotation(annotator=annotators[position], turn_index=turn,
                                                             field=field.name, value=value))
    return [answer for per_annotator in answers for answer in per_annotator]


def values_by_row(annotations: Iterable[SimulatedAnnotation]) -> dict[tuple[str, int], dict[str, JsonValue]]:
    """(annotator, turn_index) -> field -> value: one Label Studio annotation per annotator and turn."""
    rows: dict[tuple[str, int], dict[str, JsonValue]] = {}
    for a in annotations:
        rows.setdefault((a.annotator, a.turn_index), {})[a.field] = a.value
    return rows


def disputed_units(annotations: Iterable[SimulatedAnnotation]) -> list[tuple[int, str]]:
    """(turn_index, field) where the annotators' answers are not all the same (or someone left it out)."""
    answers: dict[tuple[int, str], dict[str, str]] = {}
    everyone = set()
    for a in annotations:
        everyone.add(a.annotator)
        answers.setdefault((a.turn_index, a.field), {})[a.annotator] = json.dumps(a.value, sort_keys=True)
    return sorted(unit for unit, by in answers.items() if len(by) < len(everyone) or len(set(by.values())) > 1)


def adjudicator_answers(scenario_or_session_id: str, annotations: Iterable[SimulatedAnnotation], *,
                        adjudicator: str = ADJUDICATOR, whole_rows: bool = False,
                        schema: AnnotationSchema | None = None) -> list[SimulatedAnnotation]:
    """The adjudicator's answers: the reference value of every disputed (turn, field).

    whole_rows: answer every field of a turn with any dispute, as one Label Studio annotation of the row does
    (an annotation that leaves fields out would read as emptying them).
    """
    ref = reference_labels(scenario_or_session_id, schema)
    disputed = set(disputed_units(annotations))
    turns = sorted({turn for turn, _ in disputed})
    return [SimulatedAnnotation(annotator=adjudicator, turn_index=turn, field=field.name,
                                value=ref.turns[turn - 1][field.name])
            for turn in turns for field in ref.schema.fields
            if field.name in ref.turns[turn - 1] and (whole_rows or (turn, field.name) in disputed)]
