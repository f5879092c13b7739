"""Every secret this process knows, gathered once at start so that one masking covers every record it writes.

A replay builds its servers from the cassette, whose entries hold literal env values masked; the values are
known only from the user's `--config` (and the environment), so both are asked. The model's and the
simulator's keys and the gateway's own bearer token are secrets too: a client, a server or a simulator that
echoes one must not put it into a cassette, a call log, a span or a log line."""

from __future__ import annotations

import os
from collections.abc import Iterable

from mcpgw.cassette.redaction import MASK
from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.specs.settings import Settings


def known_secrets(settings: Settings, *spec_lists: Iterable[ServerSpec]) -> list[str]:
    """The declared values of every server in `spec_lists` (the ones served and the ones the user's config
    gives), the model's and the simulator's API keys, and the gateway's `--auth-token`; each once."""
    values = [value for specs in spec_lists for spec in specs for value in spec.secret_values()]
    for variable in (settings.model.key_env, settings.simulator.key_env):
        if variable:
            values.append(os.environ.get(variable, ""))
    values.append(settings.auth_token or "")
    # MASK: what a cassette's server entry says in place of a literal value; masking it would change nothing
    return [value for value in dict.fromkeys(values) if value and MASK not in value]
