"""Load `servers.lock.yaml` (format v1) or an `mcpServers` JSON into one config object.

Every problem is a `ConfigError` naming the file, the line and what is wrong,
raised before anything starts. YAML and JSON are both read through a YAML
loader that remembers the line of every mapping key (JSON is read with the
json module first, so that its syntax errors get json's exact line).

The pieces, one concept each: `gateway.specs.server_spec` (what a config says: `ServerSpec`,
`GatewayConfig`), `lock.config_fields` (the line-remembering loader and field readers),
`lock.lock_format` (the lock file's keys), `lock.mcp_servers_json` (the mcpServers shapes),
`gateway.specs.spec_record` (an entry as a cassette stores it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.gateway.specs.server_spec import GatewayConfig, ServerSpec
from mcpgw.lock.config_fields import DuplicateKey, LineLoader, LineMapping
from mcpgw.lock.lock_format import from_lock
from mcpgw.lock.mcp_servers_json import from_mcp_servers

# ServerSpec and GatewayConfig are what loading returns: most of the code imports them from here.
__all__ = [
    "CHECKOUT_LOCK",
    "LOCK_NAME",
    "SHIPPED_LOCK",
    "GatewayConfig",
    "ServerSpec",
    "default_lock",
    "load_config",
    "parse_config",
    "read_config_text",
]

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
        doc = yaml.load(text, Loader=LineLoader)  # noqa: S506 - SafeLoader subclass
    except DuplicateKey as exc:
        raise ConfigError(source, exc.line, exc.message) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, line, f"invalid YAML: {problem}") from None
    if not isinstance(doc, LineMapping):
        raise ConfigError(source, 1, "expected a mapping at the top (a lock file or an mcpServers object)")
    if "version" not in doc:  # Claude Desktop / Cursor ("mcpServers") or VS Code ("servers") shapes
        return from_mcp_servers(doc, source)
    return from_lock(doc, source)
