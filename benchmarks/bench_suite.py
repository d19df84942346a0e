"""How long the test suite takes from a fresh clone, and where the time goes (issue 21's figures).

    .venv/bin/python benchmarks/bench_suite.py                 # the whole suite (what `bash .ci/run` runs)
    .venv/bin/python benchmarks/bench_suite.py -m "not slow"   # the fast inner loop
    .venv/bin/python benchmarks/bench_suite.py --workers 0     # in one process (default: pyproject's -n 2)
    .venv/bin/python benchmarks/bench_suite.py --junit FILE    # only read a finished run's JUnit XML
    .venv/bin/python benchmarks/bench_suite.py --at 12ef834 --warm --name ls_before tests/test_gateway.py ...
        # some files at another commit, with the cached Label Studio template (a before/after of fixtures)

The committed HEAD is cloned into a temporary folder (so build/test-cache/ is empty: the Label Studio template is
migrated again, as on CI), the repository's virtual environments are linked into it (installing them is not test
time), and `python -m pytest` runs there with a JUnit report (kept in build/bench-suite/). The load average is
sampled every 10 s while it runs: the development machine is shared, so a figure means little without it. Writes
benchmarks/results/bench_suite*.json and prints the wall time, the load and the test time per file (setup, call
and teardown of its tests), and those times as the longest-first table of tests/xdist_schedule.py. With xdist
(`-n 2` in pyproject's addopts) the per-file times are each worker's own and add up to more than the wall time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from publish import publish

REPO = Path(__file__).resolve().parents[1]
VENVS = (".venv", ".venv-labelstudio")


def per_file(junit: Path) -> tuple[dict[str, float], dict[str, int]]:
    """Seconds and outcome counts per test file, from pytest's JUnit XML (a test's time includes its fixtures)."""
    seconds: dict[str, float] = defaultdict(float)
    outcomes: dict[str, int] = defaultdict(int)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("classname", "").replace(".", "/") + ".py"
        seconds[name] += float(case.get("time", "0"))
        kinds = {child.tag for child in case}
        outcomes["failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"] += 1
    return dict(seconds), dict(outcomes)


def sample_load(samples: list[float], stop: threading.Event) -> None:
    while not stop.is_set():
        samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
        stop.wait(10)


def run_suite(marker: str | None, junit: Path, commit: str, paths: list[str], warm: bool, workers: int | None
              ) -> tuple[float, int, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as folder:
        clone = Path(folder) / "repo"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
        for venv in VENVS:
            (clone / venv).symlink_to((REPO / venv).resolve())
        if warm:  # the migrated Label Studio template this checkout already has: its ~70 s are not timed
            (clone / "build").mkdir()
            (clone / "build" / "test-cache").symlink_to((REPO / "build" / "test-cache").resolve())
        command = [str(clone / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   f"--junitxml={junit}", *(["-m", marker] if marker else []),
                   *(["-n", str(workers)] if workers is not None else []), *paths]
        samples: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_load, args=(samples, stop), daemon=True)
        sampler.start()
        started = time.monotonic()
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # the clone's code, not ours
        code = subprocess.run(command, cwd=clone, env=env, check=False).returncode
        wall = time.monotonic() - started
        stop.set()
        sampler.join()
    return wall, code, samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-m", dest="marker", help='a pytest marker expression, e.g. "not slow"')
    parser.add_argument("--junit", type=Path, help="read this finished run's JUnit XML instead of running the suite")
    parser.add_argument("--top", type=int, default=25, help="files listed in the table")
    parser.add_argument("--at", default="HEAD", help="the commit to clone (default: HEAD)")
    parser.add_argument("--warm", action="store_true", help="link build/test-cache/ (the migrated template) in")
    parser.add_argument("--name", help="results file suffix (default: from -m)")
    parser.add_argument("--workers", type=int, help="pytest-xdist workers, -n (default: pyproject's addopts)")
    parser.add_argument("paths", nargs="*", help="test files (default: the whole suite)")
    args = parser.parse_args()
    suffix = f"_{args.name}" if args.name else "_not_slow" if args.marker == "not slow" else ""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.at], capture_output=True, text=True,
                            check=True).stdout.strip()
    result: dict = {"marker": args.marker, "commit": commit, "paths": args.paths, "warm": args.warm,
                    "workers": args.workers if args.workers is not None else "pyproject addopts"}
    if args.junit:
        junit = args.junit
    else:
        junit = REPO / "build" / "bench-suite" / f"bench_suite{suffix}.xml"  # large: kept out of git
        junit.parent.mkdir(parents=True, exist_ok=True)
        wall, code, load = run_suite(args.marker, junit, commit, args.paths, args.warm, args.workers)
        result.update(wall_s=round(wall, 1), exit_code=code, load_min=min(load, default=0.0),
                      load_max=max(load, default=0.0), load_mean=round(sum(load) / max(len(load), 1), 2))
    seconds, outcomes = per_file(junit)
    result.update(outcomes=outcomes, test_s=round(sum(seconds.values()), 1),
                  files={name: round(s, 1) for name, s in sorted(seconds.items(), key=lambda kv: -kv[1])})
    lines = [f"commit {result['commit']}, `pytest{' -m ' + repr(args.marker) if args.marker else ''}`: "
             + ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))]
    if "wall_s" in result:
        lines[0] += (f" in {result['wall_s'] / 60:.1f} min wall (exit {result['exit_code']}), load average "
                     f"{result['load_min']:.1f}-{result['load_max']:.1f} (mean {result['load_mean']:.1f}) on "
                     f"{len(os.sched_getaffinity(0))} cores")
    lines += ["", "| test file | s |", "|---|---|"]
    lines += [f"| {name} | {s:.1f} |" for name, s in list(result["files"].items())[:args.top]]
    lines += ["", "tests/xdist_schedule.py SECONDS (files of 5 s or more):"]
    lines += [f'    "{name}": {s:.0f},' for name, s in result["files"].items() if s >= 5]
    publish(result, "\n".join(lines), REPO / "benchmarks" / "results" / f"bench_suite{suffix}.json",
            REPO / "docs" / "build.md", "", "", write_docs=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
