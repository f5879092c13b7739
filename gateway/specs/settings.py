"""Run-time settings: one frozen object, built once from the CLI flags by the composition root (the lock file holds
the servers); a change at start (the naming chosen, hybrid with nothing to replay) is a new object, never an
assignment."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcpgw.gateway.specs.modes import Mode, OnMiss, PastEnd


@dataclass(frozen=True)
class Settings:
    validate: str = "audit"  # enforce | audit | off
    # auto (bare in front of one server, else prefix) | prefix | benchmark | bare; None (not given): auto, or in a
    # replay the naming the recording was made under (mcpgw.recorded_naming)
    naming: str | None = None
    naming_mode: str | None = None  # the naming used, once chosen (never auto); None: from `naming`, per server count
    call_timeout: float = 60.0  # seconds of silence allowed per call (progress resets it)
    max_call_timeout: float = 600.0  # hard limit per call, progress or not
    start_timeout: float = 180.0  # handshake + catalog, first npx/uvx download included
    ready_timeout: float = 180.0  # how long lists wait for every server's first start to settle
    miss_as_tool_error: bool = False  # a replay miss (or divergence) of tools/call answered as an isError result
    require_keys: bool = False  # a server whose declared key is missing is not started (else: started without it)
    install_command: str = "mcpgw servers install"  # what a server that is not installed is told to run (its profile)
    restart_backoff: float = 0.5
    restart_backoff_max: float = 30.0
    max_response_bytes: int = 16 * 1024 * 1024
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    stdio_http: bool = False  # `serve --stdio --port N`: the model routes (/v1, Azure's) also listen on host:port
    cassettes_dir: Path = Path("cassettes")
    cassette: str | None = None  # recorded into (record), replayed from (replay, hybrid); the call log's in live
    log_cassette: str | None = None  # where the call log goes when it is not `cassette`
    mode: Mode = Mode.LIVE
    past_end: PastEnd = PastEnd.REPEAT  # replay: what a lane answers past its recorded end
    run_idle_timeout: float = 300.0  # seconds after which a run's own server instances (isolation: run) stop
    page_size: int = 0  # list pages towards clients (--page-size); 0: every list whole, in one page
    # A replay's misses (replay/answer_sources.py): what answers a call the recording lacks, after an equivalent
    # recording (same arguments once the tool's schema defaults are filled in) was looked for.
    on_miss: OnMiss = OnMiss.REFUSE
    overlay: str | None = None  # cassette a replay adds to (live and simulated answers, the model's own exchanges)
    model_mode: str | None = (
        None  # the model side's mode when not the tools' (live: forward and record into the overlay)
    )
    label_in_result: bool = False  # a replayed result's _meta says where its answer came from
    # HTTP answers: "adaptive" = plain JSON unless the request may need a stream (progress, relays);
    # "sse" = always a stream; "json" = never (no mid-call progress or relays over HTTP).
    response_mode: str = "adaptive"
    log_results: int = 0  # keep each call's result in the call log, cut to this many characters (0: digest only)
    separator: str = "__"  # from the lock file
    # The HTTP edge (gateway/endpoints/http_guard.py, gateway/sessions/sessions.py).
    allow_hosts: list[str] = field(default_factory=list)  # Host/Origin names allowed besides loopback and --host
    auth_token: str | None = None  # bearer token required on every route but /healthz
    max_sessions: int = 1000  # handshake-era HTTP sessions open at once
    max_lanes: int = 10_000  # replay lanes (run ids, clients without one) kept; least recently used dropped
    max_sessions_per_client: int = 200  # ... per client address
    session_idle_timeout: float = 600.0  # seconds before an idle session is closed
    sse_max_unread_bytes: int = 16 * 1024 * 1024  # answers an SSE stream may hold unread before its posts are refused
    # The call log (recorder/calllog.py).
    max_logged_value: int = 64 * 1024  # bytes: a longer string in a call record is kept as size + digest
    max_call_log_bytes: int = 1 << 30  # the call log stops growing here (status says so)
    # Per feature, each built once by the composition root (mcpgw/commands/serve.py) and handed out whole.
    model: ModelSettings = field(default_factory=lambda: ModelSettings())
    simulator: SimulatorSettings = field(default_factory=lambda: SimulatorSettings())
    telemetry: TelemetrySettings = field(default_factory=lambda: TelemetrySettings())


@dataclass(frozen=True)
class ModelSettings:
    """The model side (`/v1`, Azure's route; llm/): where the model is, the variable holding its key, and the bounds
    of what passes through (gateway/endpoints/http_guard.py)."""

    base_url: str | None = None  # the model endpoint behind /v1 (OpenAI-compatible)
    key_env: str | None = None  # environment variable holding its API key
    max_body_bytes: int = 4 * 1024 * 1024  # /v1 request bodies
    body_timeout: float = 120.0  # seconds to send a whole /v1 request body
    max_answer_bytes: int = 64 * 1024 * 1024  # a model answer larger than this is a 502, not relayed


@dataclass(frozen=True)
class SimulatorSettings:
    """A replay's simulator (`--on-miss simulate`; replay/simulator.py)."""

    base_url: str | None = None  # OpenAI-compatible endpoint that simulates a miss's answer
    model: str | None = None
    key_env: str | None = None
    timeout: float = 60.0  # seconds for one simulated answer, its retry included (a hanging simulator is a miss)


@dataclass(frozen=True)
class TelemetrySettings:
    """Traces and /metrics (telemetry/; docs: traces and metrics): off unless asked for, and then nothing of them on a
    call's path."""

    otlp_endpoint: str | None = None  # OTLP/HTTP base URL (spans to <URL>/v1/traces); the OTEL_EXPORTER_OTLP_* vars too
    otlp_env: bool = False  # export to where the OTEL_EXPORTER_OTLP_* variables say, without --otlp-endpoint
    trace_content: bool = False  # arguments and results (masked) as span attributes
    metrics: bool = False  # GET /metrics in Prometheus text format
