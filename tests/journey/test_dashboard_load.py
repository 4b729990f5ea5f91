"""Many learners opening their dashboards at once, on a real uvicorn server: every page answers,
quickly. A dashboard that held its database connection while the page's header asked for a
second one, or across the event loop's hand-over to the route while the loop itself waited
for a connection (app/journey/router.py), starved the pool: requests waited out its 30 s
timeout and answered 500."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from app.main import create_app
from tests.utils import make_settings, serving

LEARNERS = 4
AT_ONCE = 48  # more than the pool's connections (5 + 10 overflow) and the thread pool's 40
WAVES = 3  # the pool starves on how requests happen to interleave: a few tries to show it
WITHIN_S = 20.0  # a wave of dashboards takes a few seconds on two cores; a starved pool, 30


def _learner(base: str, name: str) -> str:
    """A registered learner with a study goal: their Cookie header."""
    with httpx.Client(base_url=base, timeout=30) as client:

        def token() -> str:
            return re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text)[1]

        registered = client.post("/register", data={"username": name, "password": "correct horse",
                                                    "csrf_token": token()})  # fmt: skip
        assert registered.status_code == 303, registered.text
        interview = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
        goal = {"interview_date": interview, "minutes_per_day": "30", "csrf_token": token()}
        assert client.post("/plan", data=goal).status_code == 303
        return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


def test_dashboards_opened_at_once_all_answer(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path / "data"))
    with serving(app) as base:
        cookies = [_learner(base, f"learner{i}") for i in range(LEARNERS)]

        def dashboard(i: int) -> tuple[int, str]:
            page = httpx.get(base + "/", headers={"Cookie": cookies[i % LEARNERS]}, timeout=60)
            return page.status_code, page.text

        for _ in range(WAVES):
            started = time.monotonic()
            with ThreadPoolExecutor(AT_ONCE) as pool:
                answers = list(pool.map(dashboard, range(AT_ONCE)))
            took_s = time.monotonic() - started
            assert [status for status, _ in answers] == [200] * AT_ONCE
            for i, (_, page) in enumerate(answers):
                assert f"Welcome back, learner{i % LEARNERS}" in page and 'id="today"' in page
            assert took_s < WITHIN_S, f"{AT_ONCE} dashboards at once took {took_s:.1f} s"
