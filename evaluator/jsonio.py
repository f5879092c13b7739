"""Reading JSON and JSONL inputs so that every error can name file, line and field.

JSONL is easy: the line is the record's line. For whole JSON documents the
standard parser forgets positions, so `load_json` runs the pure-Python scanner
with a hooked object parser that stamps every object with the line its `{` is
on (`LineDict.line`). Task files are small, so the slower scanner is fine.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import json.scanner
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, overload

from mcpgw.evaluator.errors import InputError


class LineDict(dict[str, Any]):
    """A JSON object that remembers the line it starts on."""

    __slots__ = ("line",)
    line: int


def _read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), None, None, "file not found") from None
    except IsADirectoryError:
        raise InputError(str(path), None, None, "is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, value) for each non-blank line; a bad line is an InputError."""
    source = str(path)
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError(source, None, None, "file not found") from None
    except OSError as exc:
        raise InputError(source, None, None, f"cannot read: {exc.strerror or exc}") from None
    loads = json.loads
    with handle:
        lineno = 0
        try:
            for lineno, text in enumerate(handle, 1):
                if not text.strip():
                    continue
                try:
                    yield lineno, loads(text)
                except json.JSONDecodeError as exc:
                    raise InputError(source, lineno, None, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        except UnicodeDecodeError as exc:
            raise InputError(source, lineno + 1, None, f"not UTF-8 text ({exc.reason})") from None


def load_json(path: str | Path, *, with_lines: bool = True) -> Any:
    """Parse one JSON document; objects come back as LineDict with their line. Without lines the C
    parser is used (several times faster on files of tens of MB; errors then name fields, not lines)."""
    text = _read_text(path)
    if with_lines:
        return loads_with_lines(text, str(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), exc.lineno, None, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise InputError(str(path), None, None, "JSON nested too deeply") from None


def loads_with_lines(text: str, source: str = "<text>") -> Any:
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    # The pure-Python scanner's hooks (JSONObject, parse_object, scan_once, py_make_scanner) are undocumented,
    # so typeshed leaves them out.
    decoder: Any = json.JSONDecoder()
    plain_object = json.decoder.JSONObject  # type: ignore[attr-defined]

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        start = s_and_end[1] - 1  # index of the "{"
        value, end = plain_object(s_and_end, *args)
        stamped = LineDict(value)
        stamped.line = bisect.bisect_left(newlines, start) + 1
        return stamped, end

    decoder.parse_object = parse_object  # read by py_make_scanner when it is built
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        return decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, exc.lineno, None, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise InputError(source, None, None, "JSON nested too deeply") from None


def load_records(path: str | Path) -> list[tuple[int, Any]]:
    """A list of (line, record) from a JSON array, JSONL, or one (pretty-printed) JSON object: all
    three shapes occur in the wild (MCPEval's loader reads a lone object as a one-record list)."""
    text = _read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = loads_with_lines(text, str(path))
        return [(line_of(item, 1), item) for item in items]
    try:
        return list(iter_jsonl(path))
    except InputError as problem:
        if not stripped.startswith("{"):
            raise
        try:
            value = loads_with_lines(text, str(path))
        except InputError:
            raise problem from None
        return [(line_of(value, 1), value)]


@overload
def line_of(value: Any, default: int) -> int: ...
@overload
def line_of(value: Any, default: int | None = None) -> int | None: ...
def line_of(value: Any, default: int | None = None) -> int | None:
    line: int | None = getattr(value, "line", default)
    return line


class Fields:
    """Typed field access on one record, raising InputError that names file, line and field."""

    def __init__(self, record: Any, source: str, line: int | None, prefix: str = "") -> None:
        if not isinstance(record, Mapping):
            raise InputError(source, line, prefix or None, f"expected a JSON object, got {kind(record)}")
        self.record, self.source, self.line, self.prefix = record, source, line, prefix

    def _name(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(self.source, self.line, self._name(key), problem)

    def first_key(self, *keys: str) -> str | None:
        # Like the benchmarks' `a.get(k1) or a.get(k2)`: null and "" fall through to the next name.
        for key in keys:
            if self.record.get(key) not in (None, ""):
                return key
        return None

    @overload
    def text(self, *keys: str, required: Literal[True] = True, default: str | None = None) -> str: ...
    @overload
    def text(self, *keys: str, required: bool, default: str) -> str: ...
    @overload
    def text(self, *keys: str, required: bool, default: None = None) -> str | None: ...
    def text(self, *keys: str, required: bool = True, default: str | None = None) -> str | None:
        """A string field under the first of `keys` present; numbers are accepted as ids."""
        key = self.first_key(*keys)
        if key is None:
            if required:
                names = " or ".join(repr(k) for k in keys)
                raise InputError(self.source, self.line, self._name(keys[0]), f"missing (expected {names})")
            return default
        value = self.record[key]
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(key, f"expected a string, got {kind(value)}")
        return str(value)

    def items(self, key: str, *, required: bool = True) -> list[Any]:
        value = self.record.get(key)
        if value is None:
            if required:
                raise self.fail(key, "missing (expected a list)")
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {kind(value)}")
        return value

    def mapping(self, key: str, *, required: bool = True) -> dict[str, Any]:
        value = self.record.get(key)
        if value is None:
            if required:
                raise self.fail(key, "missing (expected an object)")
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected an object, got {kind(value)}")
        return dict(value)

    def number(self, key: str, *, required: bool = False) -> float | None:
        value = self.record.get(key)
        if value is None:
            if required:
                raise self.fail(key, "missing (expected a number)")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"expected a number, got {kind(value)}")
        return float(value)


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
