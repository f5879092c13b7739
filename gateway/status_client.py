"""Reading a running gateway's `/status` from a command (`mcpgw servers`, `mcpgw connect`)."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.errors import GatewayError


def fetch_status(base: str, token: str | None) -> dict[str, Any]:
    """The gateway's /status, or a GatewayError saying that no gateway answers at `base`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(base.rstrip("/") + "/status", timeout=5, headers=headers)
        response.raise_for_status()
        return response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise GatewayError(f"no gateway answering at {base} ({exc}); start one with `mcpgw serve`") from None
