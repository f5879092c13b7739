"""How the gateway answers tool calls, as three enums used everywhere a mode is named (CLI choices, settings,
the player, `mcpgw run`): a `StrEnum` member is its CLI spelling, so settings built from parsed arguments and
cassettes that stored the string compare equal to it."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """Where the tools' answers come from."""

    LIVE = "live"  # the servers, nothing recorded but the call log
    RECORD = "record"  # the servers, every exchange written into the cassette
    REPLAY = "replay"  # the cassette, no server started
    HYBRID = "hybrid"  # the cassette, a miss answered live and recorded


class OnMiss(StrEnum):
    """What a replay does with a call the cassette cannot answer."""

    REFUSE = "refuse"  # a miss, saying the nearest recordings
    LIVE = "live"  # ask the live server and record its answer (what --mode hybrid means)
    SIMULATE = "simulate"  # a language model stands in for the server, labelled simulated


class PastEnd(StrEnum):
    """What a replay lane answers once it has used every recorded answer of a request."""

    REPEAT = "repeat"  # the last recorded answer again
    MISS = "miss"  # a miss


def choices(enum: type[StrEnum]) -> tuple[str, ...]:
    """The CLI spellings of an enum, in declaration order (argparse `choices`)."""
    return tuple(member.value for member in enum)
