"""Reading a config document with its line numbers, so every error can name the line.

YAML and JSON are both read through `LineLoader`, whose mappings (`LineMapping`) remember the line
of themselves and of each key; the field readers below check one value's type and raise a
`ConfigError` naming the file, that line and what is wrong.
"""

from __future__ import annotations

import yaml

from mcpgw.gateway.errors.tree import ConfigError


class LineMapping(dict):
    """A dict that remembers the source line of itself and of each key."""

    line: int = 0
    key_lines: dict[str, int]


SERVER_MAPPINGS = ("servers", "mcpServers")  # whose keys are server ids: a repeated one is named a server


class DuplicateKey(yaml.YAMLError):
    """A key given twice in one mapping: YAML keeps the last silently, so one of the two would be lost."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def _refuse_duplicates(node: yaml.MappingNode, what: str) -> None:
    first: dict[str, int] = {}
    for key_node, _ in node.value:
        key, line = str(key_node.value), key_node.start_mark.line + 1
        if key in first:
            raise DuplicateKey(line, f"{what} {key!r} defined twice (first at line {first[key]})")
        first[key] = line


class LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineMapping:  # type: ignore[override]
        # Checked before the children are built, so a repeated server id is reported as a server, not a key.
        _refuse_duplicates(node, "key")
        for key_node, value_node in node.value:
            if key_node.value in SERVER_MAPPINGS and isinstance(value_node, yaml.MappingNode):
                _refuse_duplicates(value_node, "server")
        mapping = LineMapping(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        for key_node, _ in node.value:
            mapping.key_lines[str(key_node.value)] = key_node.start_mark.line + 1
        return mapping


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, LineLoader.construct_mapping)


def line_of(mapping: LineMapping, key: str) -> int:
    return mapping.key_lines.get(key, mapping.line)


def check_keys(mapping: LineMapping, allowed: set[str], source: str, where: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise ConfigError(
                source, line_of(mapping, str(key)), f"{where}: unknown key {key!r}; allowed: {sorted(allowed)}"
            )


def opt_str(entry: LineMapping, key: str, source: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(source, line_of(entry, key), f"{where}: {key!r} must be a string")
    return value


def str_list(entry: LineMapping, key: str, source: str, where: str) -> list[str]:
    value = entry.get(key) or []
    if not isinstance(value, list) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
    ):
        raise ConfigError(source, line_of(entry, key), f"{where}: {key!r} must be a list of strings")
    return [str(v) for v in value]


def str_map(entry: LineMapping, key: str, source: str, where: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(source, line_of(entry, key), f"{where}: {key!r} must be a mapping of strings")
    return {str(k): v for k, v in value.items()}
