"""`servers.lock.yaml`, format version 1: the top level (servers, profiles, default_profile,
separator) and each server entry, checked key by key.

`launch_fields` and `check_transport` (how to start or reach a server) are shared with the
`mcpServers` JSON shapes (lock.mcp_servers_json).
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import urlsplit

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.specs.server_spec import (
    DEFAULT_SEPARATOR,
    ENV_REF_RE,
    FLAGS,
    FREE_PORT_VAR,
    ISOLATION,
    RUN_STATE_VAR,
    SERVER_ID_RE,
    TRANSPORTS,
    GatewayConfig,
    Pin,
    ServerSpec,
    Source,
)
from mcpgw.lock.config_fields import LineMapping, check_keys, line_of, opt_str, str_list, str_map
from mcpgw.lock.recipe_syntax import RecipeError, parse_recipe

LOCK_FORMAT = 1


def from_lock(doc: LineMapping, source: str) -> GatewayConfig:
    check_keys(doc, {"version", "servers", "profiles", "default_profile", "separator"}, source, "the lock file")
    version = doc.get("version")
    if version != LOCK_FORMAT:
        raise ConfigError(
            source,
            line_of(doc, "version"),
            f"unsupported lock format version {version!r}; this gateway reads version {LOCK_FORMAT}",
        )
    separator = doc.get("separator", DEFAULT_SEPARATOR)
    if not isinstance(separator, str) or not separator or not re.fullmatch(r"[A-Za-z0-9_-]{1,3}", separator):
        raise ConfigError(source, line_of(doc, "separator"), "separator must be 1-3 characters of [A-Za-z0-9_-]")
    raw_servers = doc.get("servers")
    if not isinstance(raw_servers, LineMapping) or not raw_servers:
        raise ConfigError(
            source, line_of(doc, "servers"), "'servers' must be a non-empty mapping of server id -> entry"
        )
    servers: dict[str, ServerSpec] = {}
    for sid, entry in raw_servers.items():
        line = raw_servers.key_lines.get(str(sid), raw_servers.line)
        servers[str(sid)] = _lock_server(str(sid), entry, line, source, separator)
    profiles = _profiles(doc, servers, source)
    default = doc.get("default_profile")
    if default is not None and default not in profiles:
        raise ConfigError(
            source,
            line_of(doc, "default_profile"),
            f"default_profile {default!r} is not a profile; profiles: {sorted(profiles)}",
        )
    return GatewayConfig(source, servers, profiles, default, separator)


_LAUNCH_KEYS = {"transport", "command", "args", "cwd", "env", "url", "headers"}


def _lock_server(sid: str, entry: Any, line: int, source: str, separator: str) -> ServerSpec:
    where = f"server {sid!r}"
    if not SERVER_ID_RE.match(sid) or separator in sid:
        raise ConfigError(
            source,
            line,
            f"{where}: ids are 1-40 characters of [A-Za-z0-9_.-] and may not contain the separator {separator!r}",
        )
    if not isinstance(entry, LineMapping):
        raise ConfigError(source, line, f"{where}: expected a mapping")
    check_keys(entry, _LAUNCH_KEYS | LOCK_FIELDS, source, where)
    if "command" not in entry and "url" not in entry:
        raise ConfigError(source, line, f"{where}: needs a 'command' (stdio) or a 'url' (http, sse)")
    transport = entry.get("transport", "stdio" if "command" in entry else "http")
    if transport not in TRANSPORTS:
        raise ConfigError(
            source, line_of(entry, "transport"), f"{where}: transport must be one of {TRANSPORTS}, got {transport!r}"
        )
    spec = ServerSpec(
        **launch_fields(entry, source, where),
        **lock_fields(entry, source, where),
        id=sid,
        transport=transport,
        line=line,
    )
    check_transport(spec, source, where)
    return spec


LOCK_FIELDS = {
    "pin",
    "flags",
    "timeout",
    "hide_tools",
    "title",
    "ignore",
    "notes",
    "locked",
    "isolation",
    "state_group",
    "source",
    "build",
    "simulate",
}  # what a server entry says beyond how to start it; mcpServers JSON accepts them too


def lock_fields(entry: LineMapping, source: str, where: str) -> dict[str, Any]:
    """The lock's per-server fields (flags, timeout, state_group, ...), checked: shared with the mcpServers JSON."""
    flags = str_list(entry, "flags", source, where)
    bad = [f for f in flags if f not in FLAGS]
    if bad:
        raise ConfigError(source, line_of(entry, "flags"), f"{where}: unknown flag(s) {bad}; known: {list(FLAGS)}")
    if "stateful" in flags and "stateless" in flags:
        raise ConfigError(
            source, line_of(entry, "flags"), f"{where}: flags 'stateful' and 'stateless' contradict each other"
        )
    isolation = entry.get("isolation")
    if isolation is not None and isolation not in ISOLATION:
        raise ConfigError(
            source, line_of(entry, "isolation"), f"{where}: isolation must be one of {ISOLATION}, got {isolation!r}"
        )
    simulate = entry.get("simulate")
    if simulate is not None and simulate != "allowed":
        raise ConfigError(
            source,
            line_of(entry, "simulate"),
            f"{where}: simulate must be 'allowed' (a replay may then "
            f"simulate this server's misses though it is not stateless), got {simulate!r}",
        )
    timeout = entry.get("timeout")
    if timeout is not None and (
        not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout < math.inf
    ):  # YAML's .inf and .nan are floats
        raise ConfigError(
            source,
            line_of(entry, "timeout"),
            f"{where}: timeout must be a positive, finite number of seconds "
            f"(got {timeout!r}; leave it out for the gateway's --call-timeout)",
        )
    return {
        "pin": _pin(entry, source, where),
        "flags": frozenset(flags),
        "timeout": float(timeout) if timeout is not None else None,
        "hide_tools": frozenset(str_list(entry, "hide_tools", source, where)),
        "title": opt_str(entry, "title", source, where),
        "ignore": _ignore_rules(entry, source, where),
        "isolation": isolation,
        "state_group": opt_str(entry, "state_group", source, where),
        "source": _source(entry, source, where),
        "build": _build(entry, source, where),
        "simulate": simulate,
    }


_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def _source(entry: LineMapping, source: str, where: str) -> Source | None:
    raw = entry.get("source")
    if raw is None:
        return None
    if not isinstance(raw, LineMapping):
        raise ConfigError(
            source, line_of(entry, "source"), f"{where}: 'source' must be a mapping {{repo, commit, path}}"
        )
    check_keys(raw, {"repo", "commit", "path", "sha256"}, source, f"{where} source")
    repo, commit = raw.get("repo"), str(raw.get("commit") or "")
    if not isinstance(repo, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        raise ConfigError(source, line_of(raw, "repo"), f"{where}: source repo must be 'owner/name', got {repo!r}")
    if not _COMMIT_RE.match(commit):
        raise ConfigError(
            source, line_of(raw, "commit"), f"{where}: source commit must be the full 40-hex commit, got {commit!r}"
        )
    path = str(raw.get("path") or "").strip("/")
    if ".." in path.split("/"):
        raise ConfigError(source, line_of(raw, "path"), f"{where}: source path must stay inside the repository")
    sha = raw.get("sha256")
    return Source(repo, commit, path, str(sha) if sha else None)


def _build(entry: LineMapping, source: str, where: str) -> dict[str, Any] | None:
    raw = entry.get("build")
    if raw is None:
        if "source" in entry:
            raise ConfigError(
                source,
                line_of(entry, "source"),
                f"{where}: a 'source' entry needs a 'build' recipe (python, node or steps)",
            )
        return None
    if "source" not in entry:
        raise ConfigError(source, line_of(entry, "build"), f"{where}: 'build' needs a 'source' to build from")
    try:
        parse_recipe(raw)
    except RecipeError as exc:
        raise ConfigError(source, line_of(entry, "build"), f"{where}: build: {exc}") from None
    return _plain(raw)


def _plain(value: Any) -> Any:
    """YAML's line-remembering mappings as plain dicts (a recipe is hashed and stored as data)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _profiles(doc: LineMapping, servers: dict[str, ServerSpec], source: str) -> dict[str, tuple[str, ...]]:
    raw = doc.get("profiles") or LineMapping()
    if not isinstance(raw, LineMapping):
        raise ConfigError(
            source, line_of(doc, "profiles"), "'profiles' must be a mapping of profile name -> list of server ids"
        )
    profiles: dict[str, tuple[str, ...]] = {}
    for name, members in raw.items():
        line = raw.key_lines.get(str(name), raw.line)
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise ConfigError(source, line, f"profile {name!r}: expected a list of server ids")
        unknown = [m for m in members if m not in servers]
        if unknown:
            raise ConfigError(source, line, f"profile {name!r}: unknown server id(s) {unknown}")
        profiles[str(name)] = tuple(members)
    return profiles


def _env(entry: LineMapping, source: str, where: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """Env for the child: `[NAME, ...]` passes the gateway's NAME through (required);
    a mapping gives literal values, or `${NAME}` references to the gateway's env (required)."""
    raw = entry.get("env")
    if raw is None:
        return (), {}
    if isinstance(raw, list) and all(isinstance(n, str) for n in raw):
        return tuple(raw), {n: "${%s}" % n for n in raw}
    if isinstance(raw, LineMapping):
        required: list[str] = []
        values: dict[str, str] = {}
        for name, value in raw.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise ConfigError(
                    source, raw.key_lines.get(str(name), raw.line), f"{where}: env {name!r} must be a string"
                )
            values[str(name)] = str(value)
            required += [ref for ref in ENV_REF_RE.findall(str(value)) if ref not in (RUN_STATE_VAR, FREE_PORT_VAR)]
        return tuple(dict.fromkeys(required)), values
    raise ConfigError(
        source, line_of(entry, "env"), f"{where}: 'env' must be a list of variable names or a mapping name -> value"
    )


def launch_fields(entry: LineMapping, source: str, where: str) -> dict[str, Any]:
    """How to start or reach a server: the fields a lock entry and an mcpServers entry share."""
    env_required, env_values = _env(entry, source, where)
    url = opt_str(entry, "url", source, where)
    if url is not None and not _absolute_http(url):  # else it fails only when the gateway connects
        raise ConfigError(
            source, line_of(entry, "url"), f"{where}: 'url' must be an absolute http:// or https:// URL, got {url!r}"
        )
    return {
        "command": opt_str(entry, "command", source, where),
        "args": tuple(str_list(entry, "args", source, where)),
        "cwd": opt_str(entry, "cwd", source, where),
        "env_required": env_required,
        "env_values": env_values,
        "url": url,
        "headers": str_map(entry, "headers", source, where),
    }


def _absolute_http(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed [IPv6 address
        return False


def check_transport(spec: ServerSpec, source: str, where: str) -> None:
    if spec.transport == "stdio" and not spec.command:
        raise ConfigError(source, spec.line, f"{where}: a stdio server needs a 'command'")
    if spec.transport != "stdio" and not spec.url:
        raise ConfigError(source, spec.line, f"{where}: an {spec.transport} server needs a 'url'")
    if spec.transport != "stdio" and "${%s}" % FREE_PORT_VAR in (spec.url or "") and not spec.command:
        raise ConfigError(
            source,
            spec.line,
            f"{where}: ${{{FREE_PORT_VAR}}} in 'url' is a port the gateway picks when it "
            "starts the entry's 'command', and there is none",
        )


def _ignore_rules(entry: LineMapping, source: str, where: str) -> tuple[dict[str, Any], ...]:
    from mcpgw.gateway.specs.ignore_rules import parse_rules

    raw = entry.get("ignore")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(source, line_of(entry, "ignore"), f"{where}: 'ignore' must be a list of rules")
    try:
        parse_rules(raw, f"{where} ignore")
    except ValueError as exc:
        raise ConfigError(source, line_of(entry, "ignore"), str(exc)) from None
    return tuple(dict(rule) for rule in raw)


def _pin(entry: LineMapping, source: str, where: str) -> Pin | None:
    raw = entry.get("pin")
    if raw is None:
        return None
    if not isinstance(raw, LineMapping):
        raise ConfigError(source, line_of(entry, "pin"), f"{where}: 'pin' must be a mapping")
    check_keys(raw, {"registry", "package", "version", "repo", "commit"}, source, f"{where} pin")
    pin = Pin(**{k: str(v) for k, v in raw.items()})
    if pin.registry and pin.registry not in ("pypi", "npm"):
        raise ConfigError(source, line_of(raw, "registry"), f"{where}: pin registry must be 'pypi' or 'npm'")
    if pin.package and not pin.version:
        raise ConfigError(source, raw.line, f"{where}: a pinned package needs an exact 'version'")
    return pin
