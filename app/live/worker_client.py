"""Talks to the demo worker's rank 0 over its newline-delimited JSON protocol (see demos/worker.py).

Plain asyncio on purpose: the web process never imports torch, and one job is one TCP
connection, so closing the connection is how a job is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

MAX_LINE_BYTES = 4 * 2**20
RETRY_DELAY_S = 0.1
FINAL_EVENTS = ("done", "error")


class WorkerUnavailable(Exception):
    """The worker could not be reached, or stopped answering."""


def parse_address(address: str) -> tuple[str, int]:
    """'host:port' (or '[v6]:port') as a (host, port) pair."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected host:port, got {address!r}")
    return host.strip("[]"), int(port)


class WorkerClient:
    def __init__(
        self,
        address: str,
        token: str,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 120.0,
    ) -> None:
        self.address = address
        self.host, self.port = parse_address(address)
        self.token = token
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s

    async def _connect(self, timeout_s: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Retries until `timeout_s`, because a worker that is starting refuses connections."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            remaining = deadline - loop.time()
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port, limit=MAX_LINE_BYTES),
                    timeout=max(remaining, RETRY_DELAY_S),
                )
            except (OSError, TimeoutError) as exc:
                reason = str(exc) or type(exc).__name__
            if loop.time() + RETRY_DELAY_S >= deadline:
                raise WorkerUnavailable(
                    f"the demo worker at {self.address} did not accept a connection within "
                    f"{timeout_s:g} s (last error: {reason}); is it running?"
                )
            await asyncio.sleep(RETRY_DELAY_S)

    async def _request(
        self, request: dict[str, Any], timeout_s: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await self._connect(timeout_s)
        try:
            writer.write(json.dumps({"token": self.token, **request}).encode() + b"\n")
            await writer.drain()
        except OSError as exc:
            writer.close()
            raise WorkerUnavailable(f"the demo worker at {self.address} dropped us: {exc}") from exc
        return reader, writer

    async def _read_event(
        self, reader: asyncio.StreamReader, timeout_s: float
    ) -> dict[str, Any] | None:
        """The next event, or None when the worker closed the connection."""
        try:
            line = await asyncio.wait_for(reader.readline(), timeout_s)
        except TimeoutError as exc:
            raise WorkerUnavailable(
                f"the demo worker at {self.address} sent nothing for {timeout_s:g} s "
                "(it answers one request at a time: a long job may be running)"
            ) from exc
        except (OSError, ValueError) as exc:
            raise WorkerUnavailable(f"lost the demo worker at {self.address}: {exc}") from exc
        if not line:
            return None
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise WorkerUnavailable(f"the demo worker sent a line that is not JSON: {exc}") from exc
        if not isinstance(event, dict) or "event" not in event:
            raise WorkerUnavailable(f"the demo worker sent an unexpected line: {line[:200]!r}")
        return event

    async def status(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The worker's `status` event; WorkerUnavailable if it cannot be had.

        `timeout_s`, when given, bounds the whole exchange (a health check must not wait
        for a running job to end); otherwise the connect and read timeouts apply.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        connect_s = self.connect_timeout_s if timeout_s is None else timeout_s
        reader, writer = await self._request({"op": "status"}, connect_s)
        if timeout_s is None:
            read_s = self.read_timeout_s
        else:
            read_s = max(timeout_s - (loop.time() - started), RETRY_DELAY_S)
        try:
            event = await self._read_event(reader, read_s)
        finally:
            writer.close()
        if event is None:
            raise WorkerUnavailable(f"the demo worker at {self.address} closed without answering")
        if event["event"] != "status":
            raise WorkerUnavailable(
                f"the demo worker at {self.address} refused: {event.get('message', event)}"
            )
        return event

    async def run(self, demo: str, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Every event of one job, ending with `done` or `error`.

        Closing this generator (aclose, or cancelling the task iterating it) closes the
        socket, which stops the job on the worker after its current iteration.
        """
        request = {"op": "run", "demo": demo, "params": params}
        reader, writer = await self._request(request, self.connect_timeout_s)
        try:
            while True:
                event = await self._read_event(reader, self.read_timeout_s)
                if event is None:
                    # Rank 0 itself is gone (a crashed rank's error comes from rank 0):
                    # `worker_lost` tells the app to send the next runs elsewhere.
                    yield {
                        "event": "error",
                        "message": "the demo worker closed the connection before the job ended",
                        "worker_lost": True,
                    }
                    return
                yield event
                if event["event"] in FINAL_EVENTS:
                    return
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
