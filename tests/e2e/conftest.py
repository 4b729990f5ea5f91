"""Browser tests: Debian's chromium driven by pytest-playwright, against a real server.

The server is the real app on a free port with its own SQLite file, and it starts its own
demo worker, exactly as `scripts/serve` does.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.main import create_app
from tests.utils import free_port, make_settings, serving

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Root in CI needs --no-sandbox; the network flags stop chromium phoning home from a box
# that has no route out.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: run ./scripts/test, which installs it")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def live_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The live server's settings: a test reaches its database through them."""
    return make_settings(
        tmp_path_factory.mktemp("e2e") / "data",
        worker_spawn=True,
        worker_address=f"127.0.0.1:{free_port()}",
        worker_ranks=2,
    )


@pytest.fixture(scope="session")
def live_server(live_settings: Settings) -> Iterator[str]:
    with serving(create_app(live_settings), timeout_graceful_shutdown=2) as url:
        yield url


@pytest.fixture(scope="session")
def base_url(live_server: str) -> str:
    return live_server
