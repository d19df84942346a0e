"""Which test file a pytest-xdist worker runs next: the longest first (pytest plugin, registered in conftest).

The suite runs on 2 workers (`-n 2 --dist loadgroup`, pyproject.toml). A worker takes one unit at a time: a whole
test file (its module-scoped servers and projects are made once), or all files of one `xdist_group` (modules that
must not run at the same time, each saying why). xdist's own order is by number of tests, so two long files could
end up last on one worker while the other idles; here the units go longest first (LPT scheduling), by the seconds
in SECONDS: whole-suite figures per file (benchmarks/results/bench_suite_full_keepalive.json, measured with 2 workers; a
file's time includes the session fixtures it was first to ask for, or its wait for the other worker making them). A file not listed counts 0.1 s per test, so new small
files go last. Refresh the table when a file's time changes by much: `benchmarks/bench_suite.py` prints it.
"""

from __future__ import annotations

from typing import Any

import pytest

SECONDS = {  # bench_suite_full_keepalive.json: 2 workers, commit 4144e7e
    "tests/test_corpus_build.py": 139,
    "tests/test_ray_executor.py": 118,
    "tests/test_speech_bad_audio.py": 70,
    "tests/test_corpus_integrity.py": 63,
    "tests/test_engine.py": 48,
    "tests/test_annotate_push_pull.py": 45,
    "tests/test_preannotate_push.py": 42,
    "tests/test_writers_server.py": 37,
    "tests/test_gateway.py": 31,
    "tests/test_labelstudio_lockdown.py": 29,
    "tests/test_build.py": 24,
    "tests/test_annotate_browser.py": 24,
    "tests/test_no_therapist.py": 24,
    "tests/test_release_trust.py": 22,
    "tests/test_annotate_integrity.py": 21,
    "tests/test_labelstudio_server.py": 18,
    "tests/test_speech_units.py": 18,
    "tests/test_corpus_reanchor.py": 18,
    "tests/test_kept_flags.py": 17,
    "tests/test_annotate_form_speed.py": 17,
    "tests/test_release_cli.py": 15,
    "tests/test_sample.py": 13,
    "tests/test_freeze_step.py": 13,
    "tests/test_writers_lock.py": 13,
    "tests/test_agreement_links.py": 13,
    "tests/test_agreement_report.py": 12,
    "tests/test_annotate_form.py": 11,
    "tests/test_ray_local_head.py": 10,
    "tests/test_release.py": 10,
    "tests/test_preannotate_openai.py": 10,
    "tests/test_release_media.py": 10,
    "tests/test_engine_status.py": 10,
    "tests/test_pull_unchanged.py": 9,
    "tests/test_preannotate_browser.py": 9,
    "tests/test_annotate_independent.py": 8,
    "tests/test_sample_build.py": 7,
    "tests/test_speech_pipeline.py": 6,
    "tests/test_run_model_leaks.py": 6,
    "tests/test_setup_quiet.py": 6,
    "tests/test_run_model.py": 5,
    "tests/test_preannotate_acceptance.py": 5,
}
PER_UNLISTED_TEST = 0.1


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """A test's unit: its xdist_group (the `@name` that `--dist loadgroup` appends to the node id), else its file."""
    at, bracket = nodeid.rfind("@"), nodeid.rfind("]")
    return f"group {nodeid[at + 1:]}" if at > bracket else file_of(nodeid)


def expected_seconds(nodeids: list[str]) -> float:
    files: dict[str, int] = {}
    for nodeid in nodeids:
        files[file_of(nodeid)] = files.get(file_of(nodeid), 0) + 1
    return sum(SECONDS.get(name, PER_UNLISTED_TEST * count) for name, count in files.items())


def longest_first(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling  # only with xdist, which calls the hook below

    class LongestFirstScheduling(LoadScopeScheduling):
        """xdist's scope scheduling (a worker gets the next unit when it has 2 tests left) with files as units,
        xdist_group units across files, and the work queue sorted longest first before the first unit goes out."""

        sorted_queue = False

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.sorted_queue:
                units = sorted(self.workqueue.items(), key=lambda unit: -expected_seconds(list(unit[1])))
                self.workqueue.clear()
                self.workqueue.update(units)
                self.sorted_queue = True
            super()._assign_work_unit(node)

    return LongestFirstScheduling(config, log)


@pytest.hookimpl(optionalhook=True)  # the hook exists only while xdist is loaded (not with -p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return longest_first(config, log) if config.getvalue("dist") == "loadgroup" else None
