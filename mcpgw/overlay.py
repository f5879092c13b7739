"""The overlay: what a replay adds to a recording, kept apart from it (--overlay NAME).

A replay evaluating another model on a recording (model B on model A's tools)
adds answers the recording lacks: live ones (--on-miss live), simulated ones
(--on-miss simulate), and model B's own exchanges (--model-mode live). They go
into the overlay, a cassette of its own in the cassettes folder, layered over
the base, which is opened read-only and never written. Played again (base +
overlay, the simulator and model B stopped), the overlay answers what it
answered: a simulated answer is simulated once.

The model's side of an overlay is the evaluated model's own: with an overlay,
the model's exchanges are replayed (or recorded) from the overlay alone, never
from the base (which holds model A's, and a first prompt both models share
would otherwise get model A's answer).
"""

from __future__ import annotations

import os
from typing import Any

from mcpgw.cassette.cassette import Cassette, Recorded, open_named
from mcpgw.cassette.paths import cassette_path
from mcpgw.cassette.redaction import Redactor
from mcpgw.gateway.errors.tree import CassetteError, GatewayError
from mcpgw.gateway.specs.settings import Settings
from mcpgw.llm.passthrough import MODEL_SERVER
from mcpgw.replay.answer_sources import Simulation, mark_overlay
from mcpgw.replay.simulator import SIMULATOR_SERVER, Simulator, SimulatorConfig

ON_MISS = ("refuse", "live", "simulate")
MODEL_MODES = ("replay", "hybrid", "live")


def check_answer_settings(settings: Settings) -> None:
    """Contradictions and missing pieces, said before anything starts."""
    if settings.on_miss not in ON_MISS:
        raise GatewayError(f"--on-miss {settings.on_miss!r}: expected one of {', '.join(ON_MISS)}")
    if settings.model_mode is not None and settings.model_mode not in MODEL_MODES:
        raise GatewayError(f"--model-mode {settings.model_mode!r}: expected one of {', '.join(MODEL_MODES)}")
    replaying = settings.mode in ("replay", "hybrid")
    if (settings.overlay or settings.on_miss != "refuse" or settings.model_mode) and not replaying:
        raise GatewayError(
            "--overlay, --on-miss and --model-mode shape a replay: use them with --mode replay (or hybrid)"
        )
    if settings.mode == "hybrid" and settings.on_miss == "simulate":
        raise GatewayError("--mode hybrid takes misses live; --on-miss simulate simulates them: choose one")
    if settings.on_miss == "simulate":
        if not settings.overlay:
            raise GatewayError(
                "--on-miss simulate needs --overlay NAME: simulated answers are kept there, so the next "
                "replay gives the same answers without the simulator"
            )
        if not settings.simulator.base_url or not settings.simulator.model:
            raise GatewayError(
                "--on-miss simulate needs --simulator-base-url URL and --simulator-model NAME "
                "(any OpenAI-compatible chat endpoint; --simulator-key-env VAR for its key)"
            )
    if settings.model_mode in ("live", "hybrid") and not settings.model.base_url:
        raise GatewayError(f"--model-mode {settings.model_mode} needs the model endpoint: --llm-base-url URL")
    if settings.mode == "replay" and settings.on_miss == "live" and not settings.overlay:
        raise GatewayError(
            f"--mode replay --on-miss live without --overlay would record each live answer into the "
            f"played cassette {settings.cassette or 'default'!r}, and a replay never writes what it plays: "
            "add --overlay NAME to keep them apart from it, or use --mode hybrid to record them into it"
        )
    if settings.mode == "replay" and settings.model_mode == "hybrid" and not settings.overlay:
        raise GatewayError(
            "--mode replay --model-mode hybrid without --overlay would record the model's misses into the "
            "played cassette, and a replay never writes what it plays: add --overlay NAME"
        )
    if settings.overlay and settings.log_cassette and _one_cassette(settings, settings.overlay, settings.log_cassette):
        raise GatewayError(
            f"--log-cassette and --overlay both name {settings.overlay!r}: the call log needs a cassette "
            "of its own, apart from the answers the overlay keeps; name another for one of them"
        )


def _one_cassette(settings: Settings, a: str, b: str) -> bool:
    try:
        return bool(
            cassette_path(settings.cassettes_dir, a).resolve() == cassette_path(settings.cassettes_dir, b).resolve()
        )
    except GatewayError:
        return False  # a name that is no cassette's is refused, with its reason, where it is opened


def open_overlay(settings: Settings, base: Cassette, notes: list[str] | None = None) -> Cassette:
    """The overlay cassette, made if new, inside the cassettes folder, held by this process alone (a second writer
    is refused: cassette.writer_lock); refused when it is the base, another base's, or made over this base as it was
    before it changed. `notes`: what to say at start."""
    assert settings.overlay is not None
    if cassette_path(settings.cassettes_dir, settings.overlay, write=True).resolve() == base.path.resolve():
        raise CassetteError(
            f"--overlay {settings.overlay!r} is the cassette being played; an overlay is a cassette of "
            "its own (the base is never written)"
        )
    overlay = open_named(settings.cassettes_dir, settings.overlay, create=True, exclusive=True)
    try:
        tie = _tie(settings.overlay, overlay, base, notes if notes is not None else [])
    except GatewayError:
        overlay.discard()  # made by this start: taken away again
        raise
    if tie is not None:
        overlay.store.put("meta", b"info", tie)
    return overlay


def _tie(name: str, overlay: Cassette, base: Cassette, notes: list[str]) -> dict[str, Any] | None:
    """The overlay's info tying it to `base` when it is to be written (a new overlay, or one made before ties held
    the base's content), else None; refused when it was made over another base or over this one as it was before.

    The tie is the base's name, creation time and content (Cassette.content): a base recorded into again, or
    rewritten, is another environment, and the overlay's answers (simulated or live for calls the base lacked) were
    made over the old one: played over the new one, a call simulated then could now meet a recorded answer."""
    info = overlay.info()
    made_over = info.get("overlay_of")
    base_info = base.info()
    this_base = {"name": base.path.name, "created": base_info.get("created")}
    if made_over is None:
        if info.get("servers") or any(True for _ in overlay.store.items("exchanges")):
            raise CassetteError(f"cassette {name!r} is a recording, not an overlay: name a new one")
        return {**info, "overlay_of": {**this_base, **base.content()}, "servers": {}}
    if {k: made_over.get(k) for k in ("name", "created")} != this_base:
        raise CassetteError(
            f"overlay {name!r} was made over cassette {made_over.get('name')!r} "
            f"(created {made_over.get('created')}), not over {this_base['name']!r} "
            f"(created {this_base['created']}): its answers belong to that recording"
        )
    content = base.content()
    if "digest" not in made_over:  # made before overlays were tied to their base's content
        notes.append(
            f"overlay {name!r} was made before overlays were tied to their base's content; it is tied now to "
            f"{this_base['name']!r} as it is ({content['exchanges']} exchanges): a change to the base from "
            "now on is refused"
        )
        return {**info, "overlay_of": {**made_over, **content}}
    if made_over["digest"] != content["digest"]:
        then = made_over.get("exchanges")
        how = (
            f"it holds {content['exchanges']} exchanges now, {then} when the overlay was made (recorded into again)"
            if then != content["exchanges"]
            else "its recorded exchanges or catalogs were rewritten"
        )
        raise CassetteError(
            f"overlay {name!r} was made over cassette {this_base['name']!r} as it was then, and that "
            f"cassette has changed since: {how}. The overlay's answers were made for calls the old "
            "recording lacked, so played over the new one they would mix two environments: make a "
            "new overlay (--overlay NEW_NAME)"
        )
    return None


def layered(base: Recorded, overlay: Recorded) -> Recorded:
    """The base's recording with the overlay's answers after it (each labelled with what made it); the model's
    exchanges are the overlay's alone (see the module's docstring)."""
    by_server = {server: list(entries) for server, entries in base.by_server.items() if server != MODEL_SERVER}
    exchanges = {key: list(entries) for key, entries in base.exchanges.items()}
    for server, entries in overlay.by_server.items():
        if server == SIMULATOR_SERVER:  # the simulator's own exchanges: kept for the record, never an answer
            continue
        by_server.setdefault(server, []).extend(mark_overlay(entries) if server != MODEL_SERVER else entries)
    for key, entries in overlay.exchanges.items():
        exchanges.setdefault(key, []).extend(e for e in entries if e.get("server") != SIMULATOR_SERVER)
    # A server the base lacks, first served by a hybrid run over this overlay, is the overlay's: its lock entry,
    # its catalog; the naming tools had in the overlay's runs is theirs (mcpgw.recorded_naming)
    servers = dict(base.info.get("servers", {}))
    servers.update((sid, spec) for sid, spec in overlay.info.get("servers", {}).items() if sid not in servers)
    info = {**base.info, "servers": servers}
    if "naming" in overlay.info:
        info["naming"] = overlay.info["naming"]
    merged = Recorded(info, {**overlay.catalogs, **base.catalogs}, exchanges)
    merged.by_server.update(by_server)
    return merged


def model_side(
    settings: Settings, mode: str, base: Cassette | None, overlay: Cassette | None, recorded: Recorded | None
) -> tuple[str, Cassette | None, list[dict[str, Any]]]:
    """The model passthrough's mode, the cassette it records into, and the exchanges it replays."""
    entries = list(recorded.by_server.get(MODEL_SERVER, [])) if recorded is not None else []
    model_mode = settings.model_mode or ("hybrid" if mode == "hybrid" else mode)
    if overlay is not None:
        if model_mode == "live":  # model B answers, each exchange recorded into the overlay
            return "record", overlay, []
        return model_mode, overlay if model_mode == "hybrid" else None, entries
    if model_mode == "live":
        return "live", None, []
    return model_mode, base if model_mode in ("record", "hybrid") else None, entries


def simulation(
    settings: Settings, overlay: Cassette | None, secrets: list[str], patterns: list[str] | None
) -> Simulation | None:
    if settings.on_miss != "simulate":
        return None
    assert overlay is not None and settings.simulator.base_url and settings.simulator.model
    key = None
    if settings.simulator.key_env:
        key = os.environ.get(settings.simulator.key_env)
        if not key:
            raise GatewayError(
                f"--simulator-key-env {settings.simulator.key_env}: that environment variable is not set"
            )
    config = SimulatorConfig(
        settings.simulator.base_url,
        settings.simulator.model,
        key,
        settings.simulator.timeout,
        max_bytes=settings.max_response_bytes,
    )  # a simulator's answer is bounded as a server's is
    # the servers' declared values and the simulator's key never reach the overlay's bytes
    return Simulation(Simulator(config), overlay, Redactor([*secrets, *([key] if key else [])], patterns))
