"""What every benchmark script does with its figures: keep the JSON under benchmarks/results/ and put
the Markdown table between the doc's marker comments (benchmarks run as scripts, so this is imported
as a sibling module)."""

from __future__ import annotations

import json
from pathlib import Path


def publish(result: dict, table: str, results: Path, docs: Path, start: str, end: str, *, write_docs: bool) -> None:
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table)
    if write_docs and docs.exists():
        text = docs.read_text(encoding="utf-8")
        if start in text and end in text:
            head, rest = text.split(start, 1)
            docs.write_text(f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}", encoding="utf-8")
