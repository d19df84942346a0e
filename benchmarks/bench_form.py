"""How much a whole row costs in the labelling form: clicks, name selections, keys, typed characters, the form's
height and the automated run's wall time, from tests/test_annotate_form_speed.py (real server, gateway and
Chromium; tests/form_driver.py does the counting).

    .venv/bin/python benchmarks/bench_form.py [--label after] [--write-docs]

Keeps each label's figures in benchmarks/results/bench_form.json, so the figures of the form before a change
(`--label before --commit REV --results <this checkout's file>`, run in the old form's tree exported with
`git archive REV`, with this script, publish.py, tests/form_driver.py and tests/test_annotate_form_speed.py copied
in) stay next to the new ones, and writes the table into docs/annotation.md between its bench_form markers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from publish import publish  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "bench_form.json"
DOCS = REPO / "docs" / "annotation.md"
START, END = "<!-- bench_form:start -->", "<!-- bench_form:end -->"
# seconds (Card, Moran & Newell's keystroke-level model): point + click, keystroke, point + double-click
KLM_CLICK, KLM_KEY, KLM_SELECT = 1.3, 0.28, 1.5


def measure(commit: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "figures.json"
        env = {**os.environ, "RESCUE_FORM_FIGURES": str(out), "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "pytest", "tests/test_annotate_form_speed.py", "-q", "-x",
                        "-p", "no:cacheprovider"], cwd=REPO, env=env, check=True)
        figures = json.loads(out.read_text(encoding="utf-8"))
    if not commit:
        found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        commit = found.stdout.strip() or "unknown"
    figures.update(measured=datetime.now(timezone.utc).strftime("%Y-%m-%d"), load=os.getloadavg()[0],
                   commit=commit, machine=f"{platform.machine()}, {os.cpu_count()} CPUs")
    return figures


def human_estimate(f: dict) -> float:
    """A keystroke-level model estimate of a person's time (thinking and typing speed aside)."""
    return f["clicks"] * KLM_CLICK + f["selections"] * KLM_SELECT + (f["keys"] + f["typed"]) * KLM_KEY


def table(results: dict) -> str:
    lines = ["| form | clicks | name selections | keys | typed characters | form height | automated run | "
             "keystroke-model estimate | measured |", "|---|---|---|---|---|---|---|---|---|"]
    for label in ("before", "after"):
        f = results.get(label)
        if f:
            lines.append(f"| {label} ({f['commit']}) | {f['clicks']} | {f['selections']} | {f['keys']} | "
                         f"{f['typed']} | "
                         f"{f['form_height']:,} px | {f['seconds']:.1f} s | {human_estimate(f):.0f} s | "
                         f"{f['measured']}, load {f['load']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", choices=("before", "after"), default="after")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--commit", default="", help="the commit measured, where this tree is no git checkout "
                                                     "(the old form's tree exported with `git archive`)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON file that keeps every label's figures")
    args = parser.parse_args()
    results = json.loads(args.results.read_text(encoding="utf-8")) if args.results.exists() else {}
    results[args.label] = measure(args.commit)
    publish(results, table(results), args.results, DOCS, START, END, write_docs=args.write_docs)


if __name__ == "__main__":
    main()
