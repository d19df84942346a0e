"""The frame and house style of the pipeline's self-contained HTML pages (the agreement report, a model run's
log): one inline stylesheet, no script, no external file, so a page can be mailed or archived as it is."""

from __future__ import annotations

import html
from collections.abc import Iterable

BASE_STYLE = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1200px;color:#222;
padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
"""


def page(title: str, heading: str, body: Iterable[str], style: str = "") -> str:
    """A whole page: `body` are HTML fragments (already escaped), one per line; `style` adds to the house style."""
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{html.escape(title)}</title>", f"<style>{BASE_STYLE}{style}</style></head><body>",
                      f"<h1>{html.escape(heading)}</h1>", *body, "</body></html>", ""])
