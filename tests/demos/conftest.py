"""The demo worker these tests talk to: one per session, shared with tests/live."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.live.worker_process import LocalWorker
from tests.worker_fixture import shared_test_worker


@pytest.fixture(scope="session")
def demo_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalWorker, str, str]]:
    with shared_test_worker(Path(tmp_path_factory.mktemp("worker"))) as started:
        yield started
