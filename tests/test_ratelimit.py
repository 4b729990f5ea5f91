"""The shared sliding window (app/ratelimit.py): its arithmetic on a fake clock, and that
several engines on one database, as several web processes would hold, count as one."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import SQLModel

from app.db import make_engine
from app.ratelimit import KEY_CHARS, Rate, RateLimitEvent, SlidingWindow, parse_rate
from tests.pg_server import PostgresServer

EVENTS = RateLimitEvent.__table__


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _engine(path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{path}")
    SQLModel.metadata.create_all(engine, tables=[EVENTS])
    return engine


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "limits.db"
    _engine(path).dispose()
    return path


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("10/minute", Rate(10, 60)),
        ("20 / hour", Rate(20, 3600)),
        ("5/10minutes", Rate(5, 600)),
        ("1/day", Rate(1, 86400)),
    ],
)
def test_rates_parse(text: str, rate: Rate) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["0/minute", "ten/minute", "5/fortnight", "5"])
def test_a_bad_rate_says_which_forms_it_takes(text: str) -> None:
    with pytest.raises(ValueError, match="for example 10/minute"):
        parse_rate(text)


def test_the_window_allows_its_count_then_says_how_long_to_wait(database: Path) -> None:
    clock = Clock()
    window = SlidingWindow(_engine(database), "login", Rate(3, 60), clock)
    for _ in range(3):
        assert window.hit("a") == 0
        clock.now += 10
    # The first event was 30 s ago: a slot frees in 30 s.
    assert window.hit("a") == pytest.approx(30)
    assert window.count("a") == 3  # a refused hit is not recorded
    assert window.retry_after_s("a") == pytest.approx(30)
    assert window.hit("b") == 0  # other keys have their own window
    clock.now += 30
    assert window.retry_after_s("a") == 0
    assert window.hit("a") == 0


def test_two_engines_on_one_database_share_the_window(database: Path) -> None:
    clock = Clock()
    first = SlidingWindow(_engine(database), "demo", Rate(2, 3600), clock)
    second = SlidingWindow(_engine(database), "demo", Rate(2, 3600), clock)
    assert first.hit("address:10.0.0.1") == 0
    assert second.hit("address:10.0.0.1") == 0
    assert first.hit("address:10.0.0.1") == pytest.approx(3600)
    assert second.hit("address:10.0.0.1") == pytest.approx(3600)
    # A limit of another name counts apart.
    assert (
        SlidingWindow(_engine(database), "import", Rate(2, 3600), clock).count("address:10.0.0.1")
        == 0
    )


def _race(engines: list[Engine]) -> None:
    # Each thread has its own engine (its own connections, as a process has); they race for
    # five places: exactly five get one.
    limit = 5
    windows = [SlidingWindow(engine, "login", Rate(limit, 60)) for engine in engines]
    start = threading.Barrier(len(windows))
    allowed: list[bool] = []

    def contender(window: SlidingWindow) -> None:
        start.wait()
        for _ in range(3):
            allowed.append(window.hit("ada") == 0)

    threads = [threading.Thread(target=contender, args=(w,)) for w in windows]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert allowed.count(True) == limit
    assert windows[0].count("ada") == limit


def test_concurrent_hits_on_sqlite_never_pass_the_limit(database: Path) -> None:
    _race([_engine(database) for _ in range(8)])


def test_concurrent_hits_on_postgresql_never_pass_the_limit(postgres: PostgresServer) -> None:
    # A migrated database: the advisory lock, not SQLite's one writer, keeps the count.
    url = postgres.url(postgres.create_database())
    engines = [make_engine(url) for _ in range(8)]
    try:
        _race(engines)
    finally:
        for engine in engines:
            engine.dispose()


def test_a_long_key_is_stored_as_its_digest_and_stays_distinct(database: Path) -> None:
    window = SlidingWindow(_engine(database), "login_username", Rate(1, 60))
    long_a, long_b = "a" * 500, "a" * 499 + "b"
    assert window.hit(long_a) == 0
    assert window.hit(long_b) == 0
    assert window.hit(long_a) > 0
    with window.engine.connect() as conn:
        keys = conn.execute(select(EVENTS.c.key)).scalars().all()
    assert all(len(key) <= KEY_CHARS for key in keys)


def test_expired_events_are_deleted_as_new_ones_arrive(database: Path) -> None:
    clock = Clock()
    window = SlidingWindow(_engine(database), "register_address", Rate(10, 60), clock)
    for _ in range(4):
        window.record("a")
    clock.now += 61
    window.record("a")
    with window.engine.connect() as conn:
        rows = conn.execute(select(func.count()).select_from(EVENTS)).scalar_one()
    assert rows == 1
