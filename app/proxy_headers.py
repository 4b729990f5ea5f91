"""The client's address and scheme from X-Forwarded-For/-Proto, believed only from our proxies.

Issue #25, finding 3: uvicorn trusting every peer (`*`) took the leftmost X-Forwarded-For
value, which the client writes itself, so rotating it escaped every rate limit. Each proxy
appends the address it was connected from, so only the right end of the list is vouched for:
walking it from the right, past the proxies we trust, the first hop that is not one of them is
the client. A peer that is no trusted proxy is the client, whatever its headers say.

Here, not in uvicorn's --proxy-headers, so that one setting (SHARDLAB_TRUSTED_PROXIES) holds
under any ASGI server and in the tests; the image runs uvicorn with --no-proxy-headers.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# A real chain is a CDN, a load balancer and a proxy or two; hops beyond this many from the
# right are never read, so a header of thousands costs no more than one of a few.
MAX_HOPS = 16
# How proxies write one hop: a bare address, IPv4 with a port, or [IPv6] with or without one.
_BRACKETED_V6 = re.compile(r"\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?")
_V4_WITH_PORT = re.compile(r"([0-9.]+):\d{1,5}")


def parse_trusted_proxies(text: str | None) -> tuple[IPNetwork, ...]:
    """'172.31.254.10, 10.0.0.0/8' -> networks; None or '' trusts nothing. Raises ValueError
    naming an entry that is no address or network ('*' included: name the proxies)."""
    networks = []
    for entry in (text or "").split(","):
        if entry.strip():
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(
                    f"{entry.strip()!r} is not an IP address or network: list the addresses "
                    "of your reverse proxies, comma-separated, for example 172.31.254.10 or "
                    "10.0.0.0/8"
                ) from None
    return tuple(networks)


def hop_address(hop: str) -> IPAddress | None:
    """One X-Forwarded-For entry as an address; None when it is not one."""
    text = hop.strip()
    if match := _BRACKETED_V6.fullmatch(text) or _V4_WITH_PORT.fullmatch(text):
        text = match[1]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    # An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d: one client, one key.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def is_trusted(address: IPAddress | None, trusted: Iterable[IPNetwork]) -> bool:
    return address is not None and any(address in network for network in trusted)


def forwarded_client(peer: str, forwarded_for: str, trusted: tuple[IPNetwork, ...]) -> str:
    """The client behind `peer`, a trusted proxy: the rightmost hop of `forwarded_for` that is
    not a trusted proxy. A hop that is no address ends the walk at the last address read (a
    trusted proxy, or `peer`): what lies left of it was not written by a proxy we know."""
    client = peer
    for hop in reversed(forwarded_for.rsplit(",", MAX_HOPS)[-MAX_HOPS:]):
        address = hop_address(hop)
        if address is None:
            break
        client = str(address)
        if not is_trusted(address, trusted):
            break
    return client


class ProxyHeaders:
    """Sets the scope's client and scheme from the forwarded headers of a trusted peer (pure
    ASGI, so it never buffers a stream). Outermost, so the request log sees the client too."""

    def __init__(self, app: ASGIApp, trusted_proxies: str | None = None) -> None:
        self.app = app
        self.trusted = parse_trusted_proxies(trusted_proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client")
        if (
            self.trusted
            and scope["type"] in ("http", "websocket")
            and peer
            and is_trusted(hop_address(peer[0]), self.trusted)
        ):
            self._apply(scope, peer[0])
        await self.app(scope, receive, send)

    def _apply(self, scope: Scope, peer: str) -> None:
        forwarded_for: list[str] = []
        proto = ""
        for name, value in scope["headers"]:
            if name == b"x-forwarded-for":
                forwarded_for.append(value.decode("latin-1"))
            elif name == b"x-forwarded-proto":
                # The rightmost value is the one our nearest (trusted) proxy wrote.
                proto = value.decode("latin-1").rsplit(",", 1)[-1].strip().lower()
        client = forwarded_client(peer, ",".join(forwarded_for), self.trusted)
        if client != peer:
            # The port was the proxy's connection's; the client's is unknown, so 0.
            scope["client"] = (client, 0)
        if proto in ("http", "https"):
            scope["scheme"] = proto if scope["type"] == "http" else proto.replace("http", "ws")
