"""What a model endpoint answered, in the shape a cassette stores and replays.

A plain answer is its HTTP status and JSON body (errors included: a 500 is an
answer too, replayed as a 500). A streamed answer is the list of SSE `data:`
payloads, kept as the exact text sent, so replay emits the same chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DONE = "[DONE]"


@dataclass
class ModelAnswer:
    status: int
    body: Any = None  # JSON body of a plain answer
    events: list[str] | None = None  # SSE data payloads of a streamed answer, [DONE] excluded
    content_type: str = "application/json"
    raw: bytes | None = field(default=None, repr=False)  # a live plain answer's bytes, sent on unchanged; never stored

    @property
    def streamed(self) -> bool:
        return self.events is not None

    def as_entry(self) -> dict[str, Any]:
        if self.events is not None:
            return {"status": self.status, "events": list(self.events)}
        return {"status": self.status, "body": self.body, "content_type": self.content_type}

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> ModelAnswer:
        if "events" in entry:
            return cls(entry["status"], events=list(entry["events"]), content_type="text/event-stream")
        return cls(
            entry["status"], body=entry.get("body"), content_type=entry.get("content_type") or "application/json"
        )


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """An error in the shape OpenAI-compatible clients parse (`openai` shows `message`)."""
    return {"error": {"message": message, "type": kind, "code": code or kind, "param": None}}
