"""Prompt templates: ours by default, a user's exact original from a file when given.

A template is plain text with `{placeholder}` fields. Only the placeholders a
judge knows are replaced; every other brace is left alone, because original
prompts are full of literal JSON examples that `str.format` would choke on.
A prompt file that uses none of the known placeholders is refused: it could
not possibly carry the case being judged.

A file may start with a system part, separated from the user part by a line
holding only `---user---`; without it the whole file is the user message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mcpgw.evaluator.errors import JudgeConfigError

_FIELD = re.compile(r"\{([a-z_]+)\}")
SPLIT_MARK = "---user---"


@dataclass(frozen=True)
class Template:
    system: str | None
    user: str
    origin: str  # "builtin" or the file path

    def render(self, values: Mapping[str, str]) -> list[dict[str, str]]:
        def fill(text: str) -> str:
            return _FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)

        messages = []
        if self.system:
            messages.append({"role": "system", "content": fill(self.system)})
        messages.append({"role": "user", "content": fill(self.user)})
        return messages

    def fields(self) -> set[str]:
        return set(_FIELD.findall(self.user)) | set(_FIELD.findall(self.system or ""))


def load_template(path: str | Path, known: set[str]) -> Template:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise JudgeConfigError(f"cannot read judge prompt file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise JudgeConfigError(f"judge prompt file {path} is not UTF-8 text") from None
    system, user = None, text
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == SPLIT_MARK:
            system, user = "".join(lines[:index]).strip() or None, "".join(lines[index + 1 :])
            break
    template = Template(system, user, str(path))
    if not template.fields() & known:
        names = ", ".join("{" + k + "}" for k in sorted(known))
        raise JudgeConfigError(f"judge prompt file {path} uses none of the placeholders this judge fills: {names}")
    return template
