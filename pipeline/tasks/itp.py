"""ITP (Intervention Time Prediction): after a non-therapist row, should the therapist take the next turn?

Candidates (spec section 4, ITP): "yes" after row k-1 when row k is the therapist's and row k-1 is not;
"no" after row i when rows i and i+1 are both someone else's. Per sample each class is optionally capped,
then both are sampled evenly down to the smaller class; a sample without both classes gives nothing.

Leak fixes (spec 6.6, 6.7): the id is a keyed hash of sample and decision row, candidate_type and
boundary_type live in `meta`, and the decision row is given once, as the last context row, with
`decision_after_row` holding only its index.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pipeline.tasks.context import SessionView, clean
from pipeline.tasks.instances import TaskInstance, opaque_id
from pipeline.tasks.sampling import even_sample
from pipeline.tasks.settings import IdSettings, ITPSettings


@dataclass(frozen=True)
class Candidate:
    decision_row: int
    should_speak: str
    candidate_type: str
    boundary_type: str


def itp_candidates(view: SessionView) -> tuple[list[Candidate], list[Candidate]]:
    """All positive and negative decision points of a sample, each list in row order."""
    rows = view.rows
    positives = [
        Candidate(k - 1, "yes", "actual_therapist_entry", "therapist_entry")
        for k in range(2, len(rows) + 1)
        if view.is_therapist(rows[k - 1]) and not view.is_therapist(rows[k - 2])
    ]
    negatives = [
        Candidate(i, "no", "continue_listening",
                  "same_speaker_continuation" if clean(rows[i - 1].primary_speaker) == clean(rows[i].primary_speaker)
                  else "non_therapist_exchange")
        for i in range(1, len(rows))
        if not view.is_therapist(rows[i - 1]) and not view.is_therapist(rows[i])
    ]
    return positives, negatives


def balance(positives: list[Candidate], negatives: list[Candidate], settings: ITPSettings) -> list[Candidate]:
    """Cap, then balance the classes per sample; the survivors sorted by decision row."""
    cap = settings.max_candidates_per_class_per_sample
    if cap > 0:
        positives, negatives = even_sample(positives, cap), even_sample(negatives, cap)
    if settings.balance:
        n = min(len(positives), len(negatives))
        if n == 0:
            return []
        positives, negatives = even_sample(positives, n), even_sample(negatives, n)
    return sorted(positives + negatives, key=lambda c: c.decision_row)


def build_itp(view: SessionView, settings: ITPSettings, ids: IdSettings) -> tuple[list[TaskInstance], Counter]:
    positives, negatives = itp_candidates(view)
    kept = balance(positives, negatives, settings)
    dropped: Counter = Counter()
    if not kept and (positives or negatives):
        dropped["sample without both classes"] += len(positives) + len(negatives)
    else:
        dropped["removed by the per-sample cap or class balancing"] += len(positives) + len(negatives) - len(kept)
    instances = [
        TaskInstance(
            task="itp", id=opaque_id("itp", ids.itp_key, view.sample_id, c.decision_row), sample_id=view.sample_id,
            scenario=view.scenario, row_index=c.decision_row,
            input={"participants": list(view.participants), "decision_after_row": c.decision_row,
                   "prior_context": view.prior_context(c.decision_row + 1, settings.context_size)},
            gold={"should_speak": c.should_speak},
            meta={"couple": view.couple, "candidate_type": c.candidate_type, "boundary_type": c.boundary_type,
                  "next_row_index": c.decision_row + 1,
                  "next_speaker": clean(view.row(c.decision_row + 1).primary_speaker)},
        )
        for c in kept
    ]
    return instances, +dropped
