"""The live model client: httpx's pool directly unless the environment routes the endpoint through
a proxy (which only httpx honours); a dead endpoint is ModelUnreachable, one line."""

from __future__ import annotations

import anyio
import pytest

from llm.upstream import LiveModel, ModelUnreachable


def test_the_direct_pool_is_used_only_without_a_proxy_for_the_endpoint(monkeypatch):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def pooled(url: str) -> bool:
        model = LiveModel(url, "k")
        try:
            return model._pool is not None  # noqa: SLF001
        finally:
            await model.aclose()

    assert anyio.run(pooled, "https://api.example.com/v1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert not anyio.run(pooled, "https://api.example.com/v1")  # httpx's path, which honours the proxy
    assert anyio.run(pooled, "http://127.0.0.1:8000/v1")  # an http endpoint: HTTPS_PROXY does not apply
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert anyio.run(pooled, "https://api.example.com/v1")


def test_an_endpoint_nobody_listens_on_is_unreachable_not_a_traceback():
    async def send() -> None:
        model = LiveModel("http://127.0.0.1:9/v1", None)
        try:
            await model.send("POST", "/chat/completions", b"{}")
        finally:
            await model.aclose()

    with pytest.raises(ModelUnreachable, match="model endpoint http://127.0.0.1:9/v1 unreachable: ConnectError"):
        anyio.run(send)
