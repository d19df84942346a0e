"""Markers from the fixtures a test uses (pytest plugin, registered in tests/conftest.py), so a new test is marked
without anyone remembering to: `labelstudio` for a real Label Studio server (its migrated database), `slow` for
that and for the real speech models and the browser. Tests that are slow for other reasons (Ray clusters, speech
stages run inside the test) carry `@pytest.mark.slow` themselves. The markers are registered in pyproject.toml
(`--strict-markers`); the fast inner loop is `pytest -m "not slow"` (docs/build.md).
"""

from __future__ import annotations

import pytest

# Requesting any of these (directly or through another fixture) starts a real Label Studio server or needs one.
LABEL_STUDIO_FIXTURES = frozenset({"labelstudio_template", "shared_labelstudio", "ls_server", "own_ls_server",
                                   "built_corpus", "corpus_copy"})
# The real speech models on both sample sessions (built once per run, but a minute or more when first asked for).
SPEECH_FIXTURES = frozenset({"built_samples", "copy_built"})
# A Ray cluster (tests/ray_cluster.py), started per module.
RAY_FIXTURES = frozenset({"ray_cluster"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & LABEL_STUDIO_FIXTURES:
            item.add_marker(pytest.mark.labelstudio)
        if used & (LABEL_STUDIO_FIXTURES | SPEECH_FIXTURES | RAY_FIXTURES) or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
