"""The spine: the web process stays torch-free, migrations match the models, pages and health."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys

import pytest
from alembic import command
from fastapi.testclient import TestClient

from app.config import ROOT_DIR, Settings
from app.db import alembic_config, migrate
from app.main import create_app


def test_the_web_process_never_imports_torch() -> None:
    code = (
        "import sys; from app.main import create_app; import app.calc.__main__;"
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT_DIR)


def test_calc_imports_nothing_from_the_web_the_db_or_torch() -> None:
    code = (
        "import sys; import app.calc.memory, app.calc.comm, app.calc.units, app.calc.__main__;"
        "bad = [m for m in ('fastapi', 'sqlmodel', 'sqlalchemy', 'torch', 'app.main',"
        " 'app.db') if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT_DIR)


def test_migrations_match_the_models(tmp_path) -> None:
    database = tmp_path / "check.db"
    migrate(database)
    # Raises if autogenerate would emit anything: models and migrations agree.
    command.check(alembic_config(f"sqlite:///{database}"))


def test_database_uses_wal(client: TestClient, settings: Settings) -> None:
    client.get("/healthz")
    with sqlite3.connect(settings.database_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_every_nav_page_answers(client: TestClient) -> None:
    for path in (
        "/",
        "/cards",
        "/calculators",
        "/demos",
        "/demos/all-reduce",
        "/login",
        "/register",
    ):
        page = client.get(path)
        assert page.status_code == 200, path
        for label in ("Cards", "Calculators", "Demos", "Quiz", "Progress"):
            assert f">{label}</a>" in page.text


def test_pages_reference_only_vendored_assets(client: TestClient) -> None:
    page = client.get("/cards/zero-stages").text
    assert "https://" not in page.split("<main")[0]  # nothing from a CDN in the head
    for url in ("/static/css/app.css", "/static/js/rich.js"):
        assert client.get(url).status_code == 200


def test_health_reports_database_and_worker(client: TestClient) -> None:
    body = client.get("/healthz").json()
    assert body["database"] == "ok"
    assert body["worker"].startswith("unavailable")  # this test app has no worker


@pytest.mark.parametrize("value", ["nohost", "host:port", "host:70000", ":80"])
def test_a_bad_worker_address_is_refused_at_start(value: str) -> None:
    with pytest.raises(ValueError, match="host:port"):
        Settings(worker_address=value)


def test_what_start_up_made_is_frozen_while_the_app_runs(settings: Settings) -> None:
    # Out of the collector's generations while the app runs (app/main.py says why), and back
    # once it stops, so an app made again in the same process lets the old one go.
    gc.unfreeze()
    with TestClient(create_app(settings)) as client:
        assert client.get("/").status_code == 200
        assert gc.get_freeze_count() > 50_000
    assert gc.get_freeze_count() == 0
