"""What the configuration says, once read: each server's entry (`ServerSpec`) and the whole config.

Whichever shape it was read from (`servers.lock.yaml` or an `mcpServers` JSON, see lock.config),
a server is one frozen `ServerSpec`: how to start or reach it, where its exact code comes from
(`Pin`, `Source`), its flags, and the values that must never be written anywhere
(`secret_values`). Env values and headers may reference the gateway's environment as `${NAME}`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from mcpgw.gateway.errors.tree import ConfigError

DEFAULT_SEPARATOR = "__"
SECRET_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.IGNORECASE)
SERVER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
TRANSPORTS = ("stdio", "http", "sse")
FLAGS = (
    "offline",
    "stateful",
    "stateless",
    "nondeterministic",
    "unsafe",
    "network",  # network: tools/list needs it
    "all_interfaces",
)  # all_interfaces: an HTTP entry's command listens on every interface (no option for loopback)
ISOLATION = ("run", "shared")
# Names a per-instance state directory in args/env/cwd (see gateway.upstreams.isolation); not from the environment.
RUN_STATE_VAR = "RUN_STATE_DIR"
# Names a free loopback port, picked at each launch of an HTTP entry's command, in its url, args, env or headers
# (gateway.upstreams.http_launch); not from the environment.
FREE_PORT_VAR = "FREE_PORT"
ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Values too ordinary to be secrets, and too common in text to mask.
PLAIN_VALUE_RE = re.compile(r"(?i)true|false|yes|no|on|off|null|none|[-+]?\d+(\.\d+)*")


def expand_env(template: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    return ENV_REF_RE.sub(lambda m: environ.get(m.group(1), ""), template)


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
    simulate: str | None = None  # "allowed": a replay may simulate its misses though it is not stateless
    line: int = 0

    @property
    def offline(self) -> bool:
        """Runs without network: started with the package registries switched off (gateway.upstreams.live)."""
        return "offline" in self.flags

    @property
    def nondeterministic(self) -> bool:
        """Answers differ from run to run: drift learns which fields are volatile (replay.drift)."""
        return "nondeterministic" in self.flags

    @property
    def stateful(self) -> bool:
        return "stateful" in self.flags

    @property
    def may_simulate(self) -> bool:
        """A replay's miss may be answered by a simulator: a stateless server, or one whose lock entry allows it."""
        return not self.tracked or self.simulate == "allowed"

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
        return [v for v in dict.fromkeys(values) if len(v) >= 4 and not PLAIN_VALUE_RE.fullmatch(v)]


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
                for asked in unknown:
                    near = difflib.get_close_matches(asked, list(self.servers), n=3, cutoff=0.6)
                    near += [s for s in sorted(self.servers) if s.startswith(asked) and s not in near][: 3 - len(near)]
                    hints.append(f"{asked!r} (did you mean {', '.join(near)}?)" if near else repr(asked))
                raise ConfigError(
                    self.source,
                    None,
                    f"unknown server id {'; '.join(hints)}; `mcpgw servers` or the "
                    f"lock's `servers:` list them ({len(self.servers)} here)",
                )
            return [self.servers[s] for s in only]
        name = profile or self.default_profile
        if name is None:
            return list(self.servers.values())
        if name not in self.profiles:
            raise ConfigError(self.source, None, f"unknown profile {name!r}; known: {sorted(self.profiles)}")
        return [self.servers[s] for s in self.profiles[name]]
