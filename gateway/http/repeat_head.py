"""A request head that repeats the last one on its connection, recognised from its bytes alone.

A client on a kept-alive connection sends the same head on every call but for its Content-Length:
the same request line, the same headers in the same order, the same session id. uvicorn's parser
(httptools) calls back into Python once per header line, and the hot lane then decodes and checks
those headers again: measured, about a fifth of a replayed call's CPU goes to reading a head whose
every byte but the length's digits it has already read, parsed and passed.

`RepeatHead` keeps the bytes of a head the parser read and the hot lane took, split around the
digits of its length: `prefix` (request line up to the length's value) and `suffix` (the rest of the
head, to its blank line). `match` takes what arrived - that prefix, ASCII digits, that suffix - and says where its body begins and ends; anything else (another header, a byte changed,
half a head) is None, and the read goes to the parser as it always did. The body may arrive in later
reads (clients often send the head and the body apart); more than one request in what arrived goes to
the parser too (gateway.http.hot_protocol). A head is kept only when it carries one
Content-Length, no Transfer-Encoding, and its digits are the ones the parser read for the body.
"""

from __future__ import annotations

from typing import Any

_LENGTH = b"\r\ncontent-length:"
MAX_DIGITS = 12  # a length of a terabyte: longer runs of digits are not a repeat (the parser decides)


class RepeatHead:
    """A head the parser read and the hot lane took, and what the parser made of it (for `match`)."""

    __slots__ = ("prefix", "suffix", "url", "headers", "length_at", "keep_alive", "lane_state")

    def __init__(
        self,
        prefix: bytes,
        suffix: bytes,
        url: bytes,
        headers: list[tuple[bytes, bytes]],
        length_at: int,
        keep_alive: bool,
    ) -> None:
        self.prefix = prefix
        self.suffix = suffix
        self.url = url
        self.headers = headers  # as uvicorn listed them (names lowercased); the length's entry at `length_at`
        self.length_at = length_at
        self.keep_alive = keep_alive
        self.lane_state: Any = (
            None  # what the hot lane decided from this head (gateway.endpoints.hot_lane), kept with it
        )

    @classmethod
    def of(
        cls, head: bytes, body_length: int, url: bytes, headers: list[tuple[bytes, bytes]], keep_alive: bool
    ) -> RepeatHead | None:
        """The template of a head (its bytes to the blank line) the parser read as `url`, `headers`, with a
        body of `body_length` bytes; None for a head that could not be recognised again safely."""
        if not head.endswith(b"\r\n\r\n"):
            return None
        lengths = [i for i, (name, _) in enumerate(headers) if name == b"content-length"]
        if len(lengths) != 1 or any(name == b"transfer-encoding" for name, _ in headers):
            return None
        lowered = head.lower()
        at = lowered.find(_LENGTH)
        if at < 0 or lowered.find(_LENGTH, at + 1) >= 0 or b"\r\ntransfer-encoding:" in lowered:
            return None
        start = at + len(_LENGTH)
        while head[start : start + 1] in (b" ", b"\t"):
            start += 1
        end = head.find(b"\r\n", start)
        digits = head[start:end]
        if not _digits(digits) or int(digits) != body_length or headers[lengths[0]][1] != digits:
            return None
        return cls(head[:start], head[end:], url, headers, lengths[0], keep_alive)

    def match(self, data: bytes) -> tuple[list[tuple[bytes, bytes]], int, int] | None:
        """When `data` begins with this head (whole, its digits aside): the request's headers, where its body
        begins and where it ends (the body may not have arrived yet, or more may follow it); else None."""
        prefix = self.prefix
        if not data.startswith(prefix):
            return None
        start = len(prefix)
        end = data.find(b"\r\n", start, start + MAX_DIGITS + 2)
        if end < 0:
            return None
        digits = data[start:end]
        if not _digits(digits) or not data.startswith(self.suffix, end):
            return None
        headers = self.headers.copy()
        headers[self.length_at] = (b"content-length", digits)
        body_at = end + len(self.suffix)
        return headers, body_at, body_at + int(digits)


def _digits(text: bytes) -> bool:
    """Plain ASCII digits (bytes.isdigit knows no others), no leading zero: a length the parser reads alike."""
    return 0 < len(text) <= MAX_DIGITS and text.isdigit() and (text[0] != 48 or len(text) == 1)
