"""Reading a running gateway's `/status` from a command (`mcpgw servers`, `mcpgw connect`)."""

from __future__ import annotations

from typing import Any

import httpx

from mcpgw.gateway.errors.tree import GatewayError


def gateway_base(url: str) -> str:
    """A gateway's base URL, also from the MCP endpoint `serve` prints (`.../mcp`): /status is beside it."""
    return url.rstrip("/").removesuffix("/mcp")


def fetch_status(base: str, token: str | None) -> dict[str, Any]:
    """The gateway's /status, or a GatewayError saying that no gateway answers at `base`, or that it wants a token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(gateway_base(base) + "/status", timeout=5, headers=headers)
        if response.status_code == 401:  # a gateway is answering: it wants (another) token, not starting
            problem = "refused the bearer token given" if token else "needs a bearer token"
            raise GatewayError(
                f"the gateway at {base} {problem}: pass its token with --auth-token-env VAR (or --auth-token-file FILE)"
            )
        response.raise_for_status()
        status: dict[str, Any] = response.json()
        return status
    except (httpx.HTTPError, ValueError) as exc:
        raise GatewayError(f"no gateway answering at {base} ({exc}); start one with `mcpgw serve`") from None
