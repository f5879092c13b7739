"""Composition: settings + server specs -> upstreams, cassettes, router, front.

Modes are compositions of upstreams:
    live    LiveUpstream
    record  RecordingUpstream(LiveUpstream)               -> writes the cassette
    replay  CassetteUpstream                              -> starts no process
    hybrid  CassetteUpstream(fallback=RecordingUpstream(LiveUpstream))
The call log goes into the recorded cassette in record mode; in replay and
hybrid into a session folder inside the played cassette (`runs/<stamp>-<mode>/`,
see recorder.replay_logs), so the recorded exchanges stay untouched; in live
mode into `--cassette` (or a `live-<time>` cassette).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from mcpgw.cassette.cassette import Cassette, Recorded, open_named, open_path
from mcpgw.cassette.paths import cassette_path, is_cassette
from mcpgw.cassette.recording_upstream import RecordingUpstream
from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.state import GroupState
from mcpgw.gateway.endpoints.http_app import build_http_app, serve_http
from mcpgw.gateway.endpoints.http_guard import GuardPolicy, default_allowed_hosts
from mcpgw.gateway.errors.tree import CassetteError, GatewayError
from mcpgw.gateway.mcp_server import build_server, serve_stdio
from mcpgw.gateway.routing.router import Router
from mcpgw.gateway.runtime.secrets import register as register_secrets
from mcpgw.gateway.sessions.sessions import SessionLimits
from mcpgw.gateway.specs.modes import Mode, OnMiss, choices
from mcpgw.gateway.specs.settings import Settings
from mcpgw.gateway.specs.spec_record import spec_digest, spec_from_dict, spec_to_dict
from mcpgw.gateway.upstreams.events import CatalogChangedFn, UpstreamEvents
from mcpgw.gateway.upstreams.factory import live_upstream
from mcpgw.gateway.upstreams.upstream import ReplayCounters, Upstream
from mcpgw.known_secrets import known_secrets
from mcpgw.llm.untagged_refusal import tagged_runs
from mcpgw.lock.config import ServerSpec
from mcpgw.lock.install_lookup import CacheInstalls
from mcpgw.model_wiring import model_passthrough
from mcpgw.overlay import check_answer_settings, layered, model_side, open_overlay, simulation
from mcpgw.recorded_naming import choose_naming, replay_naming
from mcpgw.recorder.calllog import CallLog
from mcpgw.recorder.replay_logs import log_home, new_log_path
from mcpgw.replay.answer_sources import Simulation
from mcpgw.replay.cassette_upstream import CassetteUpstream
from mcpgw.start_banner import start_lines
from mcpgw.start_up import model_listener, settle_saying_who
from mcpgw.telemetry.switch import Telemetry, wanted

logger = logging.getLogger("mcpgw")
MODES = choices(Mode)


def open_cassette(
    settings: Settings,
    name: str,
    *,
    create: bool,
    readonly: bool = False,
    exclusive: bool = False,
    parent_may_hold: bool = False,
) -> Cassette:
    return open_named(
        settings.cassettes_dir,
        name,
        create=create,
        readonly=readonly,
        exclusive=exclusive,
        parent_may_hold=parent_may_hold,
    )


def replay_log_path(cassettes_dir: Path, played: Path, mode: str) -> Path:
    """Where a replay or hybrid session's call log goes: with the cassette it plays, unless
    that one lies outside the cassettes folder (`log_home`)."""
    return new_log_path(log_home(cassettes_dir, played), mode)


class Gateway:
    def __init__(
        self,
        specs: list[ServerSpec],
        settings: Settings,
        default_run: str = "default",
        *,
        redact_patterns: list[str] | None = None,
        only: list[str] | None = None,
        workers: Any = None,
        worker_channel: Any = None,
    ) -> None:
        """Every cassette written is held by this process alone (cassette.writer_lock) until `close`. A start
        refused midway closes what it opened and takes away the cassettes it made (an overlay, a call log)."""
        self.cassette: Cassette | None = None  # the recorded one (record, replay, hybrid)
        self.overlay: Cassette | None = None  # what this replay adds, when kept apart from the base (mcpgw.overlay)
        self.log_cassette: Cassette | None = None  # where the call log goes
        try:
            self._compose(specs, settings, default_run, redact_patterns, only, workers, worker_channel)
        except BaseException:
            opened: list[Cassette | None] = [self.cassette, self.overlay, self.log_cassette]  # as _compose left them
            for cassette in {id(c): c for c in opened if c is not None}.values():  # record's call log is its cassette
                cassette.discard()
            raise

    def _compose(
        self,
        specs: list[ServerSpec],
        settings: Settings,
        default_run: str,
        redact_patterns: list[str] | None,
        only: list[str] | None,
        workers: Any,
        worker_channel: Any,
    ) -> None:
        self.settings = settings
        self.default_run = default_run
        self.mode = settings.mode
        self.recorded: Recorded | None = None
        self.started = time.time()
        self.notes: list[str] = []  # said at start: why this mode, where the call log goes
        self._closed = False
        self.telemetry: Any = None  # telemetry.switch.Telemetry when traces or /metrics are asked for
        self._groups: dict[str, GroupState] = {}  # state group -> its lanes' shared history (cassette.state)
        self.workers = workers  # gateway.http.worker_routing.Workers when this process is one of --workers N
        self.worker_channel = worker_channel  # then also: the socket its connections are dealt on (mcpgw.workers)
        self._installs = CacheInstalls()  # where the live upstreams' installs are (the lock's cache)

        if self.mode == "hybrid" and not is_cassette(
            cassette_path(settings.cassettes_dir, settings.cassette or "default")
        ):
            # Nothing to replay yet: every call would miss and go live, which is what record does.
            # nothing to miss: every call is live and recorded
            settings = self.settings = dataclasses.replace(settings, mode=Mode.RECORD, on_miss=OnMiss.REFUSE)
            self.mode = settings.mode
            self.notes.append(
                f"hybrid: cassette {settings.cassette or 'default'!r} does not exist yet, so this session "
                "starts it (every call goes live and is recorded); the next hybrid serve replays it"
            )
        check_answer_settings(settings)
        if settings.model_mode == "live" and settings.overlay is None:
            self.notes.append(
                f"--model-mode live without --overlay: the model's exchanges are answered live by "
                f"{settings.model.base_url} and kept nowhere a replay reads them (only the call log says "
                "what was asked); pass --overlay NAME to keep them for replay"
            )
        self.naming: dict[str, str] | None = (
            None  # the tool naming recorded (mcpgw.recorded_naming); live: the router's
        )
        self.simulation: Simulation | None = None
        given = {s.id: s for s in specs}  # the user's lock says which servers may be simulated
        if self.mode in ("replay", "hybrid"):
            # Replay never writes into what it plays; hybrid records its misses into it, unless an overlay takes them.
            writes_base = self.mode == "hybrid" and settings.overlay is None
            self.cassette = open_cassette(
                settings, settings.cassette or "default", create=False, readonly=not writes_base, exclusive=writes_base
            )
            self.recorded = self.cassette.load()
            if settings.overlay:
                try:
                    self.overlay = open_overlay(settings, self.cassette, self.notes)
                except GatewayError:
                    self.cassette.close()
                    raise
                self.recorded = layered(self.recorded, self.overlay.load())
            recorded_specs = [spec_from_dict(d) for d in self.recorded.info.get("servers", {}).values()]
            if self.mode == "replay" and specs:
                unrecorded = sorted({s.id for s in specs} - {s.id for s in recorded_specs})
                if unrecorded:
                    self.notes.append(
                        f"replay serves the servers the cassette recorded; not in it: {', '.join(unrecorded)} "
                        "(--mode hybrid serves them live and records them)"
                    )
            if not specs or self.mode == "replay":
                specs = recorded_specs
            else:  # hybrid: every server the cassette recorded (as the lock says to start it, if it names it), and
                # the lock's others; a recorded server outside the chosen profile would otherwise be an unknown tool.
                # The recorded first, in their order: a replay of what this run adds lists its tools in this order
                lock = {s.id: s for s in specs}
                played = {
                    s.id: lock.get(s.id, s) for s in recorded_specs if s.id in lock or s.id in self.recorded.catalogs
                }
                specs = [*played.values(), *(s for s in specs if s.id not in played)]
            if only:
                specs = [s for s in specs if s.id in only]
            if not self.recorded.catalogs:
                self.cassette.close()
                raise CassetteError(
                    f"cassette {self.cassette.path} holds no recorded servers; record one with --mode record"
                )
            self.naming = replay_naming(settings, len(specs), self.recorded.info, self.overlay)  # as recorded
            settings = self.settings = named(settings, self.naming)
        elif self.mode == "record":
            if only:
                specs = [s for s in specs if s.id in only]
            self.cassette = open_cassette(
                settings,
                settings.cassette or (_session_name("record") if not self.notes else "default"),
                create=True,
                exclusive=True,
            )
            self.naming = choose_naming(settings, len(specs), None)
            settings = self.settings = named(settings, self.naming)
            self.cassette.write_info({s.id: spec_to_dict(s) for s in specs}, naming=self.naming)

        if settings.log_cassette and self.mode != "record":
            if (
                self.cassette is not None
                and cassette_path(settings.cassettes_dir, settings.log_cassette) == self.cassette.path
            ):
                self.cassette.close()
                raise CassetteError(
                    f"--log-cassette {settings.log_cassette!r} is the cassette being played; the call log needs another one"
                )
            self.log_cassette = open_cassette(
                settings, settings.log_cassette, create=True, exclusive=True, parent_may_hold=workers is not None
            )  # --workers: the parent holds it
        elif self.mode == "record":
            self.log_cassette = self.cassette
        elif self.mode == "live":
            self.log_cassette = open_cassette(
                settings, settings.cassette or _session_name("live"), create=True, exclusive=True
            )
        else:
            assert self.cassette is not None
            try:
                self.log_cassette = open_path(
                    replay_log_path(settings.cassettes_dir, self.cassette.path, self.mode), create=True, exclusive=True
                )
            except CassetteError as exc:
                self.cassette.close()
                raise CassetteError(f"{exc.message}; pass --log-cassette NAME to keep the call log elsewhere") from None

        # Every server's declared values (a replay's from the user's config too: the cassette holds them masked),
        # the model's and simulator's keys and our own token, masked in every record: a call may quote any of them.
        secrets = known_secrets(settings, specs, given.values())
        self._redactor = Redactor(secrets, redact_patterns)  # compiled once, shared by every writer
        if self._redactor.active:
            register_secrets(self._redactor)  # logs, status reasons and error messages, as in cassettes
        assert self.log_cassette is not None  # every mode opened one above (record: its cassette)
        call_log = CallLog(
            self.log_cassette.store,
            self._redactor,
            max_value=settings.max_logged_value,
            max_bytes=settings.max_call_log_bytes,
        )
        self.simulation = simulation(settings, self.overlay, secrets, redact_patterns)

        trace_calls = trace_exchange = None
        if wanted(settings):  # else the call log is the router's sink as it is: nothing added to a call
            self.telemetry = Telemetry(settings)
            call_log = self.telemetry.observe(call_log)
            if (
                self.telemetry.tracing is not None
            ):  # each forwarded call's span named to its server in _meta; the model's too
                trace_calls, trace_exchange = self.telemetry.tracing.begin, self.telemetry.tracing.begin_exchange
        events = UpstreamEvents()  # what the upstreams report, heard by the router (built after them)
        upstreams = {spec.id: self._upstream(spec, given.get(spec.id, spec), events) for spec in specs}
        self.router = Router(
            specs,
            upstreams,
            settings,
            call_log,
            events=events,
            trace_calls=trace_calls,
            recording=str(self.cassette.path) if self.cassette is not None else None,
        )
        self.server = build_server(self.router, default_run)
        # The model's side (/v1/...) shares the cassette, lanes and mode of the tool side (unless --model-mode says
        # otherwise; with an overlay, the model's exchanges are the overlay's: mcpgw.overlay.model_side).
        model_mode, model_cassette, model_entries = model_side(
            settings, self.mode, self.cassette, self.overlay, self.recorded
        )
        runs = (
            tagged_runs([e for entries in self.recorded.by_server.values() for e in entries])
            if self.recorded
            else set()
        )
        self.model = model_passthrough(
            settings,
            model_mode,
            model_cassette,
            model_entries,
            default_run,
            redact_patterns,
            call_log,
            secrets=secrets,
            recorded_runs=runs,
            trace_exchange=trace_exchange,
        )

    def _upstream(self, spec: ServerSpec, user_spec: ServerSpec, events: UpstreamEvents) -> Upstream:
        # One instance per run where the server's state must not leak between runs; in hybrid mode
        # every tracked server too, so a run that goes live gets a fresh instance to catch up.
        per_run = spec.isolated or (self.mode == "hybrid" and spec.tracked)

        def live(on_catalog_changed: CatalogChangedFn, on_idle_stop: Callable[[str], None] | None = None) -> Upstream:
            return live_upstream(
                spec,
                self.settings,
                self._installs,
                per_run=per_run,
                on_notification=events.notification,
                on_catalog_changed=on_catalog_changed,
                on_idle_stop=on_idle_stop,
            )

        def recording(on_idle_stop: Callable[[str], None]) -> RecordingUpstream:
            async def catalog_changed(server: str, kind: str) -> None:  # `up` is built below, before any server runs
                if self.mode == "record":
                    up.record_catalog()
                    await events.catalog_changed(server, kind)
                elif self.recorded is not None and server not in self.recorded.catalogs:
                    # hybrid keeps the recorded catalog; a server new to the cassette is served (and recorded) live,
                    # and joins the cassette (its spec and catalog, so a replay serves it too) with its first exchange
                    up.join_with_next_exchange()
                    await events.catalog_changed(server, kind)

            def join() -> (
                None
            ):  # its lock entry kept where its catalog and answers go (the overlay, if any: the base is read-only)
                assert self.cassette is not None
                (self.overlay or self.cassette).write_info({spec.id: spec_to_dict(spec)}, naming=self.naming)
                up.record_catalog()

            assert self.cassette is not None
            up = RecordingUpstream(
                live(catalog_changed, on_idle_stop),
                self.overlay or self.cassette,
                tracked=spec.tracked,
                group=self._group(spec),
                redact=self._redactor,
                lock_digest=spec_digest(spec),
                join=join,
            )
            return up

        if self.mode == "live":
            return live(events.catalog_changed)
        if self.mode == "record":
            return recording(self._group(spec).forget)  # a fresh instance: the run's history starts over

        def instance_stopped(lane: str) -> None:  # the run's next miss catches a fresh one up again
            played.instance_stopped(lane)

        assert self.recorded is not None
        fallback = recording(instance_stopped) if self.mode == "hybrid" else None
        # Keys are computed as they were recorded: with the flags the server had then.
        recorded = self.recorded.info.get("servers", {}).get(spec.id)
        as_recorded = spec_from_dict(recorded) if recorded else spec
        played = CassetteUpstream(
            spec.id,
            self.recorded.catalogs.get(spec.id),
            self.recorded.by_server.get(spec.id, []),
            tracked=as_recorded.tracked,
            legacy_stateful=as_recorded.stateful,
            past_end=self.settings.past_end,
            fallback=fallback,
            ignore=spec.ignore,
            group=self._group(as_recorded),
            max_lanes=self.settings.max_lanes,
            # simulated only where no state can be misrepresented: keyed stateless, or a lock entry that allows it
            simulation=self.simulation
            if not as_recorded.tracked or "allowed" in (user_spec.simulate, as_recorded.simulate)
            else None,
            label_in_result=self.settings.label_in_result,
        )
        return played

    def _group(self, spec: ServerSpec) -> GroupState:
        """Servers of one state group share their lanes' history; any other server has its own."""
        name = f"group:{spec.state_group}" if spec.state_group else f"server:{spec.id}"
        return self._groups.setdefault(name, GroupState(self.settings.max_lanes))

    # -- serving ---------------------------------------------------------------------

    def _guard(self) -> GuardPolicy:
        s = self.settings
        return GuardPolicy(
            allowed_hosts=default_allowed_hosts(s.host, s.allow_hosts),
            token=s.auth_token,
            mcp_path=s.path,
            model_max_body=s.model.max_body_bytes,
            model_body_timeout=s.model.body_timeout,
        )

    def http_app(self) -> Any:
        """Every HTTP route this gateway serves (MCP, SSE, per-server, mcprouter's API, the model routes,
        telemetry's), behind the pipeline."""
        s = self.settings
        guard = self._guard()
        limits = SessionLimits(
            s.max_sessions, s.max_sessions_per_client, s.session_idle_timeout, s.sse_max_unread_bytes
        )
        return build_http_app(
            self.router,
            self.server,
            s.host,
            s.path,
            on_shutdown=self.close,
            response_mode=s.response_mode,
            routes=self.model.routes(mint=self.workers.mint_identity if self.workers else None)
            + (self.telemetry.routes() if self.telemetry else []),
            guard=guard,
            limits=limits,
            workers=self.workers,
            default_run=self.default_run,
        )

    async def serve_http(self) -> None:
        app = self.http_app()
        if self.telemetry is not None:
            self.telemetry.status = app.status_body
        sockets = None
        if self.workers is not None:
            from mcpgw.workers import worker_sockets

            sockets = worker_sockets(self.workers)
        try:
            listening = anyio.Event()
            bound: list[int] = []

            def ready(port: int) -> None:  # --port 0: the port the system chose, said as uvicorn says it
                bound.append(port)
                listening.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    serve_http, app, self.settings.host, self.settings.port, ready, sockets, self.worker_channel
                )
                await listening.wait()
                base = f"http://{self.settings.host}:{bound[0]}"
                # 0-based, as x-mcpgw-worker, /status and --worker K/N number them
                where = (
                    f" (worker {self.workers.index} of workers 0-{self.workers.count - 1})"
                    if self.workers is not None
                    else ""
                )
                print(
                    f"mcpgw: serving MCP at {base}{self.settings.path}{where} (status: {base}/status)", file=sys.stderr
                )
                await settle_saying_who(self.router, self.settings.ready_timeout)
                self.announce()
        finally:
            self.close()

    async def serve_stdio(self) -> None:
        """MCP over stdin/stdout; with `stdio_http` (`--stdio --port N`) the model routes on host:port too, into
        the same cassette and lanes, until the end of input."""
        try:
            async with anyio.create_task_group() as tg:
                stop = anyio.Event()  # the end of input ends the model listener too
                if self.settings.stdio_http:
                    await model_listener(self.model.routes(), self._guard(), self.settings, tg, stop)
                started = anyio.Event()

                async def front() -> None:
                    try:
                        await serve_stdio(self.router, self.server, started.set)
                    finally:
                        stop.set()

                tg.start_soon(front)
                await started.wait()
                await settle_saying_who(self.router, self.settings.ready_timeout)
                self.announce()
        finally:
            self.close()

    def announce(self) -> None:
        print("\n".join(start_lines(self)), file=sys.stderr)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.mode in ("replay", "hybrid") and self.log_cassette is not None and self.cassette is not None:
            counts: dict[str, dict[str, int]] = {"hits": {}, "misses": {}, "diverged": {}}
            lanes: dict[str, dict[str, Any]] = {}
            for name, upstream in self.router.upstreams.items():
                if not isinstance(upstream, ReplayCounters):
                    continue
                for kind, counter in (
                    ("hits", upstream.hits),
                    ("misses", upstream.misses),
                    ("diverged", upstream.diverged),
                ):
                    for tool, n in counter.items():
                        counts[kind][f"{name}:{tool}"] = n
                for lane, report in upstream.lane_report().items():
                    if report["diverged"] or report["live"]:
                        lanes.setdefault(lane, {})[name] = report
            extra: dict[str, Any] = {}
            if self.overlay is not None:
                extra["overlay"] = self.overlay.path.name
            if self.simulation is not None:
                extra["simulated"] = {
                    "made": self.simulation.made,
                    "failed": self.simulation.failed,
                    "gateway_ms": round(self.simulation.gateway_ms, 3),
                    "model": self.simulation.simulator.model,
                }
            # masked as every record is: lanes are named by the clients' run ids
            self.log_cassette.record_run(
                self._redactor(
                    {
                        "kind": "replay",
                        "mode": self.mode,
                        "source": self.cassette.path.name,
                        "started": self.started,
                        "ended": time.time(),
                        **counts,
                        "lanes": lanes,
                        "model": self.model.stats(),
                        "on_miss": self.settings.on_miss,
                        **extra,
                    }
                )
            )
        if self.telemetry is not None:  # every run's root span ends, and what is queued is sent (bounded wait)
            self.telemetry.close()
        for cassette in {id(c): c for c in (self.cassette, self.overlay, self.log_cassette) if c is not None}.values():  # noqa: B007
            cassette.close()


def _session_name(mode: str) -> str:
    return datetime.now(UTC).strftime(f"{mode}-%Y%m%d-%H%M%S-%f")


def named(settings: Settings, naming: dict[str, str]) -> Settings:
    """The settings with the tool naming chosen at start (mcpgw.recorded_naming): what the router names tools by."""
    return dataclasses.replace(settings, naming_mode=naming["mode"], separator=naming["separator"])
