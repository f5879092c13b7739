"""A config a newcomer writes wrong is refused at load, with file:line: a server id given twice (YAML
itself keeps the last one silently), and an http server's url that is not an http(s) URL."""

from __future__ import annotations

import json

import pytest

from mcpgw.gateway.errors.tree import ConfigError
from mcpgw.lock.config import parse_config
from tests.gateway.test_config import GOOD

TWICE = GOOD.replace("profiles:", "  time:\n    command: uvx\n    args: [mcp-server-time]\nprofiles:")


def test_a_server_defined_twice_names_both_lines():
    with pytest.raises(ConfigError) as err:
        parse_config(TWICE, "servers.lock.yaml")
    assert str(err.value) == "servers.lock.yaml:18: server 'time' defined twice (first at line 5)"


def test_any_key_given_twice_is_refused_too():
    with pytest.raises(ConfigError) as err:
        parse_config(GOOD.replace("    timeout: 5\n", "    timeout: 5\n    timeout: 50\n"), "servers.lock.yaml")
    assert str(err.value) == "servers.lock.yaml:11: key 'timeout' defined twice (first at line 10)"


def test_an_mcp_servers_json_with_a_name_twice():
    text = '{"mcpServers": {\n"a": {"command": "x"},\n"a": {"command": "y"}\n}}'
    json.loads(text)  # valid JSON: the json module keeps the last one silently as well
    with pytest.raises(ConfigError) as err:
        parse_config(text, "claude.json")
    assert str(err.value) == "claude.json:3: server 'a' defined twice (first at line 2)"


@pytest.mark.parametrize(
    "url", ["notaurl", "127.0.0.1:3001/mcp", "ftp://example.org/mcp", "http:///mcp", "http://[::1"]
)
def test_an_http_url_must_be_absolute_http(url):
    with pytest.raises(ConfigError) as err:
        parse_config(GOOD.replace("url: http://127.0.0.1:3001/mcp", f"url: {json.dumps(url)}"), "servers.lock.yaml")
    assert str(err.value) == (
        f"servers.lock.yaml:14: server 'maps': 'url' must be an absolute http:// or https:// URL, got {url!r}"
    )


def test_http_and_https_urls_load():
    for url in ("http://127.0.0.1:3001/mcp", "https://example.org/mcp"):
        config = parse_config(GOOD.replace("http://127.0.0.1:3001/mcp", url), "servers.lock.yaml")
        assert config.servers["maps"].url == url
