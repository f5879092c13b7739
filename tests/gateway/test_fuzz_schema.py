"""Issue 25: a schema-aware fuzzer over real tool schemas (npx server-everything) through `--validate`.

hypothesis-jsonschema draws arguments from each tool's own inputSchema; about half are then broken
(a property of the wrong type, a required one dropped, an unknown one where none are allowed), and
jsonschema itself says which are valid. Through `--validate enforce`: 0 5xx, 0 valid arguments
rejected, 0 invalid ones forwarded; through `audit`: every call forwarded. In both: every call in the
call log. Seeded (derandomized); MCPGW_FUZZ_EXAMPLES sets the count (default 60).
"""

from __future__ import annotations

import itertools
import json
import os
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from mcpgw.recorder.calllog import iter_calls
from tests.gateway.test_hardening import CONFIG
from tests.gateway.test_http_edges import answers, open_session, tool_call

EXAMPLES = int(os.environ.get("MCPGW_FUZZ_EXAMPLES", "60"))
TOOLS = (
    "everything__echo",
    "everything__get-sum",
    "everything__get-annotated-message",
    "everything__get-resource-links",
    "everything__get-structured-content",
)
WRONG = [None, True, "text", 12, 1.5, [], {}, "\U0001f600" * 3]


def break_arguments(rng: st.DataObject, schema: dict, arguments: dict) -> dict:
    broken = dict(arguments)
    properties = list(schema.get("properties") or {})
    how = rng.draw(st.sampled_from(["type", "drop", "extra"]))
    if how == "type" and properties:
        broken[rng.draw(st.sampled_from(properties))] = rng.draw(st.sampled_from(WRONG))
    elif how == "drop" and schema.get("required"):
        broken.pop(rng.draw(st.sampled_from(schema["required"])), None)
    else:
        broken["not_in_the_schema"] = 1
    return broken


@pytest.mark.parametrize("mode", ["enforce", "audit"])
def test_schema_fuzzed_calls_are_validated_as_jsonschema_says_and_all_logged(gateway_factory, mode):
    gateway = gateway_factory(CONFIG, "--validate", mode)
    client = httpx.Client(timeout=60)
    headers = open_session(client, gateway.url)
    (listed,) = answers(
        client.post(gateway.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
    )
    schemas = {t["name"]: t["inputSchema"] for t in listed["result"]["tools"] if t["name"] in TOOLS}
    assert len(schemas) >= 2, sorted(schemas)
    ids = itertools.count(100)
    tally = {"calls": 0, "valid": 0, "invalid": 0, "5xx": 0, "valid_rejected": 0, "invalid_forwarded": 0}
    sent: dict[int, bool] = {}  # request id -> valid per jsonschema

    @settings(
        max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(st.data())
    def one_call(data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(schemas)))
        schema = schemas[name]
        arguments = data.draw(from_schema(schema))
        if data.draw(st.booleans()):
            arguments = break_arguments(data, schema, arguments)
        valid = Draft202012Validator(schema).is_valid(arguments)
        rid = next(ids)
        response = client.post(gateway.url, json=tool_call(rid, name, arguments), headers=headers)
        tally["calls"] += 1
        tally["valid" if valid else "invalid"] += 1
        sent[rid] = valid
        if response.status_code >= 500:
            tally["5xx"] += 1
            return
        (answer,) = answers(response)
        text = json.dumps(answer.get("result") or answer.get("error"))
        rejected = "was not forwarded" in text
        tally["valid_rejected"] += valid and rejected
        tally["invalid_forwarded"] += mode == "enforce" and not valid and not rejected

    one_call()
    client.close()
    records = _logged(gateway, tally["calls"] + 0)
    by_id = {r.get("request_id"): r for r in records}
    missing = [rid for rid in sent if str(rid) not in {str(k) for k in by_id}] if "request_id" in records[0] else []
    logged = len(records)
    forwarded_invalid = sum(
        1 for r in records if (r.get("validation") or {}).get("valid") is False and r["outcome"] != "rejected"
    )
    print(
        f"schema fuzz ({mode}): {tally}, logged {logged}, missing {len(missing)}, invalid with an upstream answer {forwarded_invalid}"
    )
    assert tally["5xx"] == 0 and tally["valid_rejected"] == 0 and tally["invalid_forwarded"] == 0, tally
    assert logged == tally["calls"] and not missing
    if mode == "enforce":
        assert forwarded_invalid == 0
    else:
        assert all(r["outcome"] != "rejected" for r in records)
    assert tally["invalid"] > 0 and tally["valid"] > 0


def _logged(gateway, count: int) -> list[dict]:
    deadline = time.monotonic() + 30
    records: list[dict] = []
    while time.monotonic() < deadline:
        records = [r for r in iter_calls(gateway.cassettes / "test") if r.get("method", "tools/call") == "tools/call"]
        if len(records) >= count and all(r.get("outcome") is not None for r in records):
            break
        time.sleep(0.1)
    return records
