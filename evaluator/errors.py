"""The evaluator's error tree, in one place.

Every failure a person can act on is one of these; the CLI prints `.message`
and exits with status 2, never a traceback. Foreign exceptions (json, OS,
lmdb, openai) are mapped to them where they are caught.

    EvaluatorError
    ├── InputError          a bad input file or record: names file, line and field
    ├── SourceUnavailable   a call-log source that cannot be used (recorder missing, bad cassette)
    ├── StoreError          the judge recording store cannot be opened, read or written
    └── JudgeError          anything about an LLM judge
        ├── JudgeConfigError   no model, no key, an unreadable or unusable prompt file
        ├── JudgeUnavailable   endpoint unreachable, refusing, or failing after the retries
        └── JudgeMiss          offline re-scoring found no recording for an exchange
"""

from __future__ import annotations


class EvaluatorError(Exception):
    """Base of every error the evaluator reports to a person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(EvaluatorError):
    """A problem in an input file. `line` and `field` are None when they do not apply."""

    def __init__(self, source: str, line: int | None, field: str | None, problem: str) -> None:
        where = f"{source}:{line}" if line else str(source)
        what = f" field {field!r}:" if field else ""
        super().__init__(f"{where}:{what} {problem}")
        self.source, self.line, self.field, self.problem = str(source), line, field, problem


class SourceUnavailable(EvaluatorError):
    pass


class StoreError(EvaluatorError):
    pass


class JudgeError(EvaluatorError):
    pass


class JudgeConfigError(JudgeError):
    pass


class JudgeUnavailable(JudgeError):
    pass


class JudgeMiss(JudgeError):
    """Offline mode and no recording: says which exchange and how to get one."""

    def __init__(self, key: str, what: str) -> None:
        super().__init__(
            f"offline: no recorded judge answer for {what} (exchange key {key[:16]}); "
            "run once without --offline against a judge endpoint to record it"
        )
        self.key, self.what = key, what
