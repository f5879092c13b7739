"""A simulated tool answer: a language model stands in for a server the recording cannot answer for.

Asked only for a replay miss that nothing recorded (or equivalent) answers, on a
server that may be simulated (declared stateless, or `simulate: allowed`), when
the gateway runs with `--on-miss simulate`. The simulator is any OpenAI-compatible
chat endpoint. It is shown the tool's name, description, input and output
schemas, the call's arguments and the few recorded exchanges of the same tool
nearest to them (arguments and results), and replies with the result: a JSON
object shaped as an MCP `CallToolResult`, or plain text (one text block). A result
that does not validate against the tool's `outputSchema` is asked again once,
with the reason; then the call is refused as a miss. A simulator that hangs,
fails or answers garbage is a miss with that reason, never a 5xx.

What it answered is kept (replay/answer_sources.py writes it into the overlay with
the model and the recorded exchanges it was shown), so it is simulated once.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from jsonschema import validators
from jsonschema.exceptions import SchemaError

from mcpgw.cassette.misses import differences

EXAMPLES = 3  # recorded exchanges shown per simulated call
EXAMPLE_CHARS = 4000  # of one example's result, as shown
ATTEMPTS = 2  # the first answer, and one more when it did not validate
SIMULATOR_SERVER = "@simulator"  # the simulator's own exchanges, in the overlay beside the answers they made

INSTRUCTIONS = (
    "You stand in for a tool that cannot be reached right now. You are given the tool's definition, some calls "
    "the real tool answered earlier (with its real answers), and a new call. Reply with the answer the real tool "
    "would most plausibly give to the new call, in the same style and format as its earlier answers.\n"
    "Reply with the tool's result and nothing else: either a JSON object shaped like an MCP CallToolResult, "
    '{"content": [{"type": "text", "text": "..."}], "isError": false} (add "structuredContent" when the tool has an '
    "output schema; it must match that schema), or the plain text of the answer. No explanations, no apologies, "
    "no remarks about being a simulation."
)


class SimulationFailed(Exception):
    """The simulator gave no usable answer: why, in one sentence."""


@dataclass
class Simulated:
    result: dict[str, Any]
    shown: list[str]  # cassette keys of the recorded exchanges shown as examples
    attempts: int
    exchanges: list[dict[str, Any]] = field(default_factory=list)  # the simulator's own requests and answers


@dataclass(frozen=True)
class SimulatorConfig:
    base_url: str
    model: str
    key: str | None = None
    timeout: float = 60.0


def examples_for(
    tool: str, arguments: Any, entries: list[dict[str, Any]], limit: int = EXAMPLES
) -> list[dict[str, Any]]:
    """The recorded answers of `tool` whose arguments differ least from `arguments` (recorded order breaks ties);
    each once (the same arguments recorded twice are shown once). Simulated answers are never examples."""
    scored, seen = [], set()
    for order, entry in enumerate(entries):
        params = entry.get("params") or {}
        if entry.get("method") != "tools/call" or params.get("name") != tool or "result" not in entry:
            continue
        if entry.get("source") == "simulated":
            continue
        recorded = params.get("arguments") or {}
        signature = json.dumps(recorded, sort_keys=True, default=str)
        if signature in seen:
            continue
        seen.add(signature)
        scored.append((len(differences(arguments, recorded)), order, entry))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [entry for _, _, entry in scored[:limit]]


def _shown_result(result: dict[str, Any]) -> str:
    text = json.dumps(result, ensure_ascii=False, sort_keys=True, default=str)
    return (
        text
        if len(text) <= EXAMPLE_CHARS
        else text[:EXAMPLE_CHARS] + f"... [{len(text) - EXAMPLE_CHARS} more characters]"
    )


def prompt(server: str, tool: dict[str, Any], arguments: Any, examples: list[dict[str, Any]]) -> list[dict[str, str]]:
    definition = {
        "server": server,
        "name": tool.get("name"),
        "description": tool.get("description"),
        "inputSchema": tool.get("inputSchema"),
    }
    if tool.get("outputSchema") is not None:
        definition["outputSchema"] = tool["outputSchema"]
    parts = ["Tool definition:\n" + json.dumps(definition, ensure_ascii=False, sort_keys=True, indent=1)]
    for number, entry in enumerate(examples, 1):
        parts.append(
            f"Earlier call {number} arguments:\n"
            + json.dumps((entry.get("params") or {}).get("arguments") or {}, ensure_ascii=False, sort_keys=True)
            + f"\nEarlier call {number} real result:\n"
            + _shown_result(entry["result"])
        )
    if not examples:
        parts.append("(No earlier call of this tool was recorded.)")
    parts.append("New call arguments:\n" + json.dumps(arguments, ensure_ascii=False, sort_keys=True))
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "\n\n".join(parts)}]


def as_tool_result(reply: str) -> dict[str, Any]:
    """The simulator's reply as a CallToolResult: a JSON object of that shape, else the text as one text block."""
    text = reply.strip()
    if text.startswith("```"):  # a fenced block: its inside
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0].strip()
    if not text:
        raise SimulationFailed("the simulator answered nothing")
    try:
        value = json.loads(text)
    except ValueError:
        return {"content": [{"type": "text", "text": reply.strip()}], "isError": False}
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return {"content": [{"type": "text", "text": reply.strip()}], "isError": False}
    content = value["content"]
    if not all(isinstance(block, dict) and isinstance(block.get("type"), str) for block in content):
        raise SimulationFailed("the simulator's CallToolResult has content blocks without a type")
    result: dict[str, Any] = {"content": content, "isError": bool(value.get("isError", False))}
    if "structuredContent" in value:
        if not isinstance(value["structuredContent"], dict):
            raise SimulationFailed("the simulator's structuredContent is not an object")
        result["structuredContent"] = value["structuredContent"]
    return result


def output_problem(result: dict[str, Any], schema: Any) -> str | None:
    """Why `result` does not meet the tool's outputSchema (MCP: structuredContent is then required), or None."""
    if not isinstance(schema, dict) or result.get("isError"):
        return None
    if "structuredContent" not in result:
        return "the tool declares an outputSchema, and the answer has no structuredContent"
    try:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        error = next(iter(cls(schema).iter_errors(result["structuredContent"])), None)
    except SchemaError as exc:
        return f"the tool's outputSchema is not valid: {exc.message}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"structuredContent does not match the outputSchema at {where}: {error.message}"


class Simulator:
    """Asks an OpenAI-compatible endpoint for a tool's answer; one HTTP client for the gateway's life."""

    def __init__(self, config: SimulatorConfig, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self.model = config.model
        headers = {"Authorization": f"Bearer {config.key}"} if config.key else {}
        self._client = client or httpx.AsyncClient(
            base_url=config.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(config.timeout),
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def answer(
        self, server: str, tool: dict[str, Any], arguments: Any, recorded: list[dict[str, Any]]
    ) -> Simulated:
        examples = examples_for(str(tool.get("name")), arguments, recorded)
        messages = prompt(server, tool, arguments, examples)
        exchanges: list[dict[str, Any]] = []
        problem = ""
        for attempt in range(1, ATTEMPTS + 1):
            reply = await self._ask(messages, exchanges)
            result = as_tool_result(reply)
            problem = output_problem(result, tool.get("outputSchema")) or ""
            if not problem:
                return Simulated(result, [str(e.get("key")) for e in examples], attempt, exchanges)
            messages = [
                *messages,
                {"role": "assistant", "content": reply},
                {
                    "role": "user",
                    "content": f"That answer is not usable: {problem}. Reply again, with the result only.",
                },
            ]
        raise SimulationFailed(f"the simulated answer did not validate twice ({problem})")

    async def _ask(self, messages: list[dict[str, str]], exchanges: list[dict[str, Any]]) -> str:
        body = {"model": self.model, "messages": messages, "temperature": 0}
        started = time.perf_counter()
        exchange: dict[str, Any] = {"request": body}
        exchanges.append(exchange)
        try:
            with anyio.fail_after(self.config.timeout):  # the whole answer, however slowly it trickles
                response = await self._client.post("chat/completions", json=body)
        except TimeoutError:
            exchange["error"] = "timeout"
            raise SimulationFailed(f"the simulator did not answer within {self.config.timeout:g} s") from None
        except httpx.HTTPError as exc:
            exchange["error"] = f"{type(exc).__name__}: {exc}"
            raise SimulationFailed(f"the simulator could not be reached ({type(exc).__name__})") from None
        finally:
            exchange["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
        exchange["status"] = response.status_code
        try:
            answer = response.json()
        except ValueError:
            exchange["text"] = response.text[:2000]
            raise SimulationFailed(f"the simulator answered HTTP {response.status_code} without JSON") from None
        exchange["response"] = answer
        if response.status_code != 200:
            raise SimulationFailed(f"the simulator answered HTTP {response.status_code}")
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise SimulationFailed("the simulator's answer has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise SimulationFailed("the simulator's message content is not text")
        return content
