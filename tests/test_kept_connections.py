"""A learner's connection outlives a pause between pages: the image's server keeps an idle
connection 75 s, where uvicorn's default closes it after 5 s and the next page opens a new
one (docs/architecture.md, "Connections kept")."""

from __future__ import annotations

import http.client
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.utils import deployed_server

UVICORN_DEFAULT_S = 5


def test_the_image_answers_on_the_same_connection_after_a_pause(tmp_path: Path) -> None:
    with deployed_server(tmp_path) as base:
        url = urlsplit(base)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            conn.request("GET", "/healthz")
            first = conn.getresponse()
            first.read()
            used = conn.sock.getsockname()
            time.sleep(UVICORN_DEFAULT_S + 1.5)
            # http.client reuses its socket as long as it is open: a server that closed the
            # connection makes this raise RemoteDisconnected rather than reconnect.
            conn.request("GET", "/healthz")
            second = conn.getresponse()
            second.read()
            assert (first.status, second.status) == (200, 200)
            assert conn.sock.getsockname() == used
        finally:
            conn.close()
