"""Which default cassette a bare `mcpgw serve` plays: the user's own, else the installed one."""

from __future__ import annotations

from mcpgw.cassette import embedded


def test_own_default_comes_first_then_the_packaged_then_the_checkout(tmp_path, monkeypatch):
    packaged, checkout, own = tmp_path / "packaged", tmp_path / "checkout", tmp_path / "cassettes" / "default"
    monkeypatch.setattr(embedded, "PACKAGED", packaged)
    monkeypatch.setattr(embedded, "CHECKOUT", checkout)
    assert embedded.default_cassette(tmp_path / "cassettes") is None
    for folder in (checkout, packaged, own):
        folder.mkdir(parents=True)
        (folder / "data.mdb").write_bytes(b"x")
        assert embedded.default_cassette(tmp_path / "cassettes") == folder
    assert embedded.shipped_default() == packaged
