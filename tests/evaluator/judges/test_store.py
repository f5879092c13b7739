import pytest

from mcpgw.evaluator.errors import StoreError
from mcpgw.evaluator.judges.store import JsonlStore, LmdbStore, MemoryStore, exchange_key, open_store

VALUE = {"text": "PASS", "usage": {"total_tokens": 3}, "params": {"temperature": 0.0}}


def test_key_depends_on_model_messages_and_params():
    messages = [{"role": "user", "content": "x"}]
    key = exchange_key("m", messages, {"temperature": 0.0})
    assert key == exchange_key("m", [{"content": "x", "role": "user"}], {"temperature": 0.0})  # canonical
    assert key != exchange_key("m2", messages, {"temperature": 0.0})
    assert key != exchange_key("m", [{"role": "user", "content": "y"}], {"temperature": 0.0})
    assert key != exchange_key("m", messages, {"temperature": 0.0, "run": 1})


@pytest.mark.parametrize("kind", ["lmdb", "jsonl", "memory"])
def test_round_trip_and_persistence(tmp_path, kind):
    path = {"lmdb": tmp_path / "env", "jsonl": tmp_path / "j.jsonl", "memory": None}[kind]
    store = open_store(path)
    assert store.get("k") is None
    store.put("k", VALUE)
    store.put("k2", {"text": "second"})
    assert store.get("k") == VALUE
    store.close()
    if kind == "memory":
        return
    reopened = open_store(path, readonly=True)
    assert reopened.get("k") == VALUE and reopened.get("k2") == {"text": "second"}
    reopened.close()


def test_lmdb_is_one_environment_directory(tmp_path):
    store = LmdbStore(tmp_path / "env")
    store.put("a", VALUE)
    assert len(store) == 1 and (tmp_path / "env" / "data.mdb").exists()
    store.close()


def test_bad_stores_are_clear_errors(tmp_path):
    with pytest.raises(StoreError, match="no judge recordings"):
        LmdbStore(tmp_path / "absent", readonly=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"key": "a", "value": {}}\nnot json\n')
    with pytest.raises(StoreError, match="broken.jsonl:2"):
        JsonlStore(broken)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError):
        LmdbStore(blocker / "env")
    assert isinstance(open_store(None), MemoryStore)
