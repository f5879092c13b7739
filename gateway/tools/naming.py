"""Exposed names for upstream tools and prompts.

Default: `<server><sep><tool>`, which must satisfy the strictest common client
rule (OpenAI function names) `^[a-zA-Z0-9_-]{1,64}$`. A name that would break
it gets a deterministic alias: characters outside the set become `_`, and a
name still too long keeps a readable prefix plus a hash fragment of the
original pair. Two sources that land on one name are an error at start.

Benchmark mode reproduces MCP-Bench's `Server Name:tool` names verbatim
(they do not satisfy the rule; that is the benchmark's choice).

Bare mode keeps upstream names as they are, for a gateway that must look like
the server(s) behind it. Auto (the default) is bare in front of one server, as its
per-server endpoint names its tools, and prefix in front of several: `chosen_mode`. A name two servers share cannot stay bare: those names
alone get the prefix form for every server offering them (so the result does not
depend on which server started first), and the catalog reports each one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_LEN = 64
_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


class NameCollision(ValueError):
    pass


def chosen_mode(mode: str, servers: int) -> str:
    """The naming a gateway in front of `servers` servers uses: "auto" is bare in front of one, else prefix.
    Names change for clients only: cassette keys hold the server id and its own tool name, whatever the mode."""
    if mode != "auto":
        return mode
    return "bare" if servers == 1 else "prefix"


@dataclass(frozen=True, slots=True)
class NamingPolicy:
    separator: str = "__"
    mode: str = "prefix"  # "prefix" | "benchmark" | "bare"

    def expose(self, server_id: str, display_name: str, name: str, *, shared: bool = False) -> str:
        """The exposed name; `shared`: another server offers the same name (matters in bare mode)."""
        if self.mode == "benchmark":
            return f"{display_name}:{name}"
        if self.mode == "bare" and not shared:
            return name
        candidate = f"{server_id}{self.separator}{name}"
        if NAME_RE.match(candidate):
            return candidate
        return _alias(server_id, self.separator, name)


def shared_names(offers: dict[str, list[str]]) -> dict[str, list[str]]:
    """name -> the servers offering it, for names more than one server offers."""
    owners: dict[str, list[str]] = {}
    for server_id, names in offers.items():
        for name in dict.fromkeys(names):
            owners.setdefault(name, []).append(server_id)
    return {name: servers for name, servers in owners.items() if len(servers) > 1}


def _alias(server_id: str, separator: str, name: str) -> str:
    digest = hashlib.sha1(f"{server_id}\0{name}".encode()).hexdigest()[:8]
    cleaned = _BAD_CHARS.sub("_", name)
    head = f"{server_id}{separator}"
    candidate = head + cleaned
    if len(candidate) <= MAX_LEN and cleaned == name:
        return candidate
    # Keep as much of the readable name as fits beside the hash fragment.
    room = MAX_LEN - len(head) - len(digest) - 1
    if room < 4:  # a very long server id: shorten it too
        head = f"{server_id[: MAX_LEN // 2]}{separator}"
        room = MAX_LEN - len(head) - len(digest) - 1
    return f"{head}{cleaned[:room]}_{digest}"


class NameTable:
    """exposed name <-> (server id, upstream name), built once per catalog version."""

    def __init__(self) -> None:
        self.by_exposed: dict[str, tuple[str, str]] = {}
        self.by_source: dict[tuple[str, str], str] = {}

    def add(self, exposed: str, server_id: str, name: str) -> None:
        other = self.by_exposed.get(exposed)
        if other is not None and other != (server_id, name):
            raise NameCollision(
                f"exposed name {exposed!r} would be used by both {other[0]}:{other[1]!r} and {server_id}:{name!r}"
            )
        self.by_exposed[exposed] = (server_id, name)
        self.by_source[(server_id, name)] = exposed

    def resolve(self, exposed: str) -> tuple[str, str] | None:
        return self.by_exposed.get(exposed)
