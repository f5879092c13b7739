"""The agent's model client: the `openai` client pointed at the gateway's `/v1`,
tagged with the task's run id, with token and call accounting per task.

Retries: a 5xx or a broken connection is retried (bounded, `retries`), since
the recorded run retried it too and replay answers the same sequence. A
replay miss (HTTP 409, `replay_miss`) is never retried: it is the task's end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class ModelMiss(Exception):
    """The gateway has no recording of this model request (replay)."""


class ModelFailed(Exception):
    """The model endpoint refused the request or kept failing."""


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # as the model wrote it: JSON text, possibly malformed


@dataclass
class Reply:
    content: str
    tool_calls: list[ToolCall]
    finish_reason: str | None

    def as_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    retries: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt": self.prompt_tokens,
            "completion": self.completion_tokens,
            "total": self.prompt_tokens + self.completion_tokens,
        }


@dataclass
class ChatModel:
    """One task's view of the model: same client, its own run id and accounting."""

    client: Any  # openai.AsyncOpenAI, shared by all tasks
    model: str
    run_id: str
    temperature: float | None = None
    seed: int | None = None
    stream: bool = False
    retries: int = 2
    usage: Usage = field(default_factory=Usage)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> Reply:
        import openai

        params: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            params["tools"] = tools
        if stop:
            params["stop"] = stop
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.seed is not None:
            params["seed"] = self.seed
        if self.stream:
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        headers = {"X-Run-Id": self.run_id}
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            self.usage.calls += 1
            if attempt:
                self.usage.retries += 1
            try:
                if self.stream:
                    return await self._streamed(params, headers)
                response = await self._post(params, headers, stream=False)
                self._count(getattr(response, "usage", None))
                return _reply_of(response)
            except openai.APIStatusError as exc:
                if exc.status_code == 409 and _error_type(exc) == "replay_miss":
                    raise ModelMiss(_error_message(exc)) from None
                if exc.status_code >= 500 or exc.status_code == 429:
                    last = exc
                    continue
                raise ModelFailed(f"model refused the request: HTTP {exc.status_code}: {_error_message(exc)}") from None
            except openai.APIConnectionError as exc:
                last = exc
                continue
        raise ModelFailed(f"model kept failing ({self.retries + 1} attempts): {_error_message(last)}")

    async def _streamed(self, params: dict[str, Any], headers: dict[str, str]) -> Reply:
        """Assemble a streamed answer: content pieces joined, tool-call pieces joined per index."""
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        stream = await self._post(params, headers, stream=True)
        async for chunk in stream:
            self._count(getattr(chunk, "usage", None))
            for choice in chunk.choices or ():
                delta = choice.delta
                if delta is not None and delta.content:
                    content.append(delta.content)
                for piece in (delta.tool_calls if delta is not None else None) or ():
                    slot = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": []})
                    slot["id"] = piece.id or slot["id"]
                    if piece.function is not None:
                        slot["name"] += piece.function.name or ""
                        slot["arguments"].append(piece.function.arguments or "")
                finish = choice.finish_reason or finish
        tool_calls = [
            ToolCall(c["id"] or f"call_{i}", c["name"], "".join(c["arguments"])) for i, c in sorted(calls.items())
        ]
        return Reply("".join(content), tool_calls, finish)

    async def _post(self, params: dict[str, Any], headers: dict[str, str], *, stream: bool) -> Any:
        """`chat.completions.create` without its client-side rewriting of the request, which walks
        every message and tool schema through the typed-dict machinery (tens of ms per call on long
        conversations); the body is plain JSON already. Answers are parsed into the same types."""
        from openai import AsyncStream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        return await self.client.post(
            "/chat/completions",
            body=params,
            cast_to=ChatCompletion,
            options={"headers": headers},
            stream=stream,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )

    def _count(self, usage: Any) -> None:
        if usage is not None:
            self.usage.prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
            self.usage.completion_tokens += getattr(usage, "completion_tokens", 0) or 0


def _reply_of(response: Any) -> Reply:
    choices = getattr(response, "choices", None) or []
    if not choices:
        return Reply("", [], None)
    message = choices[0].message
    calls = [
        ToolCall(c.id, c.function.name, c.function.arguments or "")
        for c in (message.tool_calls or ())
        if getattr(c, "function", None) is not None
    ]
    return Reply(message.content or "", calls, choices[0].finish_reason)


def _error_body(exc: Any) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        return body.get("error", body) if isinstance(body.get("error", body), dict) else {}
    return {}


def _error_type(exc: Any) -> str | None:
    return _error_body(exc).get("type")


def _error_message(exc: Any) -> str:
    message = _error_body(exc).get("message")
    return str(message) if message else str(exc)


def parse_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments as an object, or the reason they are not one."""
    if not text or not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, None
