"""The call log masks a record's secrets, walking it only when its packed bytes show one (issue 50 item 9):
a secret in a value, in a key, as a URL's password alone (decoded too), and anything a --redact pattern
matches; a record without one is stored as it came."""

from __future__ import annotations

from mcpgw.cassette.codec import pack
from mcpgw.cassette.redaction import MASK, Redactor
from mcpgw.cassette.store import CassetteStore
from mcpgw.recorder.calllog import CallLog, iter_calls

KEY = "sk-canary-Tq52xVb7"
URL = "postgres://app:p%40ss-word9@db/app"


def logged(tmp_path, redact: Redactor, records: list[dict]) -> list[dict]:
    store = CassetteStore(tmp_path / "c")
    log = CallLog(store, redact)
    for record in records:
        log.append(record)
    store.close()
    return [{k: v for k, v in r.items() if k != "seq"} for r in iter_calls(tmp_path / "c")]


def test_a_record_is_masked_where_a_secret_is_and_kept_as_it_came_elsewhere(tmp_path):
    redact = Redactor([KEY, URL])
    plain = {"tool": "echo", "arguments": {"message": "hello"}, "result": "echo: hello"}
    leaky = {"tool": "echo", "arguments": {"message": [f"k={KEY}"], KEY: 1}, "result": "pw p@ss-word9", "error": URL}
    assert not redact.may_be_in(pack(plain)) and redact.may_be_in(pack(leaky))
    stored = logged(tmp_path, redact, [plain, leaky])
    assert stored[0] == plain
    assert stored[1] == {
        "tool": "echo",
        "arguments": {"message": [f"k={MASK}"], MASK: 1},
        "result": f"pw {MASK}",
        "error": MASK,
    }


def test_a_redact_pattern_is_always_looked_for(tmp_path):
    redact = Redactor([], [r"tok_[0-9]+"])
    assert redact.may_be_in(b"anything")
    assert logged(tmp_path, redact, [{"arguments": {"t": "tok_123"}}]) == [{"arguments": {"t": MASK}}]
    assert not Redactor([]).may_be_in(b"anything")
