"""VP (Viewpoint Prediction): client rows with the speaker's own viewpoints, at most 5 per sample picked
evenly over the whole sample; no word minimum, no early cut-off (spec section 4, VP)."""

from __future__ import annotations

from collections import Counter

from pipeline.benchmark_format import BenchmarkRow
from pipeline.tasks.context import SessionView, clean, first_appearance
from pipeline.tasks.er import current_row_fields
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.sampling import pick_evenly
from pipeline.tasks.settings import VPSettings


def speaker_viewpoints(row: BenchmarkRow) -> list[dict[str, str]]:
    speaker = clean(row.primary_speaker)
    return [
        {"source": clean(v.source), "target": clean(v.target), "viewpoint": clean(v.viewpoint),
         "attitude": clean(v.attitude)}
        for v in row.viewpoints_attitudes
        if clean(v.source) == speaker and clean(v.target) and clean(v.viewpoint)
    ]


def vp_participants(view: SessionView, include_therapist: bool) -> list[str]:
    """Released vp.jsonl: names by first appearance over speakers, targets and viewpoint source/target,
    Therapist included (spec 6.14). The list is the same for every instance of a sample."""
    if not include_therapist:
        return list(view.participants)
    found = first_appearance(view.session, view.therapist, view.all_group_labels, with_strategy_targets=False,
                             with_viewpoints=True, keep_therapist=True)
    return list(dict.fromkeys([*found, *view.participants]))


def build_vp(view: SessionView, settings: VPSettings) -> tuple[list[TaskInstance], Counter]:
    dropped: Counter = Counter()
    candidates: list[tuple[BenchmarkRow, list[dict[str, str]]]] = []
    for row in view.rows:
        if not view.is_client(row):
            continue
        views = speaker_viewpoints(row)
        if views:
            candidates.append((row, views))
        else:
            dropped["client row without the speaker's viewpoints"] += 1
    picked = pick_evenly(candidates, settings.checkpoints_per_sample)
    dropped["over the per-sample checkpoint cap"] += len(candidates) - len(picked)
    participants = vp_participants(view, settings.participants_include_therapist)
    instances = []
    for row, views in picked:
        fields = current_row_fields(view, row)
        speaker_first = {key: fields[key] for key in ("row_index", "timestamp", "speaker")}
        rest = {key: value for key, value in fields.items() if key not in speaker_first}
        instances.append(TaskInstance(
            task="vp", id=row_id(view.sample_id, row.row_index), sample_id=view.sample_id, scenario=view.scenario,
            row_index=row.row_index,
            input={**speaker_first, "participants": participants, **rest,
                   "prior_context": view.prior_context(row.row_index, settings.context_size)},
            gold={"viewpoints": views},
            meta={"couple": view.couple, "source_file": view.session.source_file},
        ))
    return instances, +dropped
