"""`mcpgw servers install` with an MCPGW_CACHE it cannot use: one line naming it, before anything is fetched."""

from __future__ import annotations

from tests.lock.helpers import mcpgw
from tests.lock.test_installer import fake_runners  # noqa: F401 - the fixture

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
    assert capsys.readouterr().err.strip() == (
        f"mcpgw: cannot keep installs in MCPGW_CACHE={cache} (not a folder): set MCPGW_CACHE to a folder you can write"
    )
    assert not fake_runners.exists()  # refused before any runner was called


def test_a_sources_folder_that_does_not_exist_is_named(tmp_path, fake_runners, monkeypatch, capsys):  # noqa: F811
    lock = tmp_path / "servers.lock.yaml"
    lock.write_text(LOCK)
    monkeypatch.setenv("MCPGW_CACHE", str(tmp_path / "cache"))
    missing = tmp_path / "no-such-folder"
    assert mcpgw("servers", "install", "--config", str(lock), "--sources", str(missing)) == 2
    assert capsys.readouterr().err.strip() == (
        f"mcpgw: --sources: {missing} does not exist (it holds "
        "owner+repo@commit.tar.gz archives or folders of that name)"
    )
    assert not fake_runners.exists()  # refused before any runner was called
    monkeypatch.setenv("MCPGW_SOURCES", str(lock))  # the variable, and a file rather than a folder
    assert mcpgw("servers", "install", "--config", str(lock)) == 2
    assert capsys.readouterr().err.startswith(f"mcpgw: MCPGW_SOURCES: {lock} is not a folder")


def test_install_prints_plain_progress_lines_when_not_on_a_terminal(tmp_path, fake_runners, monkeypatch, capsys):  # noqa: F811
    lock = tmp_path / "servers.lock.yaml"
    lock.write_text(LOCK)
    monkeypatch.setenv("MCPGW_CACHE", str(tmp_path / "cache"))
    assert mcpgw("servers", "install", "--config", str(lock)) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "mcpgw: installing 1 server(s), 4 at a time"
    assert "mcpgw: good_uv: fetching pypi good@2.0" in err and "mcpgw: good_uv: checking it starts offline" in err
    assert any(line.startswith("mcpgw: good_uv: installed in ") and line.endswith("(1 of 1 done)") for line in err), err
