"""A simulated tool answer: a language model stands in for a server the recording cannot answer for.

Asked only for a replay miss that nothing recorded (or equivalent) answers, on a
server that may be simulated (declared stateless, or `simulate: allowed`), when
the gateway runs with `--on-miss simulate`. The simulator is any OpenAI-compatible
chat endpoint. It is shown the tool's name, description, input and output
schemas, the call's arguments and the few recorded exchanges of the same tool
nearest to them (arguments and results), and replies with the result: a JSON
object shaped as an MCP `CallToolResult`, or plain text (one text block). A result
whose structuredContent is not an object or does not validate against the tool's
`outputSchema` is asked again once, with the reason; then the call is refused as a
miss. A simulator that hangs, fails or answers garbage is a miss with that reason,
never a 5xx. Bounded: the whole answer, retry included, within the simulator
timeout; each HTTP answer within the gateway's response limit (read no further);
its JSON at most json_messages.MAX_DEPTH deep; the result a valid `CallToolResult`
(replay.simulated_result) before anything of it is stored.

What it answered is kept (replay/answer_sources.py writes it into the overlay with
the model and the recorded exchanges it was shown), so it is simulated once; the
simulator's own exchange is kept beside it without the answer's text (stored once).
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
from mcpgw.gateway.encoding.json_messages import parse_json
from mcpgw.replay.simulated_result import SimulationFailed as SimulationFailed  # (raised here, caught by callers)
from mcpgw.replay.simulated_result import as_tool_result as as_tool_result

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
    timeout: float = 60.0  # the whole simulated answer, its retry included
    max_bytes: int = 16 * 1024 * 1024  # of one simulator answer (the gateway's --max-response-bytes)


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


def output_problem(result: dict[str, Any], schema: Any) -> str | None:
    """Why `result` does not meet the tool's outputSchema (MCP: structuredContent is then required), or None."""
    if "structuredContent" in result and not isinstance(result["structuredContent"], dict):
        return "structuredContent must be a JSON object"
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
        deadline = anyio.current_time() + self.config.timeout  # one bound for the answer, its retry included
        for attempt in range(1, ATTEMPTS + 1):
            reply = await self._ask(messages, exchanges, deadline)
            result = as_tool_result(reply)
            problem = output_problem(result, tool.get("outputSchema")) or ""
            if not problem:
                _kept_once(exchanges[-1])
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

    async def _ask(self, messages: list[dict[str, str]], exchanges: list[dict[str, Any]], deadline: float) -> str:
        body = {"model": self.model, "messages": messages, "temperature": 0}
        started = time.perf_counter()
        exchange: dict[str, Any] = {"request": body}
        exchanges.append(exchange)
        try:
            with anyio.fail_after(max(0.0, deadline - anyio.current_time())):  # however slowly it trickles
                status, raw = await self._post(body)
        except TimeoutError:
            exchange["error"] = "timeout"
            raise SimulationFailed(f"the simulator did not answer within {self.config.timeout:g} s") from None
        except httpx.HTTPError as exc:
            exchange["error"] = f"{type(exc).__name__}: {exc}"
            raise SimulationFailed(f"the simulator could not be reached ({type(exc).__name__})") from None
        finally:
            exchange["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
        exchange["status"] = status
        if raw is None:
            exchange["error"] = "too large"
            raise SimulationFailed(
                f"the simulator's answer is larger than the gateway's limit of {self.config.max_bytes} "
                "bytes (mcpgw serve --max-response-bytes N raises it)"
            )
        answer, problem = parse_json(raw)  # strict JSON, nested at most json_messages.MAX_DEPTH deep
        if problem is not None:
            exchange["text"] = raw[:2000].decode("utf-8", "replace")
            raise SimulationFailed(f"the simulator answered HTTP {status} without usable JSON ({problem})")
        exchange["response"] = answer
        if status != 200:
            raise SimulationFailed(f"the simulator answered HTTP {status}")
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise SimulationFailed("the simulator's answer has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise SimulationFailed("the simulator's message content is not text")
        return content

    async def _post(self, body: dict[str, Any]) -> tuple[int, bytes | None]:
        """The status and body of the simulator's answer; None for a body over the limit (read no further)."""
        limit = self.config.max_bytes
        async with self._client.stream("POST", "chat/completions", json=body) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                return response.status_code, None
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    return response.status_code, None
                chunks.append(chunk)
        return response.status_code, b"".join(chunks)


KEPT_ONCE = "(kept once: the simulated answer this exchange made)"


def _kept_once(exchange: dict[str, Any]) -> None:
    """The exchange that made the answer, for the record, without the answer's text: that is stored once, as the
    answer itself (replay.answer_sources)."""
    try:
        exchange["response"]["choices"][0]["message"]["content"] = KEPT_ONCE
    except (KeyError, IndexError, TypeError):  # (it had that shape: the answer was read from there)
        pass
