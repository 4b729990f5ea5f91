"""Whose address a request comes from, behind proxies (issue #25, finding 3).

X-Forwarded-For is believed only from the proxies in SHARDLAB_TRUSTED_PROXIES, and read from
the right: the first hop that is not a trusted proxy is the client. Each test asks the app
through HTTP and reads the answer where the app uses it: the request log's `client` (the
address rate limits key on too) or a 429.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.main import create_app
from tests.utils import csrf_token, deployed_server, make_settings

PROXY = "10.0.0.2"  # the peer of most tests: a reverse proxy, trusted or not
CLIENT = "203.0.113.7"  # the browser behind it (RFC 5737 documentation addresses)


@contextmanager
def _client(tmp_path: Path, peer: str = PROXY, **overrides: object) -> Iterator[TestClient]:
    app = create_app(make_settings(tmp_path / "data", **overrides))
    with TestClient(app, client=(peer, 4711)) as client:
        yield client


def _seen_as(
    client: TestClient,
    caplog: pytest.LogCaptureFixture,
    headers: httpx.Headers | dict[str, str] | None = None,
) -> str:
    """The client address the app logs for one request carrying `headers`."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="shardlab.access"):
        response = client.get("/login", headers=headers)
    assert response.status_code == 200, response.text
    (line,) = [r for r in caplog.records if r.name == "shardlab.access"]
    return line.client  # type: ignore[attr-defined]


def _sign_up(client: TestClient, username: str, forwarded_for: str) -> int:
    """A new visitor's sign-up: a fresh session, its token, the form posted."""
    client.cookies.clear()
    data = {"username": username, "password": "correct horse", "csrf_token": csrf_token(client)}
    headers = {"X-Forwarded-For": forwarded_for}
    return client.post("/register", data=data, headers=headers, follow_redirects=False).status_code


def test_a_peer_that_is_no_trusted_proxy_is_the_client_whatever_it_claims(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _client(tmp_path, peer="198.51.100.4", trusted_proxies=PROXY) as client:
        assert _seen_as(client, caplog, {"X-Forwarded-For": CLIENT}) == "198.51.100.4"
    # Nothing is trusted unless named: the default believes no header from anyone.
    with _client(tmp_path) as client:
        assert _seen_as(client, caplog, {"X-Forwarded-For": CLIENT}) == PROXY


def test_a_trusted_proxy_names_the_client_it_saw(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _client(tmp_path, trusted_proxies=PROXY) as client:
        assert _seen_as(client, caplog, {"X-Forwarded-For": CLIENT}) == CLIENT
        assert _seen_as(client, caplog) == PROXY  # no header: the proxy's own request


def test_spoofed_leftmost_values_do_not_escape_the_sign_up_limit(tmp_path: Path) -> None:
    # The finding: 25 sign-ups, each claiming a new address in front of what the proxy
    # appends, all passed a limit of 20/hour. The proxy's own hop names the one client.
    with _client(tmp_path, trusted_proxies=PROXY, register_rate_limit="20/hour") as client:
        statuses = [_sign_up(client, f"user{i}", f"198.18.0.{i}, {CLIENT}") for i in range(25)]
        assert statuses == [303] * 20 + [429] * 5
        # Another visitor behind the same proxy has a limit of their own.
        assert _sign_up(client, "other", f"198.18.0.99, {CLIENT[:-1]}8") == 303


def test_a_chain_of_trusted_proxies_is_walked_from_the_right(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _client(tmp_path, trusted_proxies=f"{PROXY}, 10.0.0.3") as client:
        # A CDN at 10.0.0.3 appended the client; the proxy at PROXY appended the CDN.
        chain = {"X-Forwarded-For": f"192.0.2.66, {CLIENT}, 10.0.0.3"}
        assert _seen_as(client, caplog, chain) == CLIENT
        # An untrusted hop in the chain is as far as anything can be believed.
        relayed = {"X-Forwarded-For": f"{CLIENT}, 198.51.100.9, 10.0.0.3"}
        assert _seen_as(client, caplog, relayed) == "198.51.100.9"
        # Two header lines are one list, in order.
        lines = [("X-Forwarded-For", "192.0.2.66"), ("X-Forwarded-For", f"{CLIENT}, 10.0.0.3")]
        assert _seen_as(client, caplog, httpx.Headers(lines)) == CLIENT


def test_networks_are_trusted_by_cidr(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    networks = "10.0.0.0/24, 2001:db8::/32"
    with _client(tmp_path, peer="10.0.0.77", trusted_proxies=networks) as client:
        assert _seen_as(client, caplog, {"X-Forwarded-For": f"{CLIENT}, 10.0.0.5"}) == CLIENT
    with _client(tmp_path, peer="2001:db8::5", trusted_proxies=networks) as client:
        hops = {"X-Forwarded-For": f"{CLIENT}, [2001:db8:ffff::1]:8443"}
        assert _seen_as(client, caplog, hops) == CLIENT
    with _client(tmp_path, peer="10.0.1.1", trusted_proxies=networks) as client:
        # Just outside the network: not a proxy of ours, so its header is not believed.
        assert _seen_as(client, caplog, {"X-Forwarded-For": CLIENT}) == "10.0.1.1"


@pytest.mark.parametrize(
    ("forwarded_for", "seen_as"),
    [
        ("", PROXY),  # an empty header is no header
        ("   ,  ,", PROXY),
        ("garbage", PROXY),
        (f"{CLIENT}, unknown", PROXY),  # the proxy passed on what it was sent: key on it
        (f"garbage, {CLIENT}", CLIENT),
        (f"{CLIENT}:4711", CLIENT),
        ("[2001:db8::7]:4711", "2001:db8::7"),
        ("2001:db8::7", "2001:db8::7"),
        ("::ffff:203.0.113.7", CLIENT),  # an IPv4 address written the IPv6 way is one client
        ("999.1.1.1, [::1, 1.2.3.4:x, 1.2.3.4/8", PROXY),
        ("10.0.0.3, " * 5000 + "10.0.0.3", "10.0.0.3"),  # all proxies: the farthest examined
        (f"{CLIENT}, " + "10.0.0.3, " * 100 + "10.0.0.3", "10.0.0.3"),  # too many hops
        ("198.18.0.1, " * 5000 + CLIENT, CLIENT),
    ],
)
def test_malformed_forwarded_for_values_fall_back_to_an_address_seen(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, forwarded_for: str, seen_as: str
) -> None:
    with _client(tmp_path, trusted_proxies=f"{PROXY}, 10.0.0.3") as client:
        assert _seen_as(client, caplog, {"X-Forwarded-For": forwarded_for}) == seen_as


def test_undecodable_header_bytes_are_garbage_not_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _client(tmp_path, trusted_proxies=PROXY) as client:
        headers = httpx.Headers(
            [(b"X-Forwarded-For", b"\xff\xfe\x00"), (b"X-Forwarded-Proto", b"\xff")]
        )
        assert _seen_as(client, caplog, headers) == PROXY


def _post_from_https_page(client: TestClient, proto: str) -> httpx.Response:
    """A form post whose browser sends Origin only (no Sec-Fetch-Site): the app compares the
    origin with the scheme the request arrived with."""
    data = {"username": "", "password": "", "csrf_token": csrf_token(client)}
    headers = {"Origin": "https://testserver", "X-Forwarded-Proto": proto}
    return client.post("/register", data=data, headers=headers)


def test_forwarded_proto_is_believed_only_from_a_trusted_proxy(tmp_path: Path) -> None:
    with _client(tmp_path, trusted_proxies=PROXY) as client:
        assert _post_from_https_page(client, "https").status_code == 422  # the form's errors
        refused = _post_from_https_page(client, "gopher")
        assert refused.status_code == 403 and "cross-origin" in refused.text
    with _client(tmp_path, peer="198.51.100.4", trusted_proxies=PROXY) as client:
        refused = _post_from_https_page(client, "https")
        assert refused.status_code == 403 and "cross-origin" in refused.text


@pytest.mark.parametrize("value", ["*", "10.0.0.0/33", "proxy.example.org", "10.0.0.1;10.0.0.2"])
def test_a_trusted_proxies_entry_that_is_no_address_stops_the_app(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(ValidationError, match="trusted_proxies"):
        make_settings(tmp_path / "data", trusted_proxies=value)


# The deployed server: the image's uvicorn command and compose's environment for the app,
# served for real on loopback (the reverse proxy played by this test, at 127.0.0.1).


def _visitor_token(visitor: httpx.Client) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', visitor.get("/login").text)
    assert match, "no csrf_token field on /login"
    return match[1]


def _deployed_sign_up(base: str, username: str, forwarded_for: str) -> int:
    with httpx.Client(base_url=base) as visitor:
        data = {"username": username, "password": "correct horse"}
        data["csrf_token"] = _visitor_token(visitor)
        headers = {"X-Forwarded-For": forwarded_for}
        return visitor.post("/register", data=data, headers=headers).status_code


def test_the_deployed_server_limits_spoofed_sign_ups_and_log_ins(tmp_path: Path) -> None:
    # The finding as it was measured: uvicorn started as the image starts it, compose's
    # environment, and a new X-Forwarded-For value on every request. 127.0.0.1 plays the
    # trusted proxy, appending the one real client; the limits are small to keep this short.
    limits = {"SHARDLAB_REGISTER_RATE_LIMIT": "5/hour", "SHARDLAB_LOGIN_RATE_LIMIT": "3/minute"}
    with deployed_server(tmp_path, SHARDLAB_TRUSTED_PROXIES="127.0.0.1", **limits) as base:
        sign_ups = [
            _deployed_sign_up(base, f"user{i}", f"198.18.0.{i}, {CLIENT}") for i in range(7)
        ]
        assert sign_ups == [303] * 5 + [429] * 2
        with httpx.Client(base_url=base) as visitor:
            data = {"username": "user0", "password": "wrong", "csrf_token": _visitor_token(visitor)}
            logins = [
                visitor.post(
                    "/login", data=data, headers={"X-Forwarded-For": f"198.18.1.{i}, {CLIENT}"}
                ).status_code
                for i in range(4)
            ]
        assert logins == [422] * 3 + [429]
