"""CSV (every figure, long format) and Markdown (summary tables for papers) of an AgreementReport."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable

from pipeline.agreement import acceptance_tables
from pipeline.agreement.results import (
    METRIC_LABELS,
    RELIABLE,
    TENTATIVE,
    AgreementReport,
    Disagreement,
    Figure,
    MeasureDisagreements,
    band,
)

CSV_COLUMNS = ("scope", "measure", "level", "metric", "scenario", "session", "annotator", "other", "value", "low",
               "high", "spread", "units", "values", "annotators", "reason")
SUMMARY_METRICS = ("alpha", "gwet", "fleiss_kappa", "cohen_kappa", "percent_agreement")


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}"


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """A text cell a spreadsheet will not run as a formula: one starting with = + - @ (or tab/CR), e.g. an
    annotator account like `=HYPERLINK(...)`, gets a leading apostrophe (OWASP's advice). Numbers are not text cells."""
    return "'" + value if value.startswith(FORMULA_START) else value


def to_csv(report: AgreementReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for f in report.figures:
        writer.writerow([*map(csv_text, (f.scope, f.measure, f.level, f.metric, f.scenario, f.session, f.annotator,
                                         f.other)),
                         _number(f.value), _number(f.low), _number(f.high), _number(f.spread), f.units, f.values,
                         f.annotators, csv_text(f.reason)])
    for row in acceptance_tables.csv_rows(report.acceptance):
        writer.writerow([csv_text(v) if isinstance(v, str) else _number(v) if isinstance(v, float) or v is None
                         else v for v in row])
    return out.getvalue()


def cell(figure: Figure | None, digits: int = 3) -> str:
    """'0.712 [0.690, 0.735]', 'n/c' when not computable, '' when absent."""
    if figure is None:
        return ""
    if figure.value is None:
        return "n/c"
    text = f"{figure.value:.{digits}f}"
    if figure.low is not None and figure.high is not None:
        text += f" [{figure.low:.{digits}f}, {figure.high:.{digits}f}]"
    if figure.spread is not None:
        text += f" ± {figure.spread:.{digits}f}"
    return text


def banded(figure: Figure | None) -> str:
    """cell(), with ' (low)' or ' (tentative)' after a chance-corrected coefficient below the thresholds."""
    mark = band(figure.metric, figure.value) if figure is not None else ""
    return cell(figure) + (f" ({mark})" if mark else "")


THRESHOLDS = (f"Thresholds (Krippendorff 2004): alpha >= {RELIABLE} reliable; {TENTATIVE} <= alpha < {RELIABLE} "
              f"'tentative' (tentative conclusions only); alpha < {TENTATIVE} 'low'. The same marks are put on "
              "Gwet's AC1/AC2, Fleiss' and Cohen's kappa for orientation. Percent agreement is not corrected for "
              "chance and gets no mark.")


def measures_in_order(report: AgreementReport) -> list[str]:
    seen: dict[str, None] = {}
    for f in report.figures:
        if f.scope == "field":
            seen.setdefault(f.measure, None)
    return list(seen)


class Lookup:
    """Figures of one report by (scope, measure, metric, scenario, annotator, other), sessions left out."""

    def __init__(self, report: AgreementReport) -> None:
        self.report = report
        self.index = {(f.scope, f.measure, f.metric, f.scenario, f.annotator, f.other): f
                      for f in report.figures if f.scope != "session"}

    def get(self, measure: str, metric: str, scope: str = "field", scenario: str = "", annotator: str = "",
            other: str = "") -> Figure | None:
        if metric == "gwet":
            return self.get(measure, "gwet_ac1", scope, scenario, annotator, other) or \
                self.get(measure, "gwet_ac2", scope, scenario, annotator, other)
        return self.index.get((scope, measure, metric, scenario, annotator, other))


def summary_rows(report: AgreementReport) -> list[list[str]]:
    """One row per measure: level, units, then the main coefficients (text: similarity and baseline)."""
    look = Lookup(report)
    rows = []
    for measure in measures_in_order(report):
        alpha = look.get(measure, "alpha")
        similarity = look.get(measure, "similarity")
        if similarity is not None:
            baseline = look.get(measure, "similarity_baseline")
            rows.append([measure, "text", str(similarity.units), f"similarity {cell(similarity)}",
                         f"baseline {cell(baseline)}" if baseline else "", "", "", "", similarity.reason])
            continue
        main = alpha or look.get(measure, "percent_agreement")
        level = main.level if main else ""
        rows.append([measure, level, str(main.units if main else 0),
                     *(banded(look.get(measure, metric)) for metric in SUMMARY_METRICS),
                     (main.reason if main and main.value is None else "")])
    return rows


SUMMARY_HEADER = ["measure", "level", "units", "Krippendorff's alpha", "Gwet's AC1/AC2", "Fleiss' kappa",
                  "Cohen's kappa (mean of pairs)", "percent agreement", "note"]


def md_text(value: object) -> str:
    """Annotator-supplied text as Markdown shows it literally: HTML escaped (a renderer would run raw
    HTML), line breaks folded (they would end a table row or a list item)."""
    return " ".join(html.escape(str(value), quote=False).split())


def _markdown_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    header = [md_text(h) for h in header]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_text(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def scenario_rows(report: AgreementReport) -> list[list[str]]:
    look = Lookup(report)
    rows = []
    for measure in measures_in_order(report):
        for scenario in ("couple", "family"):
            alpha = look.get(measure, "alpha", "scenario", scenario)
            gwet = look.get(measure, "gwet", "scenario", scenario)
            similarity = look.get(measure, "similarity", "scenario", scenario)
            first = alpha or similarity
            if first is None:
                continue
            rows.append([measure, scenario, str(first.units), cell(first), cell(gwet)])
    return rows


def _by_measure(report: AgreementReport, scope: str, metrics: set[str]) -> dict[str, list[Figure]]:
    """The figures of one scope and these metrics, per measure (one pass over every figure)."""
    out: dict[str, list[Figure]] = {}
    for f in report.figures:
        if f.scope == scope and f.metric in metrics:
            out.setdefault(f.measure, []).append(f)
    return out


def pair_matrix(report: AgreementReport) -> tuple[list[str], list[list[str]]]:
    pairs = sorted({f"{f.annotator} / {f.other}" for f in report.figures if f.scope == "pair"})
    by_measure = _by_measure(report, "pair", {"cohen_kappa", "similarity"})
    rows = []
    for measure in measures_in_order(report):
        found = {f"{f.annotator} / {f.other}": f for f in by_measure.get(measure, ())}
        if found:
            rows.append([measure, *(cell(found.get(pair)) + (f" (n={found[pair].units})" if pair in found else "")
                                    for pair in pairs)])
    return pairs, rows


def annotator_matrix(report: AgreementReport) -> tuple[list[str], list[list[str]]]:
    names = list(report.annotators)
    by_measure = _by_measure(report, "annotator", {"alpha_vs_rest", "similarity"})
    rows = []
    for measure in measures_in_order(report):
        found = {f.annotator: f for f in by_measure.get(measure, ())}
        if found:
            rows.append([measure, *(cell(found.get(name)) for name in names)])
    return names, rows


def to_markdown(report: AgreementReport) -> str:
    parts = [
        f"# Inter-annotator agreement ({md_text(report.schema_id)}, snapshot {md_text(report.snapshot)})",
        "",
        f"{len(report.annotators)} annotators ({md_text(', '.join(report.annotators))}), {report.sessions} sessions, "
        f"{report.rows} rows, {report.answers} answers. Intervals: {report.confidence:.0%} percentile bootstrap, "
        f"{report.bootstrap_samples} resamples of rows within scenario, seed {report.seed}. Set distance: "
        f"{report.set_distance}. Values: estimate [interval]; text: mean pairwise similarity [interval] ± SD "
        "across units; n/c = not computable (see notes).",
        "",
        "## Agreement per field",
        "",
        THRESHOLDS,
        "",
        _markdown_table(SUMMARY_HEADER, summary_rows(report)),
        "",
        "## Per scenario",
        "",
        _markdown_table(["measure", "scenario", "units", "alpha / similarity", "Gwet's AC"], scenario_rows(report)),
    ]
    pairs, rows = pair_matrix(report)
    if rows:
        parts += ["", "## Per annotator pair (Cohen's kappa; text: similarity)", "",
                  _markdown_table(["measure", *pairs], rows)]
    names, rows = annotator_matrix(report)
    if rows:
        parts += ["", "## Per annotator against the others (alpha over the annotator's pairs; text: similarity)",
                  "", _markdown_table(["measure", *names], rows)]
    parts += ["", "## Where annotators disagree", "", DISAGREEMENTS_INTRO]
    for group in report.disagreements:
        parts += ["", f"### {md_text(group.measure)}: {disagreement_count(group)}"]
        if group.shown:
            parts += ["", _markdown_table(["session", "row", "item", "text", "answers", "Label Studio"],
                                          [disagreement_cells(d) for d in group.shown])]
    parts += ["", *acceptance_markdown(report)]
    if report.notes:
        parts += ["", "## Notes", ""] + [f"- {md_text(note.message)}" for note in report.notes]
    parts += ["", "Metrics: " + "; ".join(f"`{k}` = {v}" for k, v in METRIC_LABELS.items()) + ".", ""]
    return "\n".join(parts)


def acceptance_markdown(report: AgreementReport) -> list[str]:
    """The "Pre-annotation acceptance" section: kept shares, then agreement with the gold (or why none)."""
    acceptance = report.acceptance
    parts = [f"## {acceptance_tables.TITLE}", "", acceptance_tables.INTRO, ""]
    none = acceptance_tables.none_message(acceptance)
    if none:
        return parts + [none]
    parts += ["### Drafts kept by the annotators", "",
              _markdown_table(acceptance_tables.KEPT_HEADER, acceptance_tables.kept_rows(acceptance)), ""]
    if acceptance.sources:
        parts += [f"### {acceptance_tables.SOURCE_TITLE}", "",
                  _markdown_table(acceptance_tables.SOURCE_HEADER, acceptance_tables.source_rows(acceptance)), ""]
    parts += ["### Drafts against the gold (the model as one more coder)", ""]
    rows = acceptance_tables.gold_rows(acceptance, cell)
    parts.append(_markdown_table(acceptance_tables.GOLD_HEADER, rows) if rows else
                 "No drafted field has a settled gold value yet (run `rescue adjudicate`, settle the queue).")
    return parts


DISAGREEMENTS_INTRO = ("Per field, the rows (items: row and item) where the annotators' answers differ after "
                       "normalisation (an empty answer counts as none, as in alpha); text fields are left out "
                       "(see their similarity). The links open each annotator's task and the row's adjudication task "
                       "(where the queue was pushed), at the configured Label Studio address.")
DISAGREEMENT_COLUMNS = ("measure", "session", "row_id", "row_index", "item", "text", "annotator", "answer",
                        "task_link", "task", "adjudication_link")


def disagreement_count(group: MeasureDisagreements) -> str:
    rest = group.total - len(group.shown)
    return (f"{group.total} of {group.units} units differ" + (f", first {len(group.shown)} listed, {rest} more"
                                                               if rest else ""))


def disagreement_cells(d: Disagreement) -> list[str]:
    answers = "; ".join(f"{a.annotator}: {a.answer}" for a in d.answers)
    link = "; ".join(f"{t.label}: {t.url}" for t in d.links) if d.links else "(no server link)"
    return [d.session_id, str(d.row_index), d.item, d.text, answers, link]


def disagreements_csv(report: AgreementReport) -> str:
    """The listed disagreements, one line per (unit, annotator), text cells neutralised like agreement.csv."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(DISAGREEMENT_COLUMNS)
    for group in report.disagreements:
        for d in group.shown:
            adjudication = d.adjudication_link
            for a in d.answers:
                own = d.link_of(a.annotator)
                writer.writerow([*map(csv_text, (group.measure, d.session_id, d.row_id)), d.row_index,
                                 *map(csv_text, (d.item, d.text, a.annotator, a.answer, own.url if own else "",
                                                 own.label if own else "",
                                                 adjudication.url if adjudication else ""))])
    return out.getvalue()
