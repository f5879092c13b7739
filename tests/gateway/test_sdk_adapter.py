"""The SDK's private surface the gateway uses is all in gateway.sdk_adapter, and the installed SDK still has it."""

from __future__ import annotations

import re
from pathlib import Path

import mcp.server.streamable_http_manager as manager_module
from mcp.server.streamable_http import StreamableHTTPServerTransport

from gateway import sdk_adapter
from gateway.front import build_server
from gateway.http_app import build_http_app
from gateway.router import Router
from gateway.settings import Settings
from recorder.calllog import CallLog
from recorder.store import CassetteStore

GATEWAY = Path(sdk_adapter.__file__).parent


def test_the_installed_sdk_has_every_private_name_the_adapter_uses():
    assert sdk_adapter.missing() == []


def test_the_contract_check_notices_a_renamed_private_method(monkeypatch):
    monkeypatch.delattr(StreamableHTTPServerTransport, "_check_content_type")
    assert sdk_adapter.missing() == ["StreamableHTTPServerTransport._check_content_type: no such method"]


def test_no_module_but_the_adapter_names_an_sdk_private():
    names = {name for _, name, _ in sdk_adapter.PRIVATE}
    pattern = re.compile(r"\.(" + "|".join(re.escape(n) for n in names) + r")\b")
    users = sorted(p.name for p in GATEWAY.glob("*.py") if p.name != "sdk_adapter.py" and pattern.search(p.read_text()))
    assert users == []


def test_building_the_http_app_patches_nothing_in_the_sdk(tmp_path):
    before = manager_module.StreamableHTTPServerTransport
    router = Router([], {}, Settings(), CallLog(CassetteStore(tmp_path / "c")))
    build_http_app(router, build_server(router), "127.0.0.1")
    assert manager_module.StreamableHTTPServerTransport is before is StreamableHTTPServerTransport
