"""Sliding-window rate limits kept in the database, and a dependency that applies one to a route.

In the database, not in memory, so that every web process (uvicorn workers, replicas behind a
proxy, cohort mode) counts against the same window: a limit of 10 log-ins a minute stays 10
however many processes answer. The `limits` library would be the off-the-shelf choice, but its
shared storages are Redis, Memcached and MongoDB; the app already has one shared store, so the
events live there (docs/architecture.md). Only rate-limited actions write a row (log-ins,
registrations, demo launches, calibrations, imports), a handful per learner per hour.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Depends, Request
from sqlalchemy import Connection, Engine, Index, delete, func, insert, select, text
from sqlmodel import Field, SQLModel

from app.calc.messages import N_, Message

_UNITS_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)?\s*(second|minute|hour|day)s?\s*$")
# A key longer than this (a username typed into the log-in form can be long) is stored as its
# SHA-256, so the column stays bounded and distinct keys stay distinct.
KEY_CHARS = 96
# One write in this many also deletes every expired event of its limit, so keys that never
# come back (a flood of addresses) do not grow the table without bound.
PRUNE_ONE_IN = 64


@dataclass(frozen=True)
class Rate:
    count: int
    window_s: float


def parse_rate(text: str) -> Rate:
    """'10/minute', '20/hour', '5/10minutes': so many events per window."""
    match = _RATE.match(text.lower())
    if not match or int(match.group(1)) < 1:
        raise ValueError(
            f"{text!r} is not a rate: write N/unit or N/Munits with unit second, minute, "
            "hour or day, for example 10/minute or 5/10minutes"
        )
    return Rate(int(match.group(1)), int(match.group(2) or 1) * _UNITS_S[match.group(3)])


class RateLimitEvent(SQLModel, table=True):
    """One counted event of limit `name` for `key` (an address, a user, a username) at `at`
    (seconds since the epoch: a wall clock, because processes on several hosts share it)."""

    __table_args__ = (Index("ix_ratelimitevent_name_key_at", "name", "key", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=32)
    key: str = Field(max_length=KEY_CHARS)
    at: float


_EVENT = RateLimitEvent.__table__


def _stored_key(key: str) -> str:
    if len(key) <= KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


class SlidingWindow:
    """At most `rate.count` events per key in any window of `rate.window_s` seconds, counted
    in the database table of RateLimitEvent under the limit's `name`."""

    def __init__(
        self,
        engine: Engine,
        name: str,
        rate: Rate,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.name = name
        self.rate = rate
        self._clock = clock

    def _window(self, conn: Connection, key: str, now: float) -> tuple[int, float | None]:
        """How many events `key` has in the window ending at `now`, and the oldest one's time."""
        row = conn.execute(
            select(func.count(), func.min(_EVENT.c.at)).where(
                _EVENT.c.name == self.name,
                _EVENT.c.key == key,
                _EVENT.c.at > now - self.rate.window_s,
            )
        ).one()
        return row[0], row[1]

    def _wait_s(self, count: int, oldest: float | None, now: float) -> float:
        if count < self.rate.count or oldest is None:
            return 0.0
        return max(oldest + self.rate.window_s - now, 0.0)

    def retry_after_s(self, key: str) -> float:
        """0 when one more event is allowed now; else the seconds until it will be."""
        now = self._clock()
        with self.engine.connect() as conn:
            return self._wait_s(*self._window(conn, _stored_key(key), now), now)

    def count(self, key: str) -> int:
        """The events of `key` in the current window."""
        with self.engine.connect() as conn:
            return self._window(conn, _stored_key(key), self._clock())[0]

    def record(self, key: str) -> None:
        now = self._clock()
        with self.engine.begin() as conn:
            self._insert(conn, _stored_key(key), now)

    def hit(self, key: str) -> float:
        """Records the event if allowed and returns 0; else the seconds to wait.

        The check and the record are one transaction, serialised per key across processes:
        on PostgreSQL by a transaction-scoped advisory lock on the key; on SQLite the INSERT
        comes first, which takes the database's one write lock before the count is read. So
        two processes can never both take the last event of a window.
        """
        key = _stored_key(key)
        now = self._clock()
        with self.engine.connect() as conn, conn.begin() as transaction:
            if conn.dialect.name == "postgresql":
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(:lock)"),
                    {"lock": _lock_id(self.name, key)},
                )
            self._insert(conn, key, now)
            count, oldest = self._window(conn, key, now)
            if count <= self.rate.count:
                return 0.0
            transaction.rollback()
        # Refused: without this event the window holds count - 1, and this one, the newest,
        # was not the oldest, so the wait needs no second read.
        return self._wait_s(count - 1, oldest, now)

    def _insert(self, conn: Connection, key: str, now: float) -> None:
        conn.execute(insert(_EVENT).values(name=self.name, key=key, at=now))
        expired = _EVENT.c.at <= now - self.rate.window_s
        if random.randrange(PRUNE_ONE_IN) == 0:
            conn.execute(delete(_EVENT).where(_EVENT.c.name == self.name, expired))
        else:
            conn.execute(
                delete(_EVENT).where(_EVENT.c.name == self.name, _EVENT.c.key == key, expired)
            )


def _lock_id(name: str, key: str) -> int:
    """A signed 64-bit advisory-lock id for one limit's key (PostgreSQL's bigint)."""
    digest = hashlib.sha256(f"rate-limit:{name}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class RateLimited(Exception):
    """Turned into a 429 with Retry-After and `message` by the app's exception handler."""

    def __init__(self, retry_after_s: float, message: str) -> None:
        self.retry_after_s = max(1, math.ceil(retry_after_s))
        self.message = message
        super().__init__(message)


def client_address(request: Request) -> str:
    # Behind the proxies in SHARDLAB_TRUSTED_PROXIES, the client they name: app/proxy_headers.py
    # has set it from X-Forwarded-For before any route runs.
    return request.client.host if request.client else "unknown"


def wait_message(retry_after_s: float, what: str) -> Message:
    """In English, and said again in the reader's language by the page (`what` is marked with
    N_() where it is named)."""
    seconds = max(1, math.ceil(retry_after_s))
    if seconds < 120:
        when = Message(N_("%(n)s seconds"), n=seconds)
    else:
        when = Message(N_("%(n)s minutes"), n=math.ceil(seconds / 60))
    return Message(
        N_("Too many %(what)s from here: please wait %(when)s and try again."),
        what=Message(what),
        when=when,
    )


def limit_per_user_and_address(
    name: str, what: str, record: bool = True
) -> Callable[[Request], None]:
    """A dependency: each of the user (when logged in) and the address may do `name` at the
    rate `app.state.limits[name]` allows; the request counts against both (with `record`
    False it only checks, for a step that comes before the one that counts)."""

    def dependency(request: Request) -> None:
        limiter: SlidingWindow = request.app.state.limits[name]
        keys = [f"address:{client_address(request)}"]
        user_id = request.session.get("user_id")
        if isinstance(user_id, int):
            keys.append(f"user:{user_id}")
        wait = max(limiter.retry_after_s(key) for key in keys)
        if wait > 0:
            raise RateLimited(wait, wait_message(wait, what))
        if record:
            for key in keys:
                limiter.record(key)

    return dependency


# A demo launch counts when its stream starts with valid parameters (count_demo_launch); the
# run panel before it only checks, so one click counts once and a refusal shows in the page
# before any stream opens.
count_demo_launch = limit_per_user_and_address("demo", N_("demo launches"))
DemoLaunchCheck = Depends(limit_per_user_and_address("demo", N_("demo launches"), record=False))
# A profile fit (the planner's calibration, page and API) counts when it is asked for.
count_calibration = limit_per_user_and_address("calibrate", N_("calibrations"))
# A progress import validates and merges a whole file (up to 21 MiB): a learner restores or
# moves their progress a few times, not in a loop (issue #25, finding 6).
IMPORT_RATE = "10/hour"
count_import = limit_per_user_and_address("import", N_("progress imports"))


def password_attempt_wait(request: Request, username: str) -> float:
    """Seconds before this address may try a password for `username` (0: now); the attempt
    counts. Every attempt counts against the address. Failures also count against the
    username, so guessing one account's password from many addresses is slowed down too; but
    that limit holds back only addresses that have failed lately, so the owner, at an address
    with no recent failure, still gets in while someone else guesses at the account."""
    limits = request.app.state.limits
    address = client_address(request)
    wait = limits["login_address"].hit(address)
    if not wait and limits["login_failed_address"].count(address):
        wait = limits["login_username"].retry_after_s(username.lower())
    return wait


def record_password_failure(request: Request, username: str) -> None:
    """A wrong password for `username` from this address (see password_attempt_wait)."""
    request.app.state.limits["login_username"].record(username.lower())
    request.app.state.limits["login_failed_address"].record(client_address(request))


def limits_for(
    engine: Engine, login: str, register: str, demo: str, calibrate: str
) -> dict[str, SlidingWindow]:
    rates = {
        "login_address": login,
        "login_username": login,
        "login_failed_address": login,
        "register_address": register,
        "demo": demo,
        "calibrate": calibrate,
        "import": IMPORT_RATE,
    }
    return {name: SlidingWindow(engine, name, parse_rate(rate)) for name, rate in rates.items()}
