"""Request heads are capped: at most MAX_HEADERS header lines and MAX_HEAD_BYTES in all.

uvicorn's httptools protocol keeps every header line of a request until the head ends,
with no count or size limit (h11's `h11_max_incomplete_event_size` does not apply to
it), and the bearer token is checked only once the head is whole: a client with no
token could make the gateway hold hundreds of megabytes. Here the bytes of a head are
counted twice: as they arrive (so an endless header line is cut within one read of the
cap, before the parser has it whole), and as they are parsed (the request target and
each header line: so a head over the cap that arrives in one read, which the parser
finishes within that read, is refused too); and its header lines as they are parsed.
Past any cap the client gets a 431 and the connection is closed, before anything else
reads the request.
"""

from __future__ import annotations

import json

from mcpgw.gateway.http.head_hook import HeadHook

MAX_HEADERS = 100  # browsers and SDK clients send about 10-20
MAX_HEAD_BYTES = 64 * 1024  # request line plus headers; nginx's default buffers allow 32 KB


class _HeadTooLarge(Exception):
    pass


class HeadLimitsProtocol(HeadHook):
    max_headers = MAX_HEADERS
    max_head_bytes = MAX_HEAD_BYTES
    _in_head = True  # a connection starts with a request head
    _head_bytes = 0
    _header_count = 0
    _parsed_bytes = 0  # the header lines of the request being parsed, as parsed (with ": " and CRLF)
    _head_refusal: str | None = None

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Still in the head after this read (a read that ends it may carry a body, not counted): past
        # the cap, refused within one read of it, so what the parser holds stays bounded.
        if self._in_head and self._head_bytes > self.max_head_bytes:
            self._refuse_head(f"request head over {self.max_head_bytes} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._header_count, self._parsed_bytes = True, 0, 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.max_head_bytes:
            self._stop_parsing(f"request head over {self.max_head_bytes} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.max_headers:
            self._stop_parsing(f"more than {self.max_headers} header lines")
        self._parsed_bytes += len(name) + len(value) + 4
        if self._parsed_bytes + len(self.url) > self.max_head_bytes:
            self._stop_parsing(f"request head over {self.max_head_bytes} bytes")
        super().on_header(name, value)

    def _stop_parsing(self, why: str) -> None:
        self._head_refusal = why
        raise _HeadTooLarge  # stops the parser; uvicorn answers through send_400_response, below

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        super().on_headers_complete()

    def head_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        super().head_complete()

    def send_400_response(self, msg: str) -> None:
        if self._head_refusal is not None:
            self._refuse_head(self._head_refusal)
            return
        super().send_400_response(msg)

    def _refuse_head(self, why: str) -> None:
        self._in_head = False
        if self.transport.is_closing():
            return
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": f"Request Header Fields Too Large: {why}"},
            }
        ).encode()
        head = (
            f"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        self.transport.write(head + body)
        self.transport.close()
