"""The only module that imports pyannote.core, pyannote.database and pyannote.metrics (lazily): RTTM files
and the diarization error rate. Turns cross this boundary as plain (start, end, label) tuples."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

Turn = tuple[float, float, str]


def _annotation(uri: str, turns: Iterable[Turn]):  # -> pyannote.core.Annotation
    from pyannote.core import Annotation, Segment

    annotation = Annotation(uri=uri)
    for track, (start, end, label) in enumerate(turns):
        annotation[Segment(start, end), track] = label  # one track per turn: overlapping turns are all kept
    return annotation


def write_rttm(path: Path, uri: str, turns: Iterable[Turn]) -> None:
    """RTTM written by pyannote.core (`SPEAKER <uri> 1 <start> <duration> <NA> <NA> <label> <NA> <NA>`)."""
    with path.open("w", encoding="utf-8") as handle:
        _annotation(uri, turns).write_rttm(handle)


def read_rttm(path: Path) -> dict[str, list[Turn]]:
    """Turns per file uri of an RTTM file (pyannote.database's reader)."""
    os.environ["PYANNOTE_METRICS_ENABLED"] = "false"
    from pyannote.database.util import load_rttm

    return {uri: [(seg.start, seg.end, str(label)) for seg, _, label in ann.itertracks(yield_label=True)]
            for uri, ann in load_rttm(str(path)).items()}


def diarization_error(reference: Iterable[Turn], hypothesis: Iterable[Turn], duration: float, *, collar: float,
                      skip_overlap: bool) -> dict[str, float]:
    """DER over [0, duration] with pyannote.metrics (optimal label mapping), and its components in seconds."""
    from pyannote.core import Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    metric = DiarizationErrorRate(collar=collar, skip_overlap=skip_overlap)
    uem = Timeline([Segment(0.0, duration)])
    detail = metric(_annotation("ref", reference), _annotation("hyp", hypothesis), uem=uem, detailed=True)
    return {
        "der": float(detail["diarization error rate"]),
        "total": float(detail["total"]),
        "confusion": float(detail["confusion"]),
        "missed_detection": float(detail["missed detection"]),
        "false_alarm": float(detail["false alarm"]),
    }
