"""Edit a lock file's text in place: add server entries, add ids to a profile, set one key of an entry.

The file is never re-serialized. Each edit finds its spot from the positions
PyYAML's composer gives every node, and inserts or replaces only the lines it
owns, so comments, blank lines, key order and quoting elsewhere stay as the
author wrote them. Callers re-parse the result (`check_text`) before writing.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from mcpgw.gateway.errors.tree import ConfigError, GatewayError
from mcpgw.lock.config import GatewayConfig, parse_config


def scalar(text: str) -> str:
    """`text` as a YAML scalar: plain where YAML reads it back as the same string, else quoted."""
    try:
        plain = yaml.safe_load(text) == text and text.strip() == text and not text.startswith(("*", "&", "!", "@", "`"))
    except yaml.YAMLError:
        plain = False
    return text if plain and "#" not in text and ": " not in text else json.dumps(text)


def flow_list(items: list[str]) -> str:
    return "[" + ", ".join(scalar(i) for i in items) + "]"


def add_servers(text: str, block: str, source: str) -> str:
    """Insert entry text (already indented like the existing entries) at the end of `servers:`."""
    root = _root(text, source)
    found = _get(root, "servers")
    if found is None or not isinstance(found[1], yaml.MappingNode) or found[1].flow_style or not found[1].value:
        raise GatewayError(f"{source}: 'servers' is not a block mapping with entries; cannot append to it")
    return _insert(text, _end(text, found[1]), "\n" + block)


def server_indent(text: str, source: str) -> tuple[int, int]:
    """(column of the server ids, column of an entry's keys) as the file writes them; (2, 4) by default."""
    root = _root(text, source) if text.strip() else None
    found = _get(root, "servers") if root is not None else None
    if found is None or not isinstance(found[1], yaml.MappingNode) or not found[1].value:
        return 2, 4
    key, entry = found[1].value[0]
    column = key.start_mark.column
    if isinstance(entry, yaml.MappingNode) and not entry.flow_style and entry.value:
        return column, entry.value[0][0].start_mark.column
    return column, column + 2


def add_to_profile(text: str, profile: str, ids: list[str], config: GatewayConfig, source: str) -> str:
    """Add `ids` (those not already there) to `profile`, creating the profile or `profiles:` if needed."""
    root = _root(text, source)
    indent, _ = server_indent(text, source)
    pad = " " * indent
    found = _get(root, "profiles")
    if found is None or (isinstance(found[1], yaml.ScalarNode) and found[1].value in ("", "null", "~")):
        line = f"{pad}{scalar(profile)}: {flow_list(ids)}\n"
        if found is None:
            return _insert(text, len(text), "\nprofiles:\n" + line)
        return _insert(text, _line_end(text, found[0].end_mark.index), line)
    key, profiles = found
    if not isinstance(profiles, yaml.MappingNode):
        raise GatewayError(f"{source}:{key.start_mark.line + 1}: 'profiles' is not a mapping")
    if profiles.flow_style:
        merged = {name: list(members) for name, members in config.profiles.items()}
        merged[profile] = list(dict.fromkeys([*merged.get(profile, []), *ids]))
        flow = "{" + ", ".join(f"{scalar(n)}: {flow_list(m)}" for n, m in merged.items()) + "}"
        return text[: profiles.start_mark.index] + flow + text[profiles.end_mark.index :]
    member = _get(profiles, profile)
    if member is None:
        column = profiles.value[0][0].start_mark.column if profiles.value else indent
        return _insert(text, _end(text, profiles), f"{' ' * column}{scalar(profile)}: {flow_list(ids)}\n")
    seq = member[1]
    if not isinstance(seq, yaml.SequenceNode):
        raise GatewayError(f"{source}:{member[0].start_mark.line + 1}: profile {profile!r} is not a list")
    existing = [item.value for item in seq.value if isinstance(item, yaml.ScalarNode)]
    new = [i for i in ids if i not in existing]
    if not new:
        return text
    if seq.flow_style or not seq.value:
        return text[: seq.start_mark.index] + flow_list(existing + new) + text[seq.end_mark.index :]
    first = seq.value[0]
    line_start = text.rfind("\n", 0, first.start_mark.index) + 1
    dash = text.rfind("-", line_start, first.start_mark.index)
    prefix = text[line_start : first.start_mark.index] if dash >= 0 else " " * indent + "- "
    return _insert(text, _end(text, seq), "".join(f"{prefix}{scalar(i)}\n" for i in new))


def set_entry_key(text: str, server: str, key: str, block: Callable[[int], str], source: str) -> str:
    """Replace (or add) `key` of the server entry `server` with `block(column of the entry's keys)`."""
    root = _root(text, source)
    servers = _get(root, "servers")
    entry = _get(servers[1], server) if servers is not None and isinstance(servers[1], yaml.MappingNode) else None
    if entry is None:
        raise GatewayError(f"{source}: no server {server!r}")
    node = entry[1]
    if not isinstance(node, yaml.MappingNode) or node.flow_style:
        raise GatewayError(
            f"{source}:{entry[0].start_mark.line + 1}: server {server!r} is written in flow style "
            f"({{...}}); write it as a block mapping so its {key!r} can be added"
        )
    column = node.value[0][0].start_mark.column if node.value else entry[0].start_mark.column + 2
    current = _get(node, key)
    if current is None:
        return _insert(text, _end(text, node), block(column))
    start = text.rfind("\n", 0, current[0].start_mark.index) + 1
    return text[:start] + block(column) + text[_end(text, current[1]) :]


def check_text(text: str, source: str) -> GatewayConfig:
    """The edited text must still be a valid lock file; say so plainly if an edit broke it."""
    try:
        return parse_config(text, source)
    except ConfigError as exc:
        raise GatewayError(
            f"{source}: the edited lock file does not load ({exc.problem}); nothing was written"
        ) from None


def write_atomic(path: Path, text: str) -> None:
    """Replace the file in one step: a reader sees the old text or the new, never half of it."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise GatewayError(f"cannot write {path}: {exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise GatewayError(f"cannot write {path}: {exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- positions ---------------------------------------------------------------------


def _root(text: str, source: str) -> yaml.MappingNode:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise GatewayError(f"{source}: invalid YAML: {exc}") from None
    if not isinstance(node, yaml.MappingNode):
        raise GatewayError(f"{source}: expected a lock file (a mapping with 'version: 1')")
    return node


def _get(mapping: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if not isinstance(mapping, yaml.MappingNode):
        return None
    for k, v in mapping.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return k, v
    return None


def _end(text: str, node: yaml.Node) -> int:
    """Index of the line after the node's last content line (blank lines after it are not its own)."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        if isinstance(node, yaml.MappingNode):
            key, value = last
            empty = (
                isinstance(value, yaml.ScalarNode)
                and value.value == ""
                and value.start_mark.index == value.end_mark.index
            )
            node = key if empty else value
        else:
            node = last
    index = node.end_mark.index
    line_start = text.rfind("\n", 0, index) + 1
    position = line_start if text[line_start:index].strip() == "" else _line_end(text, index)
    while position > 0:
        previous = text.rfind("\n", 0, position - 1) + 1
        if previous < position and text[previous:position].strip() == "":
            position = previous
        else:
            break
    return position


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _insert(text: str, index: int, block: str) -> str:
    if index == len(text) and text and not text.endswith("\n"):
        block = "\n" + block
    return text[:index] + block + text[index:]
