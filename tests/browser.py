"""Helpers of the browser tests: Debian's Chromium driven by Playwright (never `playwright install`).

A browser test module sets `pytestmark = BROWSER`: marked `browser` (tests/markers.py also marks it slow) and
skipped where Debian chromium is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.labelstudio_fixtures import REPO

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "build" / "test-artifacts"
BROWSER_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--metrics-recording-only"]

BROWSER = [pytest.mark.browser,
           pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (make setup)")]


def log_in(page, url: str, email: str, password: str) -> None:  # noqa: ANN001 - playwright Page
    page.goto(f"{url}/user/login/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda current: "/user/login" not in current)
