"""`mcpgw lock import`: other tools' server lists -> lock entries appended to a lock file.

Shapes read:

- Claude Desktop / Cursor: `{"mcpServers": {name: {command, args, env, cwd} | {url, headers, type}}}`
- VS Code: `{"servers": {...}}` (`.vscode/mcp.json`) or `{"mcp": {"servers": {...}}}` (settings.json);
  `${env:NAME}` becomes `${NAME}`, `${input:id}` becomes `${ID}` (an env var the gateway reads)
- MCP-Bench's `mcp_servers/commands.json`: `{name: {"cmd": "python server.py", "env": ["API_KEY"],
  "cwd": "../dir", "transport": "http", "port": 3001, "endpoint": "/mcp"}}`; `cmd` is split like a
  shell would, `env` lists variables taken from the gateway's environment, and `cwd` is relative to a
  directory one level below `--base-dir` (default: the file's directory), as MCP-Bench resolves it:
  `../unit-converter-mcp` next to `mcp_servers/commands.json` is `mcp_servers/unit-converter-mcp`.

Ids come from names the way `lock.config` makes them ("Unit Converter" -> unit_converter, the
name kept as `title`). A literal env value whose name says secret (`SECRET_NAME_RE`: KEY, TOKEN,
SECRET, PASS...) is not copied into the lock: the entry reads it from the gateway's environment
instead, and the report says which variable to export. An exact version in an npx / uvx command
becomes the `pin`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from mcpgw.gateway.errors.tree import ConfigError, GatewayError
from mcpgw.gateway.specs.server_spec import ENV_REF_RE, FREE_PORT_VAR, SECRET_NAME_RE, SERVER_ID_RE
from mcpgw.lock.config import GatewayConfig, ServerSpec, parse_config, read_config_text
from mcpgw.lock.launchers import infer_pin, parse_launch
from mcpgw.lock.lock_format import LOCK_FIELDS
from mcpgw.lock.lockedit import add_servers, add_to_profile, check_text, scalar, server_indent, write_atomic
from mcpgw.lock.mcp_servers_json import EXTENSION_KEY, server_id_from_name

SHAPES = {
    "mcpServers": "Claude Desktop / Cursor",
    "servers": "VS Code",
    "mcp": "VS Code settings",
    "commands": "MCP-Bench",
}
_KNOWN_KEYS = {"command", "args", "cwd", "env", "url", "headers", "type", "transport"}
_CARRIED = {
    "flags",
    "timeout",
    "hide_tools",
    "isolation",
    "state_group",
    "title",
    EXTENSION_KEY,
}  # written by render_entry
_VSCODE_REF = re.compile(r"\$\{(env|input):([^}]+)\}")
_PROFILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


@dataclass
class Imported:
    name: str  # as the source file names it
    spec: ServerSpec
    notes: list[str] = field(default_factory=list)


def read_import(path: Path, base_dir: Path | None = None) -> tuple[str, list[Imported]]:
    """(shape, entries) of a server list file; `ConfigError` naming the entry for anything wrong."""
    source = str(path)
    text = read_config_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(source, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(source, 1, "expected a JSON object of servers")
    if "version" in data:
        raise ConfigError(source, _line_of(text, "version"), "this is a lock file already; serve it with --config")
    raw = data.get("mcpServers", data.get("servers"))
    if raw is None and isinstance(data.get("mcp"), dict):
        raw = data["mcp"].get("servers")
    if isinstance(raw, dict):
        shape = SHAPES["mcpServers" if "mcpServers" in data else "servers" if "servers" in data else "mcp"]
        return shape, _from_mcp_servers(text, raw, source)
    with_cmd = [name for name, entry in data.items() if isinstance(entry, dict) and "cmd" in entry]
    if with_cmd:
        others = [name for name in data if name not in with_cmd]
        if others:
            raise ConfigError(
                source,
                _line_of(text, others[0]),
                f'server {others[0]!r}: expected {{"cmd": ..., "env": [...], "cwd": ...}} '
                f"like the other entries (MCP-Bench commands.json shape)",
            )
        base = base_dir if base_dir is not None else path.resolve().parent
        return SHAPES["commands"], [_from_commands(text, name, entry, source, base) for name, entry in data.items()]
    raise ConfigError(
        source,
        1,
        "unrecognised shape: expected 'mcpServers' (Claude Desktop, Cursor), 'servers' "
        "(VS Code), or MCP-Bench's commands.json (name -> {cmd, env, cwd})",
    )


def _from_mcp_servers(text: str, raw: dict[str, Any], source: str) -> list[Imported]:
    config = parse_config(text, source)  # validates every entry and names the bad one, with its line
    names = {server_id_from_name(str(name)): str(name) for name in raw}
    items = []
    for sid, spec in config.servers.items():
        name = names.get(sid, sid)
        entry = raw.get(name) or {}
        item = Imported(name, spec)
        ignored = sorted(k for k in entry if k not in _KNOWN_KEYS | _CARRIED | LOCK_FIELDS)
        lock_part = {**{k: v for k, v in entry.items() if k in LOCK_FIELDS}, **(entry.get(EXTENSION_KEY) or {})}
        dropped = sorted(k for k in lock_part if k not in _CARRIED)
        if dropped:
            item.notes.append(f"lock field(s) {dropped} not carried over: add them to the lock entry by hand")
        if ignored:
            item.notes.append(f"ignored key(s) {ignored}")
        if any("${" in a for a in spec.args):
            item.notes.append("args contain ${...}: the gateway passes args literally, without expansion")
        item.spec = _translate_refs(item)
        items.append(item)
    return items


def _from_commands(text: str, name: str, entry: dict[str, Any], source: str, base: Path) -> Imported:
    line = _line_of(text, name)
    where = f"server {name!r}"
    unknown = sorted(set(entry) - {"cmd", "env", "cwd", "transport", "port", "endpoint", "url"})
    cmd = entry.get("cmd")
    if not isinstance(cmd, str) or not cmd.strip():
        raise ConfigError(source, line, f"{where}: 'cmd' must be a non-empty command line")
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise ConfigError(source, line, f"{where}: cannot split 'cmd' like a shell: {exc}") from None
    env = entry.get("env") or []
    if not isinstance(env, list) or not all(
        isinstance(n, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in env
    ):
        raise ConfigError(source, line, f"{where}: 'env' must be a list of environment variable names")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(source, line, f"{where}: 'cwd' must be a string")
    transport = entry.get("transport", "stdio")
    transport = {"streamable-http": "http", "streamable_http": "http"}.get(transport, transport)
    if transport not in ("stdio", "http", "sse"):
        raise ConfigError(source, line, f"{where}: transport must be stdio, http or sse, got {transport!r}")
    url = None
    if transport != "stdio":
        url = entry.get("url")
        port = entry.get("port")
        if url is None:
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise ConfigError(source, line, f"{where}: an {transport} server needs a 'port' (or a 'url')")
            endpoint = entry.get("endpoint") or ("/sse" if transport == "sse" else "/mcp")
            url = f"http://127.0.0.1:{port}{endpoint if str(endpoint).startswith('/') else '/' + str(endpoint)}"
            if (
                str(port) in argv[1:]
            ):  # the command takes its port: a free loopback one at each start (gateway.upstreams.http_launch)
                free = "${%s}" % FREE_PORT_VAR
                argv = [argv[0], *(free if word == str(port) else word for word in argv[1:])]
                url = url.replace(f":{port}/", f":{free}/", 1)
    resolved = _resolve_cwd(cwd, base) if cwd else None
    sid = server_id_from_name(name)
    spec = ServerSpec(
        id=sid,
        transport=transport,
        command=argv[0],
        args=tuple(argv[1:]),
        cwd=resolved,
        env_required=tuple(env),
        env_values={n: "${%s}" % n for n in env},
        url=url,
        title=name if sid != name else None,
        line=line or 0,
    )
    item = Imported(name, spec)
    if unknown:
        item.notes.append(f"ignored key(s) {unknown}")
    if resolved and not Path(resolved).is_dir():
        item.notes.append(f"cwd {resolved} does not exist here: the server stays unavailable until its source is there")
    return item


def _resolve_cwd(cwd: str, base: Path) -> str:
    path = Path(os.path.expanduser(cwd))
    if path.is_absolute():
        return str(path)
    anchor = base / "_" if cwd.startswith("../") else base  # MCP-Bench's "../x" sits beside commands.json
    return os.path.normpath(anchor / path)


def _translate_refs(item: Imported) -> ServerSpec:
    """VS Code `${env:X}` / `${input:x}` -> `${X}`; literal secrets -> `${NAME}` references."""
    spec = item.spec

    def translate(value: str) -> str:
        def one(match: re.Match[str]) -> str:
            kind, ref = match.groups()
            var = re.sub(r"[^A-Za-z0-9_]", "_", ref).upper() if kind == "input" else ref
            if kind == "input":
                item.notes.append(f"VS Code input {ref!r} is read from the environment variable {var}")
            return "${%s}" % var

        return _VSCODE_REF.sub(one, value)

    env = {}
    for name, value in spec.env_values.items():
        value = translate(value)
        if not ENV_REF_RE.search(value) and SECRET_NAME_RE.search(name) and value:
            item.notes.append(f"env {name}: its literal value was not copied; export {name} for the gateway")
            value = "${%s}" % name
        env[name] = value
    headers = {}
    for name, value in spec.headers.items():
        value = translate(value)
        if "${" not in value and SECRET_NAME_RE.search(name) and value:
            var = re.sub(r"[^A-Za-z0-9]+", "_", f"{spec.id}_{name}").upper()
            scheme, _, token = value.partition(" ")
            value = (
                f"{scheme} ${{{var}}}" if token and scheme.lower() in ("bearer", "basic", "token") else "${%s}" % var
            )
            item.notes.append(f"header {name}: its literal value was not copied; export {var} for the gateway")
        headers[name] = value
    required = [n for v in env.values() for n in ENV_REF_RE.findall(v)]
    return replace(spec, env_values=env, headers=headers, env_required=tuple(dict.fromkeys(required)))


def _line_of(text: str, name: str) -> int | None:
    match = re.search(re.escape(json.dumps(name)) + r"\s*:", text)
    return text.count("\n", 0, match.start()) + 1 if match else None


# -- rendering --------------------------------------------------------------------


def render_entry(spec: ServerSpec, key_indent: int, field_indent: int) -> str:
    pad, fpad = " " * key_indent, " " * field_indent
    lines = [f"{pad}{scalar(spec.id)}:"]
    if spec.title:
        lines.append(f"{fpad}title: {json.dumps(spec.title)}")
    lines.append(f"{fpad}transport: {spec.transport}")
    if spec.command:
        lines.append(f"{fpad}command: {json.dumps(spec.command)}")
    if spec.args:
        lines.append(f"{fpad}args: {json.dumps(list(spec.args))}")
    if spec.cwd:
        lines.append(f"{fpad}cwd: {json.dumps(spec.cwd)}")
    if spec.env_values:
        as_list = all(v == "${%s}" % k for k, v in spec.env_values.items())
        value = (
            json.dumps(list(spec.env_values))
            if as_list
            else "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in spec.env_values.items()) + "}"
        )
        lines.append(f"{fpad}env: {value}")
    if spec.url:
        lines.append(f"{fpad}url: {json.dumps(spec.url)}")
    if spec.headers:
        lines.append(
            f"{fpad}headers: {{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in spec.headers.items()) + "}"
        )
    if spec.flags:
        lines.append(f"{fpad}flags: {json.dumps(sorted(spec.flags))}")
    if spec.timeout is not None:
        lines.append(f"{fpad}timeout: {spec.timeout:g}")
    if spec.hide_tools:
        lines.append(f"{fpad}hide_tools: {json.dumps(sorted(spec.hide_tools))}")
    if spec.isolation:
        lines.append(f"{fpad}isolation: {spec.isolation}")
    if spec.state_group:
        lines.append(f"{fpad}state_group: {json.dumps(spec.state_group)}")
    if spec.pin:
        lines.append(
            f"{fpad}pin: {{registry: {spec.pin.registry}, package: {json.dumps(spec.pin.package)}, "
            f"version: {json.dumps(spec.pin.version)}}}"
        )
    return "\n".join(lines) + "\n"


def new_lock_text(block: str, origin: str) -> str:
    return (
        f"# mcpgw lock file, format version 1: how to start each server, what it is pinned to and which\n"
        f"# env vars it needs. Created by `mcpgw lock import` from {origin}.\n"
        f'version: 1\nseparator: "__"\n\nservers:\n{block}'
    )


# -- the command --------------------------------------------------------------------


def cmd_import(args: argparse.Namespace) -> int:
    source_path = Path(args.file)
    lock_path = Path(args.lock)
    lock_source = str(lock_path)
    if args.profile is not None and not _PROFILE_RE.match(args.profile):
        raise GatewayError(f"profile name {args.profile!r}: use 1-40 characters of [A-Za-z0-9_.-]")
    shape, items = read_import(source_path, Path(args.base_dir) if args.base_dir else None)
    text, config = _read_lock(lock_path)
    _settle_ids(items, config, str(source_path), lock_source)
    key_indent, field_indent = server_indent(text, lock_source) if text else (2, 4)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    origin = f"{source_path.name} ({shape}) on {stamp}"
    block = "".join(render_entry(i.spec, key_indent, field_indent) for i in items)
    if text:
        new_text = add_servers(text, f"{' ' * key_indent}# imported from {origin}\n{block}", lock_source)
    else:
        new_text = new_lock_text(block, origin)
    ids = [i.spec.id for i in items]
    if args.profile:
        new_text = add_to_profile(new_text, args.profile, ids, check_text(new_text, lock_source), lock_source)
        if not text:
            new_text = new_text.replace(
                'separator: "__"\n', f'separator: "__"\ndefault_profile: {scalar(args.profile)}\n', 1
            )
    final = check_text(new_text, lock_source)
    missing = [i for i in ids if i not in final.servers]
    if missing:
        raise GatewayError(f"{lock_source}: the edited lock file lacks {missing}; nothing was written")
    write_atomic(lock_path, new_text)
    _report(items, lock_path, shape, args.profile, created=not text)
    return 0


def _settle_ids(items: list[Imported], config: GatewayConfig | None, source: str, lock_source: str) -> None:
    """Give each entry a valid id that no other entry has, and a pin when its command names an exact version."""
    separator = config.separator if config else "__"
    existing = dict(config.servers) if config else {}
    seen: dict[str, Imported] = {}
    for item in items:
        if separator in item.spec.id:
            new_id = item.spec.id.replace(separator, "_")
            item.notes.append(f"id {item.spec.id!r} contains the separator {separator!r}; written as {new_id!r}")
            item.spec = replace(item.spec, id=new_id)
        if not SERVER_ID_RE.match(item.spec.id):
            raise ConfigError(source, item.spec.line or None, f"server {item.name!r}: cannot make a valid id of it")
        if item.spec.id in existing:
            other = existing[item.spec.id]
            label = f"{other.id!r}" + (f" (title {other.title!r})" if other.title else "")
            raise ConfigError(
                source,
                item.spec.line or None,
                f"server {item.name!r} becomes id {item.spec.id!r}, which collides with server {label} "
                f"at {lock_source}:{other.line}; rename one of them",
            )
        if item.spec.id in seen:
            raise ConfigError(
                source,
                item.spec.line or None,
                f"servers {seen[item.spec.id].name!r} and {item.name!r} both become id {item.spec.id!r}; "
                f"rename one of them",
            )
        seen[item.spec.id] = item
        if item.spec.pin is None:
            item.spec = replace(item.spec, pin=infer_pin(item.spec.command, item.spec.args))
            if item.spec.pin is None and parse_launch(item.spec.command, item.spec.args) is not None:
                item.notes.append("no exact version in its npx/uvx command: not pinned, `servers install` skips it")


def _read_lock(path: Path) -> tuple[str, GatewayConfig | None]:
    if not path.exists():
        return "", None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), None, f"cannot read: {exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict) or "version" not in doc:
        raise ConfigError(str(path), None, "not a lock file (no 'version: 1'); pass --lock with a lock file to add to")
    return text, parse_config(text, str(path))


def _report(items: list[Imported], lock_path: Path, shape: str, profile: str | None, created: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{'created' if created else 'updated'} {lock_path}: {len(items)} server(s) from a {shape} file"
        + (f", profile {profile!r}" if profile else "")
    )
    for column in ("name", "id", "transport", "launch", "pin", "notes"):
        table.add_column(column, overflow="fold")
    for item in items:
        spec = item.spec
        launch = spec.url if spec.transport != "stdio" else " ".join([spec.command or "", *spec.args])
        pin = f"{spec.pin.registry} {spec.pin.package}=={spec.pin.version}" if spec.pin and spec.pin.package else ""
        table.add_row(item.name, spec.id, spec.transport, launch, pin, "; ".join(item.notes))
    Console(file=sys.stdout, width=160).print(table)
