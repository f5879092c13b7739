"""A server entry as a cassette stores it (with what could be a secret redacted), read back, and
digested: replay and drift start servers from the entry that was recorded.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mcpgw.gateway.specs.server_spec import (
    ENV_REF_RE,
    PLAIN_VALUE_RE,
    RUN_STATE_VAR,
    SECRET_NAME_RE,
    Pin,
    ServerSpec,
    Source,
)


def spec_to_dict(spec: ServerSpec) -> dict[str, Any]:
    """A lock entry as stored in a cassette: literal env values are never kept (any may be a secret)."""
    return {
        "id": spec.id,
        "transport": spec.transport,
        "command": spec.command,
        "args": list(spec.args),
        "cwd": spec.cwd,
        "env_required": list(spec.env_required),
        "env_values": {
            k: (
                v
                if ENV_REF_RE.fullmatch(v) or PLAIN_VALUE_RE.fullmatch(v) or "${%s}" % RUN_STATE_VAR in v
                else "«redacted»"
            )
            for k, v in spec.env_values.items()
        },
        "url": spec.url,
        "headers": {
            k: (v if "${" in v or not SECRET_NAME_RE.search(k) else "«redacted»") for k, v in spec.headers.items()
        },
        "pin": dict(vars(spec.pin)) if spec.pin else None,
        "flags": sorted(spec.flags),
        "timeout": spec.timeout,
        "hide_tools": sorted(spec.hide_tools),
        "title": spec.title,
        "ignore": [dict(r) for r in spec.ignore],
        "isolation": spec.isolation,
        "state_group": spec.state_group,
        **({"source": dict(vars(spec.source)), "build": spec.build} if spec.source else {}),
        **({"simulate": spec.simulate} if spec.simulate else {}),  # only when set: older entries' digests hold
    }


def spec_from_dict(data: dict[str, Any]) -> ServerSpec:
    return ServerSpec(
        id=data["id"],
        transport=data.get("transport", "stdio"),
        command=data.get("command"),
        args=tuple(data.get("args") or ()),
        cwd=data.get("cwd"),
        env_required=tuple(data.get("env_required") or ()),
        env_values=dict(data.get("env_values") or {}),
        url=data.get("url"),
        headers=dict(data.get("headers") or {}),
        pin=Pin(**data["pin"]) if data.get("pin") else None,
        flags=frozenset(data.get("flags") or ()),
        timeout=data.get("timeout"),
        hide_tools=frozenset(data.get("hide_tools") or ()),
        title=data.get("title"),
        ignore=tuple(data.get("ignore") or ()),
        isolation=data.get("isolation"),
        state_group=data.get("state_group"),
        source=Source(**data["source"]) if data.get("source") else None,
        build=data.get("build"),
        simulate=data.get("simulate"),
    )


def spec_digest(spec: ServerSpec) -> str:
    return hashlib.sha256(json.dumps(spec_to_dict(spec), sort_keys=True).encode()).hexdigest()[:16]
