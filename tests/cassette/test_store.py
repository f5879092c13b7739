"""The LMDB store: format checks, appends from several processes, big integers, failures made visible."""

from __future__ import annotations

import asyncio
import multiprocessing

import lmdb
import pytest

from mcpgw.cassette.codec import pack, unpack
from mcpgw.cassette.store import CassetteFormatError, CassetteStore


def _append_from_process(path: str, tag: str) -> None:
    store = CassetteStore(path)
    for i in range(50):
        store.append("calls", {"tag": tag, "i": i})
        store.append("exchanges", {"tag": tag, "i": i})
    store.close()


def test_two_processes_appending_to_one_cassette_lose_nothing(tmp_path):
    path = str(tmp_path / "c")
    CassetteStore(path).close()
    procs = [multiprocessing.get_context("spawn").Process(target=_append_from_process, args=(path, t)) for t in "AB"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    store = CassetteStore(path, create=False, readonly=True)
    calls = [v for _, v in store.items("calls")]
    exchanges = [v for _, v in store.items("exchanges")]
    assert len(calls) == 100 and len(exchanges) == 100
    assert [c["seq"] for c in calls] == list(range(1, 101))
    assert sorted((c["tag"], c["i"]) for c in calls) == sorted((t, i) for t in "AB" for i in range(50))


def test_integers_beyond_64_bits_are_kept_as_text():
    value = {"x": 2**70, "ok": [1, -(2**63)], "flag": True}
    assert unpack(pack(value)) == {"x": str(2**70), "ok": [1, -(2**63)], "flag": True}


def test_format_version_and_foreign_environments(tmp_path):
    store = CassetteStore(tmp_path / "c")
    store.close()
    env = lmdb.open(str(tmp_path / "c"), max_dbs=8)
    meta = env.open_db(b"meta")
    with env.begin(write=True, db=meta) as txn:
        txn.put(b"format", pack({"format": "mcpgw-cassette", "version": 99}))
    env.close()
    with pytest.raises(CassetteFormatError, match="format version 99"):
        CassetteStore(tmp_path / "c")
    with pytest.raises(CassetteFormatError, match="no cassette here"):
        CassetteStore(tmp_path / "missing", create=False)


def test_a_failing_commit_is_reported_to_the_waiter_and_not_retried(tmp_path):
    store = CassetteStore(tmp_path / "c")
    store.env.set_mapsize(64 * 1024)  # tiny map: commits fail with MapFullError

    async def go():
        futures = [store.append("exchanges", {"blob": "x" * 4096, "i": i}, wait=True) for i in range(40)]
        return await asyncio.gather(*futures, return_exceptions=True)

    results = asyncio.run(go())
    failures = [r for r in results if isinstance(r, Exception)]
    assert failures and "could not write the cassette" in str(failures[0])
    assert "cassette write failing" in store.health()["error"]
    store.env.set_mapsize(1 << 30)
    store.append("calls", {"after": True})  # writing resumes with the next batch
    store.close()
    reopened = CassetteStore(tmp_path / "c", create=False, readonly=True)
    # Issue 25 item 9: a waiter told "failed" never finds its record later (they used to be retried in).
    assert reopened.count("exchanges") == 40 - len(failures) and reopened.count("calls") == 1


def test_a_record_packed_once_gets_its_number_written_in_as_packing_it_again_would():
    """The call log packs a record once (for its size) and hands the bytes to the store, which writes the sequence
    number into them: the bytes equal packing the record with its number, for any size of map and number."""
    from mcpgw.cassette.codec import pack, unpack
    from mcpgw.cassette.store import Packed, with_seq

    small = {"seq": None, "tool": "echo", "arguments": {"message": "hé"}}
    large = {"seq": None, **{f"field{i}": i for i in range(30)}}  # a map of more than 15 keys: another header
    later = {"tool": "echo", "seq": None}  # "seq" not first: packed again, with the same outcome
    for record in (small, large, later):
        for seq in (1, 127, 128, 65_536, 2**40):
            assert with_seq(Packed(record, pack(record)), seq) == pack({**record, "seq": seq})
            assert unpack(with_seq(Packed(record, pack(record)), seq))["seq"] == seq
            assert with_seq(record, seq) == pack({**record, "seq": seq})


def test_records_appended_packed_are_read_back_numbered(tmp_path):
    from mcpgw.recorder.calllog import CallLog, iter_calls

    store = CassetteStore(tmp_path / "c")
    log = CallLog(store)
    for n in range(3):
        log.append({"seq": None, "tool": "echo", "arguments": {"n": n}})
    store.close()
    assert [(r["seq"], r["arguments"]["n"]) for r in iter_calls(tmp_path / "c")] == [(1, 0), (2, 1), (3, 2)]


def test_the_reused_packer_packs_as_msgpack_packb_after_a_failure_and_on_other_threads():
    """pack() reuses one msgpack packer per thread: what follows a value it could not pack, and what other
    threads pack at the same time, are packed exactly as msgpack.packb packs them."""
    import threading

    import msgpack

    values = [{"seq": None, "a": [1, "é", None, 2.5, True]}, {"b": {"c": b"\x00\x01"}}, list(range(300)), "x" * 70_000]
    assert pack({"big": 2**70, "n": 1}) == msgpack.packb({"big": str(2**70), "n": 1}, use_bin_type=True)
    with pytest.raises(TypeError):
        pack({"x": object()})
    assert [pack(v) for v in values] == [msgpack.packb(v, use_bin_type=True) for v in values]
    wrong = []

    def packing(offset):
        for number in range(3000):
            value = {"n": number + offset, "text": str(number) * (number % 7), "list": [offset] * (number % 5)}
            if pack(value) != msgpack.packb(value, use_bin_type=True):
                wrong.append(value)

    threads = [threading.Thread(target=packing, args=(k * 10_000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_the_reused_packer_does_not_keep_a_large_values_buffer():
    """msgpack never shrinks a packer's buffer: after a value over KEEP_BYTES, this thread's packer is a new one, so
    the memory it holds is not the size of the largest value ever packed (PyMem allocations, seen by tracemalloc)."""
    import tracemalloc

    from mcpgw.gateway.encoding.result_digest import result_digest as _digest

    pack({"warm": 1})
    _digest({"warm": 1})
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        large = {"content": [{"type": "text", "text": "x" * 8_000_000}]}
        assert len(pack(large)) > 8_000_000 and len(_digest(large)) == 24
        del large
        assert tracemalloc.get_traced_memory()[0] - before < 2_000_000
    finally:
        tracemalloc.stop()


def _append_three(path: str) -> None:
    store = CassetteStore(path)
    for i in range(3):
        store.append("calls", {"tag": "B", "i": i})
    store.close()


def test_appends_after_another_process_appended_take_the_numbers_after_its(tmp_path):
    # The store keeps the next sequence number between its own commits; another process's commit in between
    # must make it read the last key again (else its commit would be refused, and retried: a number taken is
    # never overwritten, the next test).
    store = CassetteStore(tmp_path / "c")
    for i in range(2):
        store.append("calls", {"tag": "A", "i": i})
    other = multiprocessing.get_context("spawn").Process(target=_append_three, args=(str(tmp_path / "c"),))
    other.start()
    other.join(60)
    assert other.exitcode == 0
    for i in range(2, 4):
        store.append("calls", {"tag": "A", "i": i})
        assert store.health()["error"] is None  # not a refused number retried: the right one at once
    store.close()
    calls = [v for _, v in CassetteStore(tmp_path / "c", create=False, readonly=True).items("calls")]
    assert [(c["seq"], c["tag"]) for c in calls] == [
        (1, "A"),
        (2, "A"),
        (3, "B"),
        (4, "B"),
        (5, "B"),
        (6, "A"),
        (7, "A"),
    ]


def test_an_append_under_a_number_already_taken_fails_and_is_retried_rather_than_overwriting(tmp_path):
    store = CassetteStore(tmp_path / "c")
    for i in range(3):
        store.append("calls", {"i": i})
    store._next_seq["calls"] = 2  # a stale number, as a wrong guess of what others wrote would be
    store.append("calls", {"i": "x"})
    assert "SequenceTaken" in store.health()["error"]  # refused, held for the next commit
    store.append("calls", {"i": "y"})
    assert store.health()["error"] is None
    store.close()
    calls = [v for _, v in CassetteStore(tmp_path / "c", create=False, readonly=True).items("calls")]
    assert [(c["seq"], c["i"]) for c in calls] == [(1, 0), (2, 1), (3, 2), (4, "x"), (5, "y")]
