"""Sliding-window rate limits kept in memory, and a dependency that applies one to a route.

In memory is enough for ShardLab's one process (the app runs with one uvicorn worker, see
the Dockerfile); a restart forgets the counts, which errs on the side of letting people in.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Depends, Request

from app.calc.messages import N_, Message

_UNITS_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)?\s*(second|minute|hour|day)s?\s*$")


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


class SlidingWindow:
    """At most `rate.count` events per key in any window of `rate.window_s` seconds."""

    # Past this many keys, keys whose events have all expired are dropped, so a flood of
    # addresses cannot grow memory without bound.
    PRUNE_AT = 10_000

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        # Sync routes run in a thread pool: the check and the record must not interleave.
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - self.rate.window_s:
            events.popleft()
        return events

    def retry_after_s(self, key: str) -> float:
        """0 when one more event is allowed now; else the seconds until it will be."""
        with self._lock:
            now = self._clock()
            events = self._recent(key, now)
            if len(events) < self.rate.count:
                return 0.0
            return events[0] + self.rate.window_s - now

    def count(self, key: str) -> int:
        """The events of `key` in the current window."""
        with self._lock:
            return len(self._recent(key, self._clock()))

    def record(self, key: str) -> None:
        with self._lock:
            now = self._clock()
            self._recent(key, now).append(now)
            if len(self._events) > self.PRUNE_AT:
                for stale in [
                    k for k, v in self._events.items() if not v or v[-1] <= now - self.rate.window_s
                ]:
                    del self._events[stale]

    def hit(self, key: str) -> float:
        """Records the event if allowed and returns 0; else the seconds to wait."""
        with self._lock:
            now = self._clock()
            events = self._recent(key, now)
            if len(events) >= self.rate.count:
                return events[0] + self.rate.window_s - now
            events.append(now)
            return 0.0


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


def limits_for(login: str, register: str, demo: str, calibrate: str) -> dict[str, SlidingWindow]:
    return {
        "login_address": SlidingWindow(parse_rate(login)),
        "login_username": SlidingWindow(parse_rate(login)),
        "login_failed_address": SlidingWindow(parse_rate(login)),
        "register_address": SlidingWindow(parse_rate(register)),
        "demo": SlidingWindow(parse_rate(demo)),
        "calibrate": SlidingWindow(parse_rate(calibrate)),
        "import": SlidingWindow(parse_rate(IMPORT_RATE)),
    }
