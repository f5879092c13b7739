"""One judge exchange: recorded answer if there is one, else the endpoint, then record it.

Talks to any OpenAI-compatible chat-completions endpoint through the `openai`
client (AsyncOpenAI; the client's own retries are off so that ours are the
only ones and can be counted and bounded). Transient failures (connection
errors, timeouts, 408/409/429, 5xx) are retried `retries` times with a short
exponential backoff; anything else (401, 404, 400...) fails at once, since
repeating it cannot help. All openai exceptions are mapped to JudgeUnavailable
here and nowhere else.

Offline mode never builds a client: a missing recording is a JudgeMiss.
The API key is read from the environment variable named in the config, only
when a live call is actually needed.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

from mcpgw.evaluator.errors import JudgeConfigError, JudgeMiss, JudgeUnavailable
from mcpgw.evaluator.judges.store import JudgeStore, MemoryStore, exchange_key

_TRANSIENT_STATUS = {408, 409, 429}


@dataclass
class JudgeConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0  # seconds per HTTP attempt
    retries: int = 3
    backoff: float = 1.0  # first pause; doubles per retry
    offline: bool = False
    temperature: float = 0.0
    max_tokens: int | None = None
    concurrency: int = 4
    extra_params: dict[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """Everything that changes the answer, so it is part of the exchange key."""
        out: dict[str, Any] = {"temperature": self.temperature, **self.extra_params}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out


@dataclass
class Exchange:
    key: str
    text: str
    recorded: bool  # True when the answer came from the store


class JudgeClient:
    def __init__(self, config: JudgeConfig, store: JudgeStore | None = None) -> None:
        if not config.model:
            raise JudgeConfigError("no judge model given (--judge-model)")
        self.config = config
        self.store = store if store is not None else MemoryStore()
        self._client: Any = None
        self.live_calls = 0
        self.replayed = 0
        self.attempts = 0

    def _openai(self) -> Any:
        if self._client is None:
            key = os.environ.get(self.config.api_key_env)
            if not key:
                raise JudgeConfigError(
                    f"environment variable {self.config.api_key_env} is not set; it must hold the judge "
                    "endpoint's API key (any non-empty value for endpoints that need none)"
                )
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                api_key=key, base_url=self.config.base_url, max_retries=0, timeout=self.config.timeout
            )
        return self._client

    async def complete(
        self, messages: list[dict[str, Any]], *, what: str, salt: dict[str, Any] | None = None
    ) -> Exchange:
        """The judge's text answer. `what` names the exchange in errors; `salt` (e.g. a run
        index) keeps otherwise identical exchanges apart in the store."""
        params = {**self.config.params(), **(salt or {})}
        key = exchange_key(self.config.model, messages, params)
        recorded = self.store.get(key)
        if recorded is not None:
            self.replayed += 1
            return Exchange(key, recorded.get("text") or "", True)
        if self.config.offline:
            raise JudgeMiss(key, what)
        text, usage = await self._call(messages)
        self.live_calls += 1
        self.store.put(
            key,
            {
                "model": self.config.model,
                "params": params,
                "text": text,
                "usage": usage,
                "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
        return Exchange(key, text, False)

    async def _call(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
        import openai

        client = self._openai()
        api_params = {k: v for k, v in self.config.params().items()}
        where = self.config.base_url or "the default OpenAI endpoint"
        last: Exception | None = None
        for attempt in range(self.config.retries + 1):
            if attempt:
                await asyncio.sleep(self.config.backoff * (2 ** (attempt - 1)))
            self.attempts += 1
            try:
                response = await client.chat.completions.create(
                    model=self.config.model, messages=messages, **api_params
                )
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                last = exc
                continue
            except openai.APIStatusError as exc:
                if exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500:
                    last = exc
                    continue
                raise JudgeUnavailable(
                    f"judge endpoint {where} refused the request: HTTP {exc.status_code}: {_brief(exc)}"
                ) from None
            except openai.OpenAIError as exc:  # e.g. a body that is not a chat completion at all
                raise JudgeUnavailable(f"judge endpoint {where} gave an unusable answer: {_brief(exc)}") from None
            return _text_of(response), _usage_of(response)
        tries = self.config.retries + 1
        if isinstance(last, openai.APITimeoutError):
            raise JudgeUnavailable(
                f"judge endpoint {where} did not answer within {self.config.timeout:g}s ({tries} attempts)"
            ) from None
        if isinstance(last, openai.APIConnectionError):
            raise JudgeUnavailable(
                f"cannot reach judge endpoint {where} ({tries} attempts): {_brief(last)}; "
                "is the server running and --judge-base-url right?"
            ) from None
        status = getattr(last, "status_code", "?")
        raise JudgeUnavailable(
            f"judge endpoint {where} kept failing: HTTP {status} after {tries} attempts: {_brief(last)}"
        ) from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _brief(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else ""
    cause = getattr(exc, "__cause__", None)
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text} ({cause})"
    return text if len(text) <= 300 else text[:297] + "..."


def _text_of(response: Any) -> str:
    # A malformed completion (no choices, null content) is an empty answer: the caller's
    # parser reports it as unparseable rather than the whole evaluation failing.
    choices = getattr(response, "choices", None) or []
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    return (getattr(message, "content", None) or "") if message is not None else ""


def _usage_of(response: Any) -> dict[str, Any] | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    try:
        return usage.model_dump()
    except AttributeError:
        return None
