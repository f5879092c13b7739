"""One reading of a run id, wherever a request names it: `/runs/<id>/...`, `?run=<id>`, `X-Run-Id: <id>`.

A run id is text. In the URL (path or query) it is percent-encoded UTF-8, read with RFC 3986's rules in both
(`%20` a space, `%2B` a plus, `%2F` a slash; a raw `+` in the path a plus). In the query a raw `+` is refused: form
encoding (what `urlencode` and most HTTP clients' `params=` write) means a space by it, RFC 3986 a plus, and which
one the client meant cannot be told (`?run=a+b` was read `a b` while `/runs/a+b/` and the header gave `a+b`). In
the header it is the value's bytes as UTF-8 (not percent-decoded: headers are not URLs). Bytes that are not UTF-8,
an id longer than `MAX_RUN`, or one with a character that is not printable, are refused with the reason, never read
some other way (latin-1 once read `ü` sent raw in the header as another id than `/runs/%C3%BC/`: another lane).

A request may name its run in several places only if they all name the same one; two that differ are refused
(400): which one the client meant is not guessed. Untagged clients' lanes are `<default run>/client-<id>`,
`<default run>/session-<id>` or `<default run>/anonymous` (gateway.routing.router_core.Caller.lane); a tagged id of
that shape would replay in another client's lane, so an id whose last `/`-separated part has that shape is refused.

Read once per request (gateway.sessions.request_context) and once per head on the hot lane (its head verdicts are
kept with a repeated head), so the per-call cost stays flat.
"""

from __future__ import annotations

from urllib.parse import unquote

MAX_RUN = 200  # characters
_UNTAGGED_PREFIXES = ("client-", "session-")
_UNTAGGED_NAMES = ("anonymous", "stdio")


class RunIdError(ValueError):
    """A run id that cannot be read, or a request naming two runs: the 400's message."""


def from_url(encoded: str, where: str) -> str:
    """A path segment's or query value's run id, percent-decoded as UTF-8 (`encoded` as sent, latin-1 text)."""
    try:
        run = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise RunIdError(f"the run id in {where} is not percent-encoded UTF-8") from None
    return _checked(run, where)


def from_header(latin1: str) -> str:
    """The `X-Run-Id` header's run id: the value's bytes (held as latin-1 text, as every header) read as UTF-8."""
    try:
        run = latin1.encode("latin-1").decode("utf-8")
    except UnicodeError:
        raise RunIdError("the X-Run-Id header is not UTF-8") from None
    return _checked(run, "X-Run-Id")


def query_values(query: bytes) -> list[str]:
    """The raw (still percent-encoded) values of every `run=` parameter of a query string, as latin-1 text."""
    values = []
    for part in query.decode("latin-1").split("&"):
        name, equals, value = part.partition("=")
        if equals and name == "run":
            values.append(value)
    return values


def from_query(query: bytes) -> str | None:
    """The query's run id (`?run=`); None when it names none (or an empty one)."""
    values = query_values(query)
    if len(values) > 1:
        raise RunIdError(f"{len(values)} run parameters in the query: send exactly one")
    if not values or not values[0]:
        return None
    if "+" in values[0]:
        raise RunIdError(
            "a '+' in ?run= is ambiguous (a space in form encoding, a plus in a URL): write %2B for a "
            "plus, %20 for a space"
        )
    return from_url(values[0], "?run=")


def read(path_run: str | None, query: bytes, header: str | None) -> str | None:
    """The one run a request names (None: untagged). `path_run`: the `/runs/<id>` segment, decoded already (by
    `from_url`); `header`: the `X-Run-Id` value as held (latin-1 text). Raises `RunIdError` with the 400's message."""
    named: list[tuple[str, str]] = []
    if path_run is not None:
        named.append((f"/runs/{path_run}/", path_run))
    if b"run=" in query:
        queried = from_query(query)
        if queried is not None:
            named.append((f"?run={queried}", queried))
    if header:
        run = from_header(header)
        named.append((f"X-Run-Id: {run}", run))
    if not named:
        return None
    first_where, first = named[0]
    for where, run in named[1:]:
        if run != first:
            raise RunIdError(f"two runs named: {first_where} and {where}: name one (or the same in both)")
    return first


def _checked(run: str, where: str) -> str:
    if len(run) > MAX_RUN:
        raise RunIdError(f"the run id in {where} is longer than {MAX_RUN} characters")
    if not run.isprintable():
        raise RunIdError(f"the run id in {where} holds a character that is not printable")
    last = run.rpartition("/")[2]
    if "/" in run and (last.startswith(_UNTAGGED_PREFIXES) or last in _UNTAGGED_NAMES):
        raise RunIdError(
            f"the run id {run!r} in {where} has the shape of an untagged client's lane "
            "(<run>/client-<id>, <run>/session-<id>): choose another"
        )
    return run
