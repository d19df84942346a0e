"""The dataset card's sections for a stranger: the prediction format per task, the annotation process and its
agreement, sensitive data / consent / limitations, and the citation. Plain text from records: no time, no
machine, so the card stays byte-identical on rebuild."""

from __future__ import annotations

import json

from pipeline.tasks.registry import TASK_SPECS
from pipeline.tasks.release_card import AgreementSummary, CardSettings, FieldAgreement

PAPER = "RESCUE-BENCH (arXiv 2609.09657)"


def prediction_section() -> str:
    rows = "\n".join(f"| `{t}` | {task.prediction.described} | "
                     f"`{json.dumps({'id': f'{t}-...', **task.prediction.example}, ensure_ascii=False)}` |"
                     for t, task in TASK_SPECS.items())
    return f"""## Prediction format

A prediction file is JSON Lines: one object per instance of `tasks/<task>.jsonl`, with that instance's `id`
and the task's answer fields. `rescue evaluate --task <task> --predictions <file>` scores it; an instance
with no line, or with two, counts as wrong, and unknown ids, unreadable lines and invalid values are listed
by line. Ranked labels must come from the instance's own candidate list (`candidate_*_labels`); the labels in
the examples below only show the shape.

| task | fields of one prediction | example line |
|---|---|---|
{rows}

"""


def _cell(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _agreement_row(item: FieldAgreement) -> str:
    interval = f" [{_cell(item.alpha_low)}, {_cell(item.alpha_high)}]" if item.alpha is not None and \
        item.alpha_low is not None and item.alpha_high is not None else ""
    other = (f"similarity {_cell(item.similarity)}" if item.similarity is not None
             else "n/a" if item.percent_agreement is None else f"{item.percent_agreement * 100:.1f} %")
    return f"| `{item.field}` | {item.level} | {item.units} | {_cell(item.alpha)}{interval} | {other} |"


def _agreement_figures(summary: AgreementSummary | None) -> str:
    if summary is None:
        return ("**Agreement figures: not available.** This release was frozen without an agreement report (for "
                "example from a published gold file with `rescue freeze --gold`, which carries none); the build "
                "that made the gold has them in its `build/agreement/` report.\n")
    rows = "\n".join(_agreement_row(item) for item in summary.fields) or "| (no field was annotated) | | | | |"
    level = f"{summary.confidence:.0%}"
    snapshot = "Agreement of the annotation snapshot named in MANIFEST.json (the build's agreement report)"
    return f"""{snapshot}: {summary.annotators}
annotator(s), {summary.sessions} session(s), {summary.rows} row(s), {summary.answers} answer(s). Per label field:
Krippendorff's alpha with its {level} bootstrap interval ({summary.bootstrap_samples} resamples; alpha >= 0.8 is
reliable, 0.667-0.8 tentative), and percent agreement (mean pairwise similarity for free text); n/a: too few
paired answers to compute.

| field | level | units | Krippendorff's alpha | agreement |
|---|---|---|---|---|
{rows}
"""


def annotation_section(card: CardSettings) -> str:
    return f"""## Annotation process and agreement

The rows come from the session recordings: automatic transcription and speaker diarization (models under
Provenance), speakers named from the subtitles or in a mapping file a person checks, one row per speaker turn.
Each row's label fields (the annotation schema named below) were filled in Label Studio by several annotators,
each in a project of their own, without seeing each other's answers; the form starts from drafts
(pre-annotation) that an annotator keeps or changes. Where the annotators agree, their answer is the gold;
where they disagree, an adjudicator chose the answer in a separate queue, seeing all of them. The gold rows
(`benchmark.jsonl`) are the result; the task files are built from them by fixed rules (below).

{_agreement_figures(card.agreement)}
"""


def sensitive_section(media: bool) -> str:
    clips = ("This release also holds row clips under `media/`: video and sound of the people in the "
             "sessions, which identify them." if media else
             "Video, audio and subtitles are not part of this release.")
    return f"""## Sensitive data, consent and limitations

- **Sensitive content.** The sessions are couple and family therapy interviews: people speak about their
  relationships, conflicts, feelings and mental health. The rows hold their transcribed words, the first
  names they go by on screen (not anonymised: the names are the tasks' labels), and annotators' descriptions
  of their emotions, viewpoints and behaviour. Treat all of it as personal data about health and family life.
  {clips}
- **Consent.** Consent to be recorded and shown was given to the makers of the source videos, not to this
  dataset; the pipeline neither asks for nor records it. Whoever releases the data must check that the
  sources' terms and the applicable law (e.g. the GDPR's special categories of data) allow this use, and
  must remove a session on a participant's request.
- **What the labels are.** Emotions, viewpoints, relation patterns, support targets and strategies are
  annotators' readings of what they saw and heard, not the participants' own account and not a clinical
  assessment. Do not use the data or models trained on it to judge, diagnose or profile real people, or to
  give therapy without a clinician.
- **Limitations.** Filmed sessions with few therapists, in English, chosen for broadcast: they differ from
  private therapy. Family sessions are far fewer than couple sessions. Transcripts, speaker turns and row
  times come from automatic models that annotators checked only in part; their errors remain where nobody
  corrected them. Agreement varies by field (above): read a low-agreement field's scores with care.

"""


PIPELINE_BIBTEX = """@software{{rescue_bench_pipeline,
  title = {{{{RESCUE-BENCH}} construction pipeline (`rescue`), version {code_version}}},
  note  = {{Rebuilds the RESCUE-BENCH task files from annotated therapy-session recordings}}
}}"""


def citation_section(card: CardSettings, code_version: str) -> str:
    pipeline_entry = PIPELINE_BIBTEX.format(code_version=code_version)
    if card.citation.strip():
        return f"""## Citation

If you use this data, cite:

```
{card.citation.strip()}
```

and say that the task files were rebuilt with the construction pipeline:

```bibtex
{pipeline_entry}
```
"""
    return f"""## Citation

No citation was set for this release: it is an internal build (`release_public = false`; a public release
needs `release_citation` in `[tool.rescue.build]`). The tasks follow {PAPER}; the task files were rebuilt with
the construction pipeline:

```bibtex
{pipeline_entry}
```
"""

