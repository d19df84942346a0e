"""A run's log as one self-contained HTML page (inline CSS, no script, no external file), like the agreement
report: the run's facts, a table of every instance shown (outcome, answer, gold, scores), then per instance a
collapsible block with the system message (once per distinct text, linked), its own target as sent, the media
sent with it, the model's raw answer (the whole answer of its request, whose batch-mates are named) and what was
read from it. Everything the model or the release wrote is escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from pipeline.runmodel.show import InstanceView, LoadedRun, compact

_STYLE = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1200px;color:#222;
padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f8}.meta td:first-child{font-weight:600}.scroll{overflow-x:auto}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:.5rem;margin:.3rem 0;font-size:.8rem}
details{margin:.5rem 0;border:1px solid #e3e3e3;padding:.3rem .6rem}summary{cursor:pointer}
.right{color:#176317;font-weight:600}.wrong{color:#a00;font-weight:600}.unanswered{color:#8a5a00;font-weight:600}
.answered{color:#333}.notes li{margin:.2rem 0}
"""


def _e(value: Any) -> str:
    return html.escape(compact(value))


def _without_reason(parsed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The table shows the answer; the model's free-text `reason` is in the instance's block."""
    return None if parsed is None else {k: v for k, v in parsed.items() if k != "reason"}


def _pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


def _pretty(value: Any) -> str:
    try:
        return json.dumps(json.loads(value) if isinstance(value, str) else value, indent=2, ensure_ascii=False)
    except ValueError:
        return str(value)


def _meta(run: LoadedRun) -> list[tuple[str, str]]:
    record = run.record or {}
    rows = [("folder", str(run.folder)), ("status", "finished" if run.finished else "unfinished")]
    for key in ("run_id", "task", "mode", "model", "endpoint_host", "prompt_version", "batching", "finished_utc"):
        if key in record:
            rows.append((key, compact(record[key])))
    if isinstance(record.get("release"), dict):
        rows.append(("release", f"{record['release'].get('version')} ({record['release'].get('path')})"))
    if run.scores and isinstance(run.scores.get("scores"), dict):
        overall = run.scores["scores"].get("overall", {})
        rows.append(("scores (overall)", ", ".join(f"{k} {v}" for k, v in overall.items()
                                                  if isinstance(v, int | float))))
    return rows


def _instance(view: InstanceView, systems: dict[str, int]) -> str:
    sample, request = view.sample, view.request
    summary = (f'<span class="{view.outcome}">{view.outcome}</span> {html.escape(sample.id)} '
               f"(sample {html.escape(sample.sample_id)}, {html.escape(sample.scenario)})")
    parts = [f'<details id="i-{html.escape(sample.id)}"><summary>{summary}</summary>']
    if request is None:
        parts.append("<p>Never sent.</p>")
    else:
        mates = [i for i in request.ids if i != sample.id]
        number = systems.get(view.system)
        finish = f" (finish: {html.escape(request.finish_reason)})" if request.finish_reason else ""
        parts.append(f"<p>Request {request.request} ({len(request.ids)} instance(s)"
                     + (f"; batch-mates: {html.escape(', '.join(mates))}" if mates else "") + ")"
                     + (f'; system message: <a href="#system-{number}">#{number}</a>' if number else "")
                     + f"; {'from the cache' if request.cached else 'sent' if request.sent else 'not sent'}</p>")
        parts += [f"<p>Media sent first:</p>{_pre(chr(10).join(view.media))}" if view.media else "",
                  "<p>Its target, as sent:</p>" + _pre(_pretty(view.target)),
                  f"<p>Raw answer of the request{finish}:</p>"
                  + _pre(request.content or request.refusal or request.problem or request.not_sent or "(empty)")]
    if sample.answer_items:
        parts.append("<p>Given for this id:</p>" + _pre(_pretty(sample.answer_items)))
    parts.append("<p>Read as:</p>" + _pre(_pretty(sample.parsed)) if sample.parsed is not None else
                 f"<p>Unanswered: {html.escape(sample.reason)}</p>")
    if view.scored is not None:
        parts.append("<p>Scored answer, gold and scores:</p>" + _pre(_pretty(
            {k: view.scored.get(k) for k in ("answer", "gold", "scores")})))
    parts.append("</details>")
    return "".join(parts)


def to_html(run: LoadedRun, views: Sequence[InstanceView], *, shown_of: int) -> str:
    record = run.record or {}
    title = f"Model run {record.get('run_id', run.folder.name)}"
    systems: dict[str, int] = {}
    for view in views:
        if view.system and view.system not in systems:
            systems[view.system] = len(systems) + 1
    head = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in _meta(run))
    rows = "".join(
        f'<tr><td><a href="#i-{html.escape(v.sample.id)}">{html.escape(v.sample.id)}</a></td>'
        f"<td>{html.escape(v.sample.sample_id)}</td><td class=\"{v.outcome}\">{v.outcome}</td>"
        f"<td>{_e(_without_reason(v.sample.parsed)) or html.escape(v.sample.reason)}</td>"
        f"<td>{_e(v.scored.get('gold')) if v.scored else ''}</td>"
        f"<td>{_e(v.scored.get('scores')) if v.scored else ''}</td></tr>" for v in views)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in run.notes)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
        f'<div class="scroll"><table class="meta">{head}</table></div>',
        f'<ul class="notes">{notes}</ul>' if notes else "",
        f"<h2>Instances ({len(views)} shown of {shown_of})</h2>",
        ('<div class="scroll"><table class="instances"><thead><tr><th>id</th><th>sample</th><th>outcome</th>'
         f"<th>answer (or why none)</th><th>gold</th><th>scores</th></tr></thead><tbody>{rows}</tbody></table></div>"),
        "<h2>Per instance</h2>", *(_instance(view, systems) for view in views),
        "<h2>System messages</h2>",
        *(f'<details id="system-{n}"><summary>#{n}</summary>{_pre(text)}</details>' for text, n in systems.items()),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"
