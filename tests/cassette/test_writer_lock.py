"""cassette.writer_lock in one piece; with gateway processes (refused naming the holder, freed by kill -9):
tests/mcpgw/test_cassette_writers.py. An flock belongs to an open file, so a second open in this process stands
for a second process."""

from __future__ import annotations

import os

import pytest

from mcpgw.cassette.cassette import Cassette
from mcpgw.cassette.writer_lock import CassetteBusy, holder


def test_one_writer_holds_a_cassette_and_a_second_is_refused_naming_it(tmp_path):
    first = Cassette(tmp_path / "X", exclusive=True)
    with pytest.raises(CassetteBusy, match=rf"being written by pid {os.getpid()} \("):
        Cassette(tmp_path / "X", exclusive=True)
    first.close()
    assert holder(tmp_path / "X")["pid"] == os.getpid()  # the file stays, unlocked: the next writer takes it
    Cassette(tmp_path / "X", exclusive=True).close()


def test_discard_takes_away_only_a_cassette_the_open_made(tmp_path):
    made = Cassette(tmp_path / "new", exclusive=True)
    made.discard()
    assert not (tmp_path / "new").exists()
    Cassette(tmp_path / "X").close()
    kept = Cassette(tmp_path / "X", exclusive=True)
    kept.discard()
    assert (tmp_path / "X" / "data.mdb").exists()
