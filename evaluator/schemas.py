"""Schema compliance exactly as MCP-Bench checks it.

MCP-Bench calls `jsonschema.validate(parameters, input_schema)` inside a
catch-all, after returning True for a falsy schema. So:

- a falsy schema (missing, `{}`, null, `false`, `[]`, "") passes;
- a schema that is neither an object nor `true` (a list, a string, a number)
  fails every call (jsonschema raises, the catch-all turns it into False);
- the draft is the schema's `$schema`, the latest (2020-12) when absent;
- a schema that is itself invalid fails every call (SchemaError is caught);
- no format checking (validate() is not given a format checker);
- any other exception while validating (e.g. a bad regex) is a failure;
- the parameters are validated as they are: `null` stays `null` (so a schema
  with `required` but no `"type"` accepts it: `required` only applies to
  objects). The gateway's inline verdict instead validates `{}` for absent or
  null arguments, as MCP servers read them (evaluator/METRICS.md, "Two verdicts").

Validators are compiled once per schema digest; the digest is the same
canonical-JSON sha256 prefix the gateway uses, so digests in call logs match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from mcpgw.gateway.tools.validation import schema_digest  # one digest for the call log and the evaluator

Check = Callable[[Any], bool]
MEMO_LIMIT = 500_000


def _always(_instance: Any) -> bool:
    return True


def _never(_instance: Any) -> bool:
    return False


def compile_check(schema: Any) -> tuple[Check, str | None]:
    """A predicate instance -> compliant, and the schema's own problem (None when usable)."""
    if not schema:
        return _always, None
    if not isinstance(schema, (Mapping, bool)):
        return _never, f"unusable schema: expected a JSON Schema object, got {type(schema).__name__}"
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema)
    except SchemaError as exc:
        return _never, f"invalid schema: {exc.message}"
    except Exception as exc:  # noqa: BLE001 - MCP-Bench treats any failure here as non-compliance
        return _never, f"unusable schema: {exc}"
    is_valid = validator.is_valid

    def check(instance: Any) -> bool:
        try:
            return is_valid(instance)
        except Exception:  # noqa: BLE001 - e.g. a pattern that is not a valid regex
            return False

    return check, None


class SchemaChecks:
    """digest -> compiled check, built lazily from a digest -> schema mapping."""

    def __init__(self, schemas: Mapping[str, Any] | None = None) -> None:
        self.schemas: dict[str, Any] = dict(schemas or {})
        self._checks: dict[str, Check] = {}
        self.problems: dict[str, str] = {}
        self._memo: dict[tuple[str, str], bool] = {}

    def add_failing(self, key: str, problem: str) -> str:
        """A pseudo-schema every call fails (a catalog entry that is null or not an object)."""
        self.schemas[key] = None
        self._checks[key] = _never
        self.problems[key] = problem
        return key

    def add(self, schema: Any) -> str:
        digest = schema_digest(schema)
        self.schemas[digest] = schema
        return digest

    def __contains__(self, digest: object) -> bool:
        return digest in self.schemas

    def __bool__(self) -> bool:
        return bool(self.schemas)

    def check_for(self, digest: str) -> Check | None:
        check = self._checks.get(digest)
        if check is None:
            if digest not in self.schemas:
                return None
            check, problem = compile_check(self.schemas[digest])
            self._checks[digest] = check
            if problem:
                self.problems[digest] = problem
        return check

    def verdict(self, digest: str, arguments: Any) -> bool | None:
        """Compliance of `arguments` with the schema `digest` names; None when the digest is unknown.
        Verdicts are memoised on the arguments' repr: agents repeat the same calls a lot, and for
        JSON values equal reprs mean equal values."""
        if digest not in self.schemas:
            return None
        key = (digest, repr(arguments))
        known = self._memo.get(key)
        if known is None:
            check = self.check_for(digest)
            assert check is not None
            known = check(arguments)
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()  # bounded memory; a cleared memo only costs re-validation
            self._memo[key] = known
        return known

    def complies(self, schema: Any, arguments: Any) -> bool:
        """Check arguments against a schema given inline (compiled once per digest)."""
        digest = self.add(schema)
        check = self.check_for(digest)
        assert check is not None
        return check(arguments)
