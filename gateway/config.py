"""Load `servers.lock.yaml` (format v1) or an `mcpServers` JSON into one config object.

Every problem is a `ConfigError` naming the file, the line and what is wrong,
raised before anything starts. YAML and JSON are both read through a YAML
loader that remembers the line of every mapping key (JSON is read with the
json module first, so that its syntax errors get json's exact line).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gateway.errors import ConfigError
from gateway.recipe_syntax import RecipeError, parse_recipe

LOCK_FORMAT = 1
DEFAULT_SEPARATOR = "__"
SECRET_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.IGNORECASE)
SERVER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
TRANSPORTS = ("stdio", "http", "sse")
FLAGS = ("offline", "stateful", "stateless", "nondeterministic", "unsafe", "network")  # network: tools/list needs it
ISOLATION = ("run", "shared")
# Names a per-instance state directory in args/env/cwd (see gateway.isolation); not from the environment.
RUN_STATE_VAR = "RUN_STATE_DIR"


class _Mapping(dict):
    """A dict that remembers the source line of itself and of each key."""

    line: int = 0
    key_lines: dict[str, int]


class _LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> _Mapping:  # type: ignore[override]
        mapping = _Mapping(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        for key_node, _ in node.value:
            mapping.key_lines[str(key_node.value)] = key_node.start_mark.line + 1
        return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)


@dataclass(frozen=True)
class Pin:
    """Where a server's exact code comes from: a registry package or a source commit."""

    registry: str | None = None  # "pypi" | "npm"
    package: str | None = None
    version: str | None = None
    repo: str | None = None
    commit: str | None = None


@dataclass(frozen=True)
class Source:
    """A server built from a repository at one commit: `path` is its folder inside that tree."""

    repo: str  # "owner/name" on GitHub
    commit: str  # the full 40-hex commit
    path: str = ""
    sha256: str | None = None  # of the archive, when the lock pins one

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.commit[:7]}" + (f" {self.path}" if self.path else "")


@dataclass(frozen=True)
class ServerSpec:
    id: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env_required: tuple[str, ...] = ()  # names taken from the gateway's environment; missing -> unavailable
    env_values: dict[str, str] = field(default_factory=dict)  # literal values (mcpServers JSON style)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # values may say ${NAME}
    pin: Pin | None = None
    flags: frozenset[str] = frozenset()
    timeout: float | None = None
    hide_tools: frozenset[str] = frozenset()
    title: str | None = None  # the benchmark's display name ("Unit Converter")
    ignore: tuple[dict[str, Any], ...] = ()  # drift ignore rules: [{tool, paths, text}]
    isolation: str | None = None  # "run": one instance per run id; "shared"; None: run if stateful
    state_group: str | None = None  # servers that share state (one directory) share one replay history
    source: Source | None = None  # built from this commit by `mcpgw servers install`
    build: dict[str, Any] | None = None  # the build recipe (python | node | steps), see lock.recipes
    line: int = 0

    @property
    def offline(self) -> bool:
        """Runs without network: started with the package registries switched off (gateway.live)."""
        return "offline" in self.flags

    @property
    def nondeterministic(self) -> bool:
        """Answers differ from run to run: drift learns which fields are volatile (replay.drift)."""
        return "nondeterministic" in self.flags

    @property
    def stateful(self) -> bool:
        return "stateful" in self.flags

    @property
    def tracked(self) -> bool:
        """Replay keys calls on the run's earlier state-changing calls, unless declared stateless."""
        return "stateless" not in self.flags

    @property
    def isolated(self) -> bool:
        """One instance (and state directory) per run id."""
        return self.isolation == "run" or (self.isolation is None and self.stateful)

    @property
    def display_name(self) -> str:
        return self.title or self.id

    def secret_values(self) -> list[str]:
        """Values never to be written to a cassette, a log or an error: the value of every env var
        the server is given (literal or from the gateway's environment; a DATABASE_URL holds a
        password as surely as an API_KEY), and header values that reference the environment or
        whose name says secret. Plain flags and numbers (`true`, `8080`) are left alone: masking
        them would rewrite ordinary text; so is the per-run state directory (not a secret)."""
        run_state = "${%s}" % RUN_STATE_VAR
        values = [expand_env(v) for v in self.env_values.values() if run_state not in v]
        values += [expand_env(v) for name, v in self.headers.items() if "${" in v or SECRET_NAME_RE.search(name)]
        templates = [*self.env_values.values(), *self.headers.values()]
        values += [os.environ.get(ref, "") for t in templates for ref in ENV_REF_RE.findall(t)]  # the bare token too
        values += [os.environ.get(name, "") for name in self.env_required]
        return [v for v in dict.fromkeys(values) if len(v) >= 4 and not _PLAIN_VALUE_RE.fullmatch(v)]


# Values too ordinary to be secrets, and too common in text to mask.
_PLAIN_VALUE_RE = re.compile(r"(?i)true|false|yes|no|on|off|null|none|[-+]?\d+(\.\d+)*")


@dataclass(frozen=True)
class GatewayConfig:
    source: str
    servers: dict[str, ServerSpec]
    profiles: dict[str, tuple[str, ...]]
    default_profile: str | None
    separator: str = DEFAULT_SEPARATOR

    def select(self, profile: str | None = None, only: list[str] | None = None) -> list[ServerSpec]:
        """The servers of a profile (default profile, else all), optionally narrowed to `only`."""
        if only:
            unknown = [s for s in only if s not in self.servers]
            if unknown:
                import difflib

                hints = []
                for name in unknown:
                    near = difflib.get_close_matches(name, list(self.servers), n=3, cutoff=0.6)
                    near += [s for s in sorted(self.servers) if s.startswith(name) and s not in near][:3 - len(near)]
                    hints.append(f"{name!r} (did you mean {', '.join(near)}?)" if near else repr(name))
                raise ConfigError(self.source, None, f"unknown server id {'; '.join(hints)}; `mcpgw servers` or the "
                                  f"lock's `servers:` list them ({len(self.servers)} here)")
            return [self.servers[s] for s in only]
        name = profile or self.default_profile
        if name is None:
            return list(self.servers.values())
        if name not in self.profiles:
            raise ConfigError(self.source, None, f"unknown profile {name!r}; known: {sorted(self.profiles)}")
        return [self.servers[s] for s in self.profiles[name]]


LOCK_NAME = "servers.lock.yaml"
SHIPPED_LOCK = Path(__file__).resolve().parent / "shipped" / LOCK_NAME  # inside an installed wheel (setup.py)
CHECKOUT_LOCK = Path(__file__).resolve().parent.parent / LOCK_NAME  # beside the sources (a checkout, editable)


def default_lock() -> Path | None:
    """The lock a command uses when none is named: ./servers.lock.yaml (the user's own) first, else the
    one installed with mcpgw, so a pip-installed mcpgw serves `--profile local` from an empty folder."""
    for candidate in (Path(LOCK_NAME), SHIPPED_LOCK, CHECKOUT_LOCK):
        if candidate.is_file():
            return candidate
    return None


def load_config(path: str | os.PathLike[str]) -> GatewayConfig:
    """Read a lock file (YAML) or an `mcpServers` JSON; raise `ConfigError` on any problem."""
    return parse_config(read_config_text(path), str(path))


def read_config_text(path: str | os.PathLike[str], missing_hint: str = "") -> str:
    """A config file's text, or a `ConfigError` that says why it cannot be read."""
    source = str(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, None, f"file not found{missing_hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, None, f"cannot read: {exc}") from None


def parse_config(text: str, source: str = "<config>") -> GatewayConfig:
    if source.endswith(".json") or text.lstrip().startswith("{"):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(source, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    try:
        doc = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, line, f"invalid YAML: {problem}") from None
    if not isinstance(doc, _Mapping):
        raise ConfigError(source, 1, "expected a mapping at the top (a lock file or an mcpServers object)")
    if "version" not in doc:  # Claude Desktop / Cursor ("mcpServers") or VS Code ("servers") shapes
        return _from_mcp_servers(doc, source)
    return _from_lock(doc, source)


# -- lock file ---------------------------------------------------------------


def _from_lock(doc: _Mapping, source: str) -> GatewayConfig:
    _check_keys(doc, {"version", "servers", "profiles", "default_profile", "separator"}, source, "the lock file")
    version = doc.get("version")
    if version != LOCK_FORMAT:
        raise ConfigError(source, _line(doc, "version"), f"unsupported lock format version {version!r}; this gateway reads version {LOCK_FORMAT}")
    separator = doc.get("separator", DEFAULT_SEPARATOR)
    if not isinstance(separator, str) or not separator or not re.fullmatch(r"[A-Za-z0-9_-]{1,3}", separator):
        raise ConfigError(source, _line(doc, "separator"), "separator must be 1-3 characters of [A-Za-z0-9_-]")
    raw_servers = doc.get("servers")
    if not isinstance(raw_servers, _Mapping) or not raw_servers:
        raise ConfigError(source, _line(doc, "servers"), "'servers' must be a non-empty mapping of server id -> entry")
    servers: dict[str, ServerSpec] = {}
    for sid, entry in raw_servers.items():
        line = raw_servers.key_lines.get(str(sid), raw_servers.line)
        servers[str(sid)] = _lock_server(str(sid), entry, line, source, separator)
    profiles = _profiles(doc, servers, source)
    default = doc.get("default_profile")
    if default is not None and default not in profiles:
        raise ConfigError(source, _line(doc, "default_profile"), f"default_profile {default!r} is not a profile; profiles: {sorted(profiles)}")
    return GatewayConfig(source, servers, profiles, default, separator)


_SERVER_KEYS = {
    "transport", "command", "args", "cwd", "env", "url", "headers", "pin",
    "flags", "timeout", "hide_tools", "title", "ignore", "notes", "locked", "isolation", "state_group", "source", "build",
}


def _lock_server(sid: str, entry: Any, line: int, source: str, separator: str) -> ServerSpec:
    where = f"server {sid!r}"
    if not SERVER_ID_RE.match(sid) or separator in sid:
        raise ConfigError(source, line, f"{where}: ids are 1-40 characters of [A-Za-z0-9_.-] and may not contain the separator {separator!r}")
    if not isinstance(entry, _Mapping):
        raise ConfigError(source, line, f"{where}: expected a mapping")
    _check_keys(entry, _SERVER_KEYS, source, where)
    if "command" not in entry and "url" not in entry:
        raise ConfigError(source, line, f"{where}: needs a 'command' (stdio) or a 'url' (http, sse)")
    transport = entry.get("transport", "stdio" if "command" in entry else "http")
    if transport not in TRANSPORTS:
        raise ConfigError(source, _line(entry, "transport"), f"{where}: transport must be one of {TRANSPORTS}, got {transport!r}")
    flags = _str_list(entry, "flags", source, where)
    bad = [f for f in flags if f not in FLAGS]
    if bad:
        raise ConfigError(source, _line(entry, "flags"), f"{where}: unknown flag(s) {bad}; known: {list(FLAGS)}")
    if "stateful" in flags and "stateless" in flags:
        raise ConfigError(source, _line(entry, "flags"), f"{where}: flags 'stateful' and 'stateless' contradict each other")
    isolation = entry.get("isolation")
    if isolation is not None and isolation not in ISOLATION:
        raise ConfigError(source, _line(entry, "isolation"), f"{where}: isolation must be one of {ISOLATION}, got {isolation!r}")
    timeout = entry.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0):
        raise ConfigError(source, _line(entry, "timeout"), f"{where}: timeout must be a positive number of seconds")
    spec = ServerSpec(
        **_launch_fields(entry, source, where),
        id=sid,
        transport=transport,
        pin=_pin(entry, source, where),
        flags=frozenset(flags),
        timeout=float(timeout) if timeout is not None else None,
        hide_tools=frozenset(_str_list(entry, "hide_tools", source, where)),
        title=_opt_str(entry, "title", source, where),
        ignore=_ignore_rules(entry, source, where),
        isolation=isolation,
        state_group=_opt_str(entry, "state_group", source, where),
        source=_source(entry, source, where),
        build=_build(entry, source, where),
        line=line,
    )
    _check_transport(spec, source, where)
    return spec


_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def _source(entry: _Mapping, source: str, where: str) -> Source | None:
    raw = entry.get("source")
    if raw is None:
        return None
    if not isinstance(raw, _Mapping):
        raise ConfigError(source, _line(entry, "source"), f"{where}: 'source' must be a mapping {{repo, commit, path}}")
    _check_keys(raw, {"repo", "commit", "path", "sha256"}, source, f"{where} source")
    repo, commit = raw.get("repo"), str(raw.get("commit") or "")
    if not isinstance(repo, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        raise ConfigError(source, _line(raw, "repo"), f"{where}: source repo must be 'owner/name', got {repo!r}")
    if not _COMMIT_RE.match(commit):
        raise ConfigError(source, _line(raw, "commit"), f"{where}: source commit must be the full 40-hex commit, got {commit!r}")
    path = str(raw.get("path") or "").strip("/")
    if ".." in path.split("/"):
        raise ConfigError(source, _line(raw, "path"), f"{where}: source path must stay inside the repository")
    sha = raw.get("sha256")
    return Source(repo, commit, path, str(sha) if sha else None)


def _build(entry: _Mapping, source: str, where: str) -> dict[str, Any] | None:
    raw = entry.get("build")
    if raw is None:
        if "source" in entry:
            raise ConfigError(source, _line(entry, "source"), f"{where}: a 'source' entry needs a 'build' recipe (python, node or steps)")
        return None
    if "source" not in entry:
        raise ConfigError(source, _line(entry, "build"), f"{where}: 'build' needs a 'source' to build from")
    try:
        parse_recipe(raw)
    except RecipeError as exc:
        raise ConfigError(source, _line(entry, "build"), f"{where}: build: {exc}") from None
    return _plain(raw)


def _plain(value: Any) -> Any:
    """YAML's line-remembering mappings as plain dicts (a recipe is hashed and stored as data)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _profiles(doc: _Mapping, servers: dict[str, ServerSpec], source: str) -> dict[str, tuple[str, ...]]:
    raw = doc.get("profiles") or _Mapping()
    if not isinstance(raw, _Mapping):
        raise ConfigError(source, _line(doc, "profiles"), "'profiles' must be a mapping of profile name -> list of server ids")
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


def _env(entry: _Mapping, source: str, where: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """Env for the child: `[NAME, ...]` passes the gateway's NAME through (required);
    a mapping gives literal values, or `${NAME}` references to the gateway's env (required)."""
    raw = entry.get("env")
    if raw is None:
        return (), {}
    if isinstance(raw, list) and all(isinstance(n, str) for n in raw):
        return tuple(raw), {n: "${%s}" % n for n in raw}
    if isinstance(raw, _Mapping):
        required: list[str] = []
        values: dict[str, str] = {}
        for name, value in raw.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise ConfigError(source, raw.key_lines.get(str(name), raw.line), f"{where}: env {name!r} must be a string")
            values[str(name)] = str(value)
            required += [ref for ref in ENV_REF_RE.findall(str(value)) if ref != RUN_STATE_VAR]
        return tuple(dict.fromkeys(required)), values
    raise ConfigError(source, _line(entry, "env"), f"{where}: 'env' must be a list of variable names or a mapping name -> value")


ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(template: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    return ENV_REF_RE.sub(lambda m: environ.get(m.group(1), ""), template)


def _launch_fields(entry: _Mapping, source: str, where: str) -> dict[str, Any]:
    """How to start or reach a server: the fields a lock entry and an mcpServers entry share."""
    env_required, env_values = _env(entry, source, where)
    return {
        "command": _opt_str(entry, "command", source, where),
        "args": tuple(_str_list(entry, "args", source, where)),
        "cwd": _opt_str(entry, "cwd", source, where),
        "env_required": env_required,
        "env_values": env_values,
        "url": _opt_str(entry, "url", source, where),
        "headers": _str_map(entry, "headers", source, where),
    }


def _check_transport(spec: ServerSpec, source: str, where: str) -> None:
    if spec.transport == "stdio" and not spec.command:
        raise ConfigError(source, spec.line, f"{where}: a stdio server needs a 'command'")
    if spec.transport != "stdio" and not spec.url:
        raise ConfigError(source, spec.line, f"{where}: an {spec.transport} server needs a 'url'")


def _ignore_rules(entry: _Mapping, source: str, where: str) -> tuple[dict[str, Any], ...]:
    from gateway.ignore_rules import parse_rules

    raw = entry.get("ignore")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(source, _line(entry, "ignore"), f"{where}: 'ignore' must be a list of rules")
    try:
        parse_rules(raw, f"{where} ignore")
    except ValueError as exc:
        raise ConfigError(source, _line(entry, "ignore"), str(exc)) from None
    return tuple(dict(rule) for rule in raw)


def _pin(entry: _Mapping, source: str, where: str) -> Pin | None:
    raw = entry.get("pin")
    if raw is None:
        return None
    if not isinstance(raw, _Mapping):
        raise ConfigError(source, _line(entry, "pin"), f"{where}: 'pin' must be a mapping")
    _check_keys(raw, {"registry", "package", "version", "repo", "commit"}, source, f"{where} pin")
    pin = Pin(**{k: str(v) for k, v in raw.items()})
    if pin.registry and pin.registry not in ("pypi", "npm"):
        raise ConfigError(source, _line(raw, "registry"), f"{where}: pin registry must be 'pypi' or 'npm'")
    if pin.package and not pin.version:
        raise ConfigError(source, raw.line, f"{where}: a pinned package needs an exact 'version'")
    return pin


# -- mcpServers JSON (Claude Desktop, Cursor, VS Code shapes) -----------------


def _from_mcp_servers(doc: _Mapping, source: str) -> GatewayConfig:
    raw = doc.get("mcpServers", doc.get("servers"))
    if raw is None and "mcp" in doc and isinstance(doc["mcp"], _Mapping):  # VS Code settings.json
        raw = doc["mcp"].get("servers")
    if not isinstance(raw, _Mapping) or not raw:
        raise ConfigError(source, doc.line, "expected a non-empty 'mcpServers' mapping of name -> server")
    servers: dict[str, ServerSpec] = {}
    for name, entry in raw.items():
        line = raw.key_lines.get(str(name), raw.line)
        sid = server_id_from_name(str(name))
        if sid in servers:
            raise ConfigError(source, line, f"server {name!r} maps to id {sid!r}, which an earlier entry already uses")
        where = f"server {name!r}"
        if not isinstance(entry, _Mapping):
            raise ConfigError(source, line, f"{where}: expected a mapping")
        if "command" not in entry and "url" not in entry:
            raise ConfigError(source, line, f"{where}: needs a 'command' (stdio) or a 'url' (http, sse)")
        kind = entry.get("type") or entry.get("transport") or ("stdio" if "command" in entry else "http")
        kind = {"streamable-http": "http", "streamableHttp": "http", "streamable_http": "http"}.get(kind, kind)
        if kind not in TRANSPORTS:
            raise ConfigError(source, line, f"{where}: unknown type {kind!r}; expected stdio, http or sse")
        spec = ServerSpec(
            **_launch_fields(entry, source, where),
            id=sid,
            transport=kind,
            title=str(name) if sid != name else None,
            line=line,
        )
        _check_transport(spec, source, where)
        servers[sid] = spec
    return GatewayConfig(source, servers, {}, None, DEFAULT_SEPARATOR)


def server_id_from_name(name: str) -> str:
    """A lock id from a display name: 'Unit Converter' -> 'unit_converter'."""
    sid = re.sub(r"[^A-Za-z0-9-]+", "_", name).strip("_-").lower()
    sid = re.sub(r"_+", "_", sid)[:40]
    return sid or "server"


# -- small field readers -------------------------------------------------------


def _line(mapping: _Mapping, key: str) -> int:
    return mapping.key_lines.get(key, mapping.line)


def _check_keys(mapping: _Mapping, allowed: set[str], source: str, where: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise ConfigError(source, _line(mapping, str(key)), f"{where}: unknown key {key!r}; allowed: {sorted(allowed)}")


def _opt_str(entry: _Mapping, key: str, source: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(source, _line(entry, key), f"{where}: {key!r} must be a string")
    return value


def _str_list(entry: _Mapping, key: str, source: str, where: str) -> list[str]:
    value = entry.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        raise ConfigError(source, _line(entry, key), f"{where}: {key!r} must be a list of strings")
    return [str(v) for v in value]


def _str_map(entry: _Mapping, key: str, source: str, where: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(source, _line(entry, key), f"{where}: {key!r} must be a mapping of strings")
    return {str(k): v for k, v in value.items()}


def spec_to_dict(spec: ServerSpec) -> dict[str, Any]:
    """A lock entry as stored in a cassette: literal env values are never kept (any may be a secret)."""
    return {
        "id": spec.id, "transport": spec.transport, "command": spec.command, "args": list(spec.args),
        "cwd": spec.cwd, "env_required": list(spec.env_required),
        "env_values": {k: (v if ENV_REF_RE.fullmatch(v) or _PLAIN_VALUE_RE.fullmatch(v) or "${%s}" % RUN_STATE_VAR in v
                           else "«redacted»")
                       for k, v in spec.env_values.items()},
        "url": spec.url, "headers": {k: (v if "${" in v or not SECRET_NAME_RE.search(k) else "«redacted»")
                                     for k, v in spec.headers.items()},
        "pin": dict(vars(spec.pin)) if spec.pin else None, "flags": sorted(spec.flags), "timeout": spec.timeout,
        "hide_tools": sorted(spec.hide_tools), "title": spec.title, "ignore": [dict(r) for r in spec.ignore],
        "isolation": spec.isolation, "state_group": spec.state_group,
        **({"source": dict(vars(spec.source)), "build": spec.build} if spec.source else {}),
    }


def spec_from_dict(data: dict[str, Any]) -> ServerSpec:
    return ServerSpec(
        id=data["id"], transport=data.get("transport", "stdio"), command=data.get("command"),
        args=tuple(data.get("args") or ()), cwd=data.get("cwd"), env_required=tuple(data.get("env_required") or ()),
        env_values=dict(data.get("env_values") or {}), url=data.get("url"), headers=dict(data.get("headers") or {}),
        pin=Pin(**data["pin"]) if data.get("pin") else None, flags=frozenset(data.get("flags") or ()),
        timeout=data.get("timeout"), hide_tools=frozenset(data.get("hide_tools") or ()), title=data.get("title"),
        ignore=tuple(data.get("ignore") or ()), isolation=data.get("isolation"),
        state_group=data.get("state_group"),
        source=Source(**data["source"]) if data.get("source") else None, build=data.get("build"),
    )


def spec_digest(spec: ServerSpec) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(spec_to_dict(spec), sort_keys=True).encode()).hexdigest()[:16]
