"""The live model client: httpx's pool directly unless the environment routes the endpoint through
a proxy (which only httpx honours); a dead endpoint is ModelUnreachable, one line."""

from __future__ import annotations

import asyncio
import json

import anyio
import pytest

from mcpgw.llm.upstream import LiveModel, ModelUnreachable

PROXY_VARS = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


async def answering(name: str, heard: list[str]) -> asyncio.Server:
    """A one-line HTTP server on a free port: notes each request line, answers {"via": name}."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heard.append(head.split(b"\r\n", 1)[0].decode())
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
        )
        await reader.readexactly(length)
        body = json.dumps({"via": name}).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def test_the_model_is_reached_through_a_proxy_exactly_when_the_environment_names_one_for_it(monkeypatch):
    """Which way the request travels, seen by a proxy and an endpoint of our own on loopback."""
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)

    async def ask(env: dict[str, str]) -> tuple[str, list[str], list[str]]:
        to_proxy: list[str] = []
        to_model: list[str] = []
        proxy, model_server = await answering("proxy", to_proxy), await answering("model", to_model)
        proxy_url = f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"
        url = f"http://127.0.0.1:{model_server.sockets[0].getsockname()[1]}/v1"
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value.replace("PROXY", proxy_url))
            model = LiveModel(url, "k")
        try:
            answer = await model.send("POST", "/chat/completions", b"{}")
        finally:
            await model.aclose()
            proxy.close()
            model_server.close()
        return answer.body["via"], to_proxy, to_model

    via, to_proxy, to_model = asyncio.run(ask({}))
    assert via == "model" and to_proxy == [] and to_model == ["POST /v1/chat/completions HTTP/1.1"]
    via, to_proxy, to_model = asyncio.run(ask({"HTTP_PROXY": "PROXY"}))
    assert via == "proxy" and to_model == [] and len(to_proxy) == 1 and to_proxy[0].startswith("POST http://127.0.0.1:")
    via, _, to_model = asyncio.run(ask({"HTTP_PROXY": "PROXY", "NO_PROXY": "127.0.0.1"}))
    assert via == "model" and len(to_model) == 1  # NO_PROXY names the endpoint: straight there
    via, _, to_model = asyncio.run(ask({"HTTPS_PROXY": "PROXY"}))
    assert via == "model" and len(to_model) == 1  # an http endpoint: HTTPS_PROXY does not apply


def test_an_endpoint_nobody_listens_on_is_unreachable_not_a_traceback():
    async def send() -> None:
        model = LiveModel("http://127.0.0.1:9/v1", None)
        try:
            await model.send("POST", "/chat/completions", b"{}")
        finally:
            await model.aclose()

    with pytest.raises(ModelUnreachable, match="model endpoint http://127.0.0.1:9/v1 unreachable: ConnectError"):
        anyio.run(send)
