"""The reference pages that are written by hand say what the code does: every HTTP route the app `mcpgw serve`
builds is on docs/reference/http.md, and every field of a call-log record is on docs/reference/call-log.md.
(The CLI reference is generated from the parsers when the site is built; `mkdocs build --strict` in .ci/run fails
on a broken link or a page left out of the nav.)"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mcpgw.app import Gateway
from mcpgw.cassette.cassette import Cassette
from mcpgw.gateway.specs.settings import ModelSettings, Settings, TelemetrySettings
from mcpgw.lock.config import parse_config
from tests.conftest import ROOT

DOCS = ROOT / "docs"
CONFIG = "version: 1\nservers:\n  good:\n    transport: stdio\n    command: python3\n    args: ['-c', 'pass']\n"


def app_routes(tmp_path: Path) -> list[str]:
    """Every route path of the app `serve` builds with every optional route switched on (metrics, model routes)."""
    specs = list(parse_config(CONFIG).servers.values())
    gateway = Gateway(
        specs,
        Settings(
            mode="live",
            cassettes_dir=tmp_path,
            cassette="routes",
            telemetry=TelemetrySettings(metrics=True),
            model=ModelSettings(base_url="http://127.0.0.1:9/v1"),
        ),
    )
    try:
        app = gateway.http_app().asgi
        while not hasattr(app, "router"):
            app = app.app
        return [route.path for route in app.router.routes]
    finally:
        gateway.close()


def test_every_http_route_is_documented(tmp_path):
    page = (DOCS / "reference" / "http.md").read_text()
    routes = app_routes(tmp_path)
    assert "/v1/call-tool" in routes and "/metrics" in routes  # the walk saw the optional routes
    missing = [
        path
        for path in routes
        if f"`{path}`" not in page
        and f"`{path}," not in page
        and f" `{path}`" not in page
        and path not in re.findall(r"`([^`]+)`", page)
    ]
    assert missing == [], f"routes not on docs/reference/http.md: {missing}"


def test_every_call_log_field_is_documented():
    page = (DOCS / "reference" / "call-log.md").read_text()
    documented = set(re.findall(r"`([a-z_]+)`", page))
    cassette = Cassette(ROOT / "cassettes" / "default", create=False, readonly=True)
    try:
        fields = {key for _, record in cassette.store.items("calls") for key in record}
    finally:
        cassette.close()
    assert fields, "the default cassette holds call records"
    assert fields - documented == set(), f"call-log fields not on docs/reference/call-log.md: {fields - documented}"


def test_every_page_is_in_the_nav():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def pages(items: list) -> set[str]:
        out = set()
        for item in items:
            for value in item.values():
                out |= pages(value) if isinstance(value, list) else {value}
        return out

    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert on_disk == pages(nav)
