"""`mcpgw servers install` with an MCPGW_CACHE it cannot use: one line naming it, before anything is fetched."""

from __future__ import annotations

from tests.lock.helpers import mcpgw
from tests.lock.test_install import fake_runners  # noqa: F401 - the fixture

LOCK = """version: 1
servers:
  good_uv:
    command: uvx
    args: ["--from", "good==2.0", "good-server"]
    pin: {registry: pypi, package: good, version: "2.0"}
"""


def test_a_cache_that_is_not_a_folder_is_named(tmp_path, fake_runners, monkeypatch, capsys):  # noqa: F811
    lock = tmp_path / "servers.lock.yaml"
    lock.write_text(LOCK)
    cache = tmp_path / "a-file"  # as MCPGW_CACHE=/dev/null: where every install is remembered is not a folder
    cache.write_text("")
    monkeypatch.setenv("MCPGW_CACHE", str(cache))
    assert mcpgw("servers", "install", "--config", str(lock)) == 2
    assert capsys.readouterr().err.strip() == (f"mcpgw: cannot keep installs in MCPGW_CACHE={cache} (not a folder): "
                                               "set MCPGW_CACHE to a folder you can write")
    assert not fake_runners.exists()  # refused before any runner was called
