"""Quiz fixtures: an app on a small bank with one item of each kind (tests/quiz/content),
the real cards, and a real SQLite file per test."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.utils import make_settings

FIXTURE_CONTENT = Path(__file__).parent / "content"


@pytest.fixture
def quiz_client(tmp_path: Path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path / "data", content_dir=FIXTURE_CONTENT)
    with TestClient(create_app(settings)) as client:
        yield client


def shown_item(page: str) -> str:
    """The item id of the question a page shows."""
    match = re.search(r'name="item_id" value="([^"]+)"', page)
    assert match, page[:2000]
    return match.group(1)
