"""A simulator's reply made into an MCP `CallToolResult`, or refused, before anything of it is stored.

The reply is the model's text: plain text (one text block), or a JSON object shaped as
a `CallToolResult`, perhaps in a ``` fence. The JSON is parsed as the gateway parses a
request (strict, at most MAX_DEPTH deep), and each content block is checked against
the MCP SDK's model for its type, strictly: a `text` that is an object, an image whose
`data` is a number, or `"isError": "false"` are refused, never coerced or passed on
(a result a client cannot read would be stored into the overlay and fail on every
replay of it). Keys of the gateway's own namespace (`mcpgw/` in any `_meta`) are
dropped: a simulated answer cannot claim to be `recorded`. Whether `structuredContent`
is an object, and matches the tool's outputSchema, is the simulator's check
(replay.simulator.output_problem): that gets the one retry.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from pydantic import BaseModel, ValidationError

from mcpgw.gateway.encoding.json_messages import MAX_DEPTH, parse_json

GATEWAY_PREFIX = "mcpgw/"  # _meta keys the gateway writes itself (replay.answer_sources.META_KEY)
BLOCKS: dict[str, type[BaseModel]] = {
    "text": types.TextContent,
    "image": types.ImageContent,
    "audio": types.AudioContent,
    "resource_link": types.ResourceLink,
    "resource": types.EmbeddedResource,
}
TOO_DEEP = "JSON nested deeper than"  # json_messages.parse_json's words for it


class SimulationFailed(Exception):
    """The simulator gave no usable answer: why, in one sentence."""


def unfenced(reply: str) -> str:
    """The reply without a ``` fence around it (a fenced block: its inside)."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0].strip()
    return text


def as_tool_result(reply: str) -> dict[str, Any]:
    """The simulator's reply as a CallToolResult: a JSON object of that shape (checked), else the text as one
    text block. SimulationFailed when it is neither."""
    text = unfenced(reply)
    if not text:
        raise SimulationFailed("the simulator answered nothing")
    value, problem = parse_json(text.encode("utf-8", "surrogatepass"))
    if problem is not None and problem.startswith(TOO_DEEP):  # not text a tool would give, and past what we store
        raise SimulationFailed(f"the simulator's answer is JSON nested deeper than {MAX_DEPTH} levels")
    if problem is not None or not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return {"content": [{"type": "text", "text": reply.strip()}], "isError": False}
    is_error = value.get("isError")
    if is_error is not None and not isinstance(is_error, bool):
        raise SimulationFailed(f'the simulator\'s "isError" is {_kind(is_error)}, not true or false')
    result: dict[str, Any] = {
        "content": [_checked_block(number, block) for number, block in enumerate(value["content"])],
        "isError": bool(is_error),
    }
    if "structuredContent" in value:  # an object, matching the outputSchema: checked with the one retry
        result["structuredContent"] = value["structuredContent"]
    return result


def _checked_block(number: int, block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise SimulationFailed(f"the simulator's content block {number} is {_kind(block)}, not an object")
    kind = block.get("type")
    if kind is None:
        raise SimulationFailed(f"the simulator's CallToolResult has content blocks without a type (block {number})")
    model = BLOCKS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise SimulationFailed(
            f"the simulator's content block {number} has type {str(kind)[:40]!r}, not one of " + ", ".join(BLOCKS)
        )
    checked = _without_gateway_keys_in(block)
    try:
        model.model_validate(checked, strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(block)"
        raise SimulationFailed(
            f"the simulator's content block {number} ({kind}) is not a valid MCP block: {where}: {error['msg']}"
        ) from None
    return checked


def _without_gateway_keys(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_gateway_keys(item) for item in value]
    return _without_gateway_keys_in(value) if isinstance(value, dict) else value


def _without_gateway_keys_in(value: dict[str, Any]) -> dict[str, Any]:
    """`value` with every `_meta` entry under the gateway's prefix dropped, at any depth (a `_meta` left empty
    goes too). The depth is bounded: the reply was parsed at most MAX_DEPTH deep."""
    out = {}
    for key, item in value.items():
        if key == "_meta" and isinstance(item, dict):
            item = {k: v for k, v in item.items() if not (isinstance(k, str) and k.startswith(GATEWAY_PREFIX))}
            if not item:
                continue
        out[key] = _without_gateway_keys(item)
    return out


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
