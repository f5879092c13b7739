"""The identity an untagged HTTP client keeps: a cookie, else its TCP connection (unit test of one layer)."""

from __future__ import annotations

import anyio

from mcpgw.gateway.sessions.client_identity import COOKIE, ClientIdentity
from mcpgw.gateway.sessions.request_context import CONNECTION, Connection, context_of

HEADER = b"x-mcpgw-client"  # what the layer once set: a client's copy must count for nothing


_CONNECTIONS: dict[tuple[str, int], Connection] = {}


def call(
    layer: ClientIdentity,
    client: tuple[str, int],
    headers: list[tuple[bytes, bytes]] = (),
    answer_headers: list[tuple[bytes, bytes]] = (),
    connection: Connection | None = None,
) -> tuple[str, str | None]:
    """One request through the layer: (identity the handler saw, Set-Cookie sent back or None); on `connection`,
    else on the one connection this test file keeps per source address and port."""
    connection = connection or _CONNECTIONS.setdefault(client, Connection())
    seen: dict[str, str] = {}
    sent: list[dict] = []

    async def app(scope, receive, send):
        seen["id"] = context_of(scope).client
        await send({"type": "http.response.start", "status": 200, "headers": list(answer_headers)})
        await send({"type": "http.response.body", "body": b""})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    layer.app = app
    anyio.run(
        layer, {"type": "http", "client": client, "headers": list(headers), CONNECTION: connection}, receive, send
    )
    cookies = [v.decode() for k, v in sent[0]["headers"] if k == b"set-cookie"]
    return seen["id"], cookies[0] if cookies else None


def test_a_connection_without_cookies_keeps_one_identity_and_is_offered_a_cookie():
    layer = ClientIdentity(None)
    first, offered = call(layer, ("127.0.0.1", 5001))
    again, offered_again = call(layer, ("127.0.0.1", 5001))
    other, _ = call(layer, ("127.0.0.1", 5002))
    assert first == again != other
    assert offered.startswith(f"{COOKIE}={first};") and "HttpOnly" in offered and offered_again == offered


def test_two_clients_one_after_the_other_from_the_same_source_port_are_two_identities():
    """Issue 41 item 3: the address and port were the key (for 600 s), so a second client that reused the first
    one's source port shared its lane. Each connection is its own, whatever its address and port."""
    layer = ClientIdentity(None)
    first, _ = call(layer, ("127.0.0.1", 5100), connection=Connection())
    second, _ = call(layer, ("127.0.0.1", 5100), connection=Connection())
    assert first != second


def test_a_request_naming_no_connection_is_a_client_of_its_own():
    layer = ClientIdentity(None)

    async def app(scope, receive, send):
        seen.append(context_of(scope).client)

    seen: list[str] = []
    layer.app = app
    for _ in range(2):
        anyio.run(layer, {"type": "http", "client": ("127.0.0.1", 5200), "headers": []}, None, None)
    assert len(set(seen)) == 2


def test_the_cookie_wins_over_the_connection_and_forged_headers_are_replaced():
    layer = ClientIdentity(None)
    headers = [(b"cookie", f"other=1; {COOKIE}=abcdef0123456789".encode()), (HEADER, b"forged-identity")]
    on_one, set_one = call(layer, ("127.0.0.1", 6001), headers)
    on_two, set_two = call(layer, ("127.0.0.1", 6002), headers)
    assert on_one == on_two == "abcdef0123456789"
    assert set_one is None and set_two is None


def test_a_malformed_cookie_is_ignored():
    """As if there were no cookie: the connection's identity, and the connection's cookie offered."""
    layer = ClientIdentity(None)
    plain, plain_offer = call(layer, ("127.0.0.1", 7001))
    for value in (b"../../etc", b"x" * 200, b"short"):
        identity, offered = call(layer, ("127.0.0.1", 7001), [(b"cookie", COOKIE.encode() + b"=" + value)])
        assert (identity, offered) == (plain, plain_offer), value


def test_a_handshake_session_is_never_offered_the_cookie():
    """Its session id names it; a cookie would only cost the client on every later request."""
    layer = ClientIdentity(None)
    _, on_initialize = call(layer, ("127.0.0.1", 8001), answer_headers=[(b"mcp-session-id", b"abc123")])
    identity, on_a_call = call(layer, ("127.0.0.1", 8001), [(b"mcp-session-id", b"abc123")])
    _, sessionless = call(layer, ("127.0.0.1", 8001))
    assert on_initialize is None and on_a_call is None
    assert identity is None  # nothing to add: the session is the identity
    assert sessionless is not None
