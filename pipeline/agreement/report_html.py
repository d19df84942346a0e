"""The self-contained HTML report: tables, and figures embedded as base64 PNG (no external files)."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable

from pipeline.agreement import acceptance_tables
from pipeline.agreement import figures as charts
from pipeline.agreement.report_tables import (
    DISAGREEMENTS_INTRO,
    SUMMARY_HEADER,
    THRESHOLDS,
    Lookup,
    annotator_matrix,
    cell,
    disagreement_count,
    measures_in_order,
    pair_matrix,
    scenario_rows,
    summary_rows,
)
from pipeline.agreement.results import METRIC_LABELS, AgreementReport, MeasureDisagreements

_STYLE = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1200px;color:#222;
padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f8}td.nc{color:#a00}.meta td:first-child{font-weight:600}
figure{margin:1rem 0}figcaption{font-size:.8rem;color:#555}img{max-width:100%;height:auto}
.notes li{margin:.2rem 0}details{margin:.8rem 0}.scroll{overflow-x:auto}
td.low{background:#fbe3e3;color:#900;font-weight:600}td.tentative{background:#fff4d6}
"""


def _table(header: Iterable[str], rows: Iterable[Iterable[str]], css: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for value in row:
            text = str(value)
            klass = ' class="nc"' if text == "n/c" else ' class="low"' if text.endswith("(low)") else \
                ' class="tentative"' if text.endswith("(tentative)") else ""
            cells.append(f"<td{klass}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead><tbody>' + \
        "".join(body) + "</tbody></table></div>"


def _figure(name: str, png: bytes | None, caption: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="fig-{name}"><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def figure_files(report: AgreementReport) -> dict[str, bytes]:
    """Every figure of the report by file name (also written next to the HTML for papers)."""
    files: dict[str, bytes | None] = {
        "agreement_per_field.png": charts.agreement_chart(report),
        "text_similarity_per_field.png": charts.agreement_chart(report, text=True),
        "annotator_pairs.png": charts.pair_heatmap(report),
    }
    for confusion in report.confusions:
        files[f"confusion_{confusion.measure}.png"] = charts.confusion_chart(confusion)
    return {name: png for name, png in files.items() if png is not None}


def _sessions(report: AgreementReport) -> str:
    measures = [m for m in measures_in_order(report)]
    table: dict[str, dict[str, str]] = {}
    scenario: dict[str, str] = {}
    for f in report.figures:
        if f.scope == "session" and f.metric in {"alpha", "similarity"}:
            table.setdefault(f.session, {})[f.measure] = (cell(f, 2) + f" (n={f.units})") if f.value is not None \
                else f"n/c (n={f.units})"
            scenario[f.session] = f.scenario
    rows = [[session, scenario[session], *(table[session].get(m, "") for m in measures)] for session in sorted(table)]
    return _table(["session", "scenario", *measures], rows)


def _disagreements(groups: tuple[MeasureDisagreements, ...]) -> str:
    parts = [f"<p>{html.escape(DISAGREEMENTS_INTRO)}</p>"]
    for group in groups:
        rows = []
        for d in group.shown:
            answers = "".join(f"<li>{html.escape(a.annotator)}: {html.escape(a.answer)}</li>" for a in d.answers)
            link = ("<br>".join(f'<a href="{html.escape(t.url)}">{html.escape(t.label)}</a>' for t in d.links)
                    if d.links else "(no server link)")
            rows.append(f"<tr><td>{html.escape(d.session_id)}</td><td>{d.row_index}</td><td>{html.escape(d.item)}</td>"
                        f"<td>{html.escape(d.text)}</td><td><ul>{answers}</ul></td><td>{link}</td></tr>")
        table = ('<div class="scroll"><table class="disagreements"><thead><tr><th>session</th><th>row</th>'
                 "<th>item</th><th>text</th><th>answers</th><th>Label Studio</th></tr></thead><tbody>"
                 + "".join(rows) + "</tbody></table></div>") if rows else ""
        parts.append(f'<details id="disagree-{html.escape(group.measure)}"><summary>'
                     f"{html.escape(group.measure)}: {html.escape(disagreement_count(group))}</summary>"
                     f"{table}</details>")
    return "".join(parts)


def _acceptance(report: AgreementReport) -> str:
    acceptance = report.acceptance
    head = (f"<h2 id='acceptance'>{html.escape(acceptance_tables.TITLE)}</h2>"
            f"<p>{html.escape(acceptance_tables.INTRO)}</p>")
    none = acceptance_tables.none_message(acceptance)
    if none:
        return head + f"<p>{html.escape(none)}</p>"
    rows = acceptance_tables.gold_rows(acceptance, cell)
    return (head + "<h3>Drafts kept by the annotators</h3>"
            + _table(acceptance_tables.KEPT_HEADER, acceptance_tables.kept_rows(acceptance), "acceptance-kept")
            + (f"<h3>{html.escape(acceptance_tables.SOURCE_TITLE)}</h3>"
               + _table(acceptance_tables.SOURCE_HEADER, acceptance_tables.source_rows(acceptance), "acceptance-source")
               if acceptance.sources else "")
            + "<h3>Drafts against the gold (the model as one more coder)</h3>"
            + (_table(acceptance_tables.GOLD_HEADER, rows, "acceptance-gold") if rows else
               "<p>No drafted field has a settled gold value yet.</p>"))


def to_html(report: AgreementReport, pngs: dict[str, bytes]) -> str:
    meta = [
        ("annotation snapshot", report.snapshot), ("annotations file", report.annotations_file),
        ("schema", report.schema_id), ("annotators", ", ".join(report.annotators) or "none"),
        ("sessions / rows / answers", f"{report.sessions} / {report.rows} / {report.answers}"),
        ("intervals", f"{report.confidence:.0%} percentile bootstrap, {report.bootstrap_samples} resamples of rows "
                      f"within scenario, seed {report.seed}"),
        ("set distance", report.set_distance),
        ("text model", ", ".join(f"{k} {v}" for k, v in report.text_model.items()) or "not used"),
    ]
    notes = "".join(f"<li>{html.escape(note.message)}</li>" for note in report.notes)
    pairs, pair_rows = pair_matrix(report)
    names, annotator_rows = annotator_matrix(report)
    look = Lookup(report)
    without = [[m, *(cell(look.get(m, "alpha_without", "annotator", "", n)) for n in names)]
               for m in measures_in_order(report)]
    without = [row for row in without if any(row[1:])]
    confusions = "".join(_figure(f"confusion-{c.measure}", pngs.get(f"confusion_{c.measure}.png"),
                                 f"{c.measure}: coincidences (both orders of each disagreeing pair) among the most "
                                 "confused values") for c in report.confusions)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Agreement report: {html.escape(report.schema_id)} {html.escape(report.snapshot)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Inter-annotator agreement: {html.escape(report.schema_id)}</h1>",
        _table(["", ""], meta, "meta"),
        "<h2>Notes</h2>" + (f'<ul class="notes">{notes}</ul>' if notes else "<p>No input problems.</p>"),
        "<h2 id='per-field'>Agreement per field</h2>",
        _figure("per-field", pngs.get("agreement_per_field.png"),
                "Krippendorff's alpha and Gwet's AC1/AC2 per categorical field with bootstrap intervals; "
                "dotted line: alpha 0.8"),
        _figure("text", pngs.get("text_similarity_per_field.png"),
                "Text fields: mean pairwise similarity of the annotators' answers (MiniLM) with intervals, and the "
                "similarity of unrelated answers (different units) as a baseline"),
        f"<p>{html.escape(THRESHOLDS)}</p>",
        _table(SUMMARY_HEADER, summary_rows(report)),
        "<h2>Per scenario</h2>",
        _table(["measure", "scenario", "units", "alpha / similarity", "Gwet's AC"], scenario_rows(report)),
        "<h2>Per annotator pair</h2>",
        _figure("pairs", pngs.get("annotator_pairs.png"), "Annotator x annotator: mean Cohen's kappa"),
        _table(["measure", *pairs], pair_rows) if pair_rows else "<p>Fewer than two annotators.</p>",
        "<h2>Per annotator, against the others</h2>",
        "<p>alpha over the annotator's own pairs (1 - the annotator's mean disagreement with the others / the "
        "expected disagreement); text fields: mean similarity with the others.</p>",
        _table(["measure", *names], annotator_rows) if annotator_rows else "",
        ("<p>alpha of the remaining annotators when one is left out:</p>" + _table(["measure", *names], without))
        if without else "",
        "<h2>Most confused labels</h2>", confusions or "<p>No disagreements on nominal fields.</p>",
        "<h2 id='disagreements'>Where annotators disagree</h2>", _disagreements(report.disagreements),
        "<h2>Per session</h2><details><summary>alpha (text: similarity) per session and field, with units</summary>",
        _sessions(report), "</details>",
        _acceptance(report),
        "<h2>Metrics</h2><ul>" + "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>"
                                         for k, v in METRIC_LABELS.items()) + "</ul>",
        "</body></html>", "",
    ]
    return "\n".join(parts)
