"""Logging in to Label Studio (or the gateway in front of it) over HTTP as the browser does (helpers, not tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx


@contextmanager
def log_in(base_url: str, email: str, password: str) -> Iterator[httpx.Client]:
    """A browser-like session (the login form), sending Django's CSRF token with every call as the UI does."""
    with httpx.Client(base_url=base_url, follow_redirects=False, timeout=60) as web:
        web.get("/user/login/")
        response = web.post("/user/login/", data={"email": email, "password": password,
                                                  "csrfmiddlewaretoken": web.cookies.get("csrftoken", "")},
                            headers={"Referer": f"{base_url}/user/login/"})
        assert response.status_code in (302, 303), f"login of {email} at {base_url} failed"
        web.headers["X-CSRFToken"] = web.cookies.get("csrftoken", "")
        yield web
