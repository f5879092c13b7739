"""Cassette parts of a fanned-out run merge into one cassette whose contents do not depend on
which node recorded what: the same records in the same order whichever part holds a lane, each
lane in its recorded order, and replay logs kept beside an existing cassette survive the merge."""

from __future__ import annotations

from mcpgw.cassette.cassette import Cassette
from mcpgw.runs.cassette_parts import merge_parts, parts_dir


def exchange(lane: str, key: str, n: int) -> dict:
    return {"key": key, "server": "s", "method": "tools/call", "lane": lane, "params": {"n": n}, "result": {"n": n}}


def write_part(path, exchanges: list[dict], servers: dict) -> None:
    cassette = Cassette(path)
    try:
        for entry in exchanges:
            cassette.store.append("exchanges", entry)
            if entry["lane"]:
                cassette.store.append(
                    "calls", {"run_id": entry["lane"], "tool": entry["key"], "n": entry["params"]["n"]}
                )
        cassette.write_info(servers)
    finally:
        cassette.close()


def merged(target) -> tuple[list, list, list]:
    cassette = Cassette(target, create=False, readonly=True)
    try:
        strip = lambda d: {k: v for k, v in d.items() if k != "seq"}  # noqa: E731
        return (
            [strip(v) for _, v in cassette.store.items("exchanges")],
            [strip(v) for _, v in cassette.store.items("calls")],
            list(cassette.info()["servers"]),
        )
    finally:
        cassette.close()


def test_the_merge_is_the_same_whichever_node_ran_what(tmp_path):
    a = [exchange("", "init", 0), exchange("t1", "x", 1), exchange("t1", "y", 2), exchange("t1", "x", 3)]
    b = [exchange("", "init", 0), exchange("t2", "x", 4), exchange("t3", "z", 5)]
    servers = {"zeta": {"title": "Z"}, "alpha": {"title": "A"}}  # the order given, not sorted
    results = []
    for name, (first, second) in (("one", (a, b)), ("two", (b, a))):
        target = tmp_path / name / "rec"
        write_part(parts_dir(target) / "p-n0", first, servers)
        write_part(parts_dir(target) / "p-n1", second, servers)
        assert merge_parts(target) == 2
        assert not parts_dir(target).exists()
        results.append(merged(target))
    assert results[0] == results[1]
    exchanges, calls, names = results[0]
    t1 = [e["params"]["n"] for e in exchanges if e["lane"] == "t1"]
    assert t1 == [1, 2, 3]  # a lane keeps its recorded order
    assert [c["n"] for c in calls if c["run_id"] == "t1"] == [1, 2, 3]
    assert names == ["zeta", "alpha"]  # replay lists tools in this order


def test_a_merge_into_an_existing_cassette_keeps_it_and_its_replay_logs(tmp_path):
    target = tmp_path / "rec"
    write_part(target, [exchange("t0", "x", 9)], {"s": {}})
    (target / "runs").mkdir()
    (target / "runs" / "log.txt").write_text("a replay log")
    write_part(parts_dir(target) / "p-n0", [exchange("t1", "x", 1)], {"s": {}})
    merge_parts(target)
    exchanges, _, _ = merged(target)
    assert [e["lane"] for e in exchanges] == ["t0", "t1"]
    assert (target / "runs" / "log.txt").read_text() == "a replay log"
    assert merge_parts(target) == 0  # nothing left to merge
