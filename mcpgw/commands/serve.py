"""`mcpgw serve`: its arguments, and the wiring from them to a running gateway."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from mcpgw.commands import DEFAULT_CONFIG
from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.specs.modes import Mode, OnMiss, PastEnd, choices


def register(sub: Any) -> None:
    serve = sub.add_parser("serve", help="start the gateway")
    serve.add_argument("--config", default=None, help=f"lock file or mcpServers JSON (default: ./{DEFAULT_CONFIG})")
    serve.add_argument("--profile", help="profile of the lock file to serve (default: its default_profile)")
    serve.add_argument("--servers", nargs="+", action="extend", help="serve only these server ids")
    serve.add_argument("--stdio", action="store_true", help="serve MCP over stdin/stdout instead of HTTP")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; anything else needs --auth-token-env)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=None,
        help="TCP port (default 8765; 0: any free one, said on stderr); with --stdio, the port the model "
        "routes (/v1, Azure's /openai/...) listen on, recorded into the same cassette (default: none)",
    )
    serve.add_argument(
        "--validate",
        choices=("enforce", "audit", "off"),
        default="audit",
        help="check each tools/call against its inputSchema: audit (default) forwards and logs the "
        "verdict, enforce answers an invalid call with an error naming the path, off skips it",
    )
    serve.add_argument(
        "--naming",
        choices=("auto", "prefix", "benchmark", "bare"),
        default=None,
        help="auto (default; a replay: the naming the recording was made under): bare in front of one "
        "server, else prefix; prefix: <server>__<tool>; benchmark: 'Server Name:tool' as MCP-Bench names tools; "
        "bare: upstream names unchanged (a name two servers share gets the prefix, with a warning)",
    )
    serve.add_argument(
        "--page-size",
        type=int,
        default=0,
        help="page tools/list, prompts/list and resources/list in pages of N (nextCursor); default 0: "
        "every list whole, in one page, for the many clients that read only the first page",
    )
    serve.add_argument("--call-timeout", type=float, default=60.0, help="seconds without an answer or progress")
    serve.add_argument(
        "--miss-as-tool-error",
        action="store_true",
        help="replay: answer a tools/call the recording cannot answer (a miss, or a refusal after "
        "divergence) as a tool result with isError and the same text, so an agent framework shows "
        "it to the model and goes on; by default it is a JSON-RPC error that stops a strict replay",
    )
    serve.add_argument(
        "--require-keys",
        action="store_true",
        help="do not start a server whose declared key (env var) is missing; by default it starts "
        "without it, as MCP-Bench runs it: its tools are listed and its calls get its own error",
    )
    serve.add_argument(
        "--ready-timeout",
        type=float,
        default=180.0,
        help="longest wait of list requests for every server's first start to settle (default 180)",
    )
    serve.add_argument("--max-call-timeout", type=float, default=600.0, help="hard limit per call, even with progress")
    serve.add_argument(
        "--max-response-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="largest answer an upstream (or the simulator) may give (default 16 MiB); a bigger one is an error",
    )
    serve.add_argument(
        "--mode",
        choices=choices(Mode),
        help="default: replay of the embedded cassette 'default' when no --config/--profile/--servers "
        "is given, live otherwise",
    )
    serve.add_argument(
        "--cassette",
        help="record: cassette to write; replay/hybrid: cassette to play (default 'default'); "
        "live: cassette for the call log",
    )
    serve.add_argument("--log-cassette", help="cassette for the call log in replay/hybrid (default: <mode>-<time>)")
    serve.add_argument(
        "--past-end",
        choices=choices(PastEnd),
        default=PastEnd.REPEAT.value,
        help="replay: answer to a request repeated more often than recorded",
    )
    serve.add_argument(
        "--run-idle-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="servers with isolation: run get one instance per run; it stops after this much idle time",
    )
    serve.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="REGEX",
        help="also keep text matching REGEX out of cassettes (declared env values always are)",
    )
    serve.add_argument(
        "--responses",
        choices=("adaptive", "sse", "json"),
        default="adaptive",
        help="HTTP answers: adaptive (default) = plain JSON unless the request asked for progress or "
        "its session accepts sampling/elicitation/roots; sse = always a stream; json = never",
    )
    serve.add_argument(
        "--run",
        default="default",
        help="run id for calls whose client gives none (?run= / X-Run-Id); each such client, on /mcp "
        "and /v1 alike, replays in a lane of its own under it (<run>/client-<id>)",
    )
    from mcpgw.llm.options import add_model_options

    add_model_options(serve)
    from mcpgw.commands.answer_options import add_answer_options

    add_answer_options(serve)
    edge = serve.add_argument_group("security (README: Security)")
    edge.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host/Origin name (loopback names and --host always are)",
    )
    edge.add_argument(
        "--auth-token-env",
        metavar="VAR",
        help="require `Authorization: Bearer <token>`, token from env VAR "
        "(required when --host is not a loopback address)",
    )
    edge.add_argument("--auth-token-file", metavar="FILE", help="as --auth-token-env, the token read from FILE")
    edge.add_argument("--max-sessions", type=int, default=1000, help="HTTP sessions open at once (idle ones make room)")
    edge.add_argument(
        "--sse-max-unread-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="bytes of answers an SSE stream may hold that its client has not read; past it, posts into "
        "that stream are refused (429) until it reads (default 16 MiB)",
    )
    edge.add_argument(
        "--max-lanes",
        type=int,
        default=10_000,
        help="replay lanes (run ids, clients without one) kept; the least recently used is dropped",
    )
    edge.add_argument("--max-sessions-per-client", type=int, default=200, help="HTTP sessions per client address")
    edge.add_argument(
        "--session-idle-timeout", type=float, default=600.0, help="seconds before an idle session is closed"
    )
    edge.add_argument(
        "--max-logged-value",
        type=int,
        default=64 * 1024,
        metavar="BYTES",
        help="longer strings in call records are kept as size + sha256",
    )
    edge.add_argument("--max-call-log-mb", type=float, default=1024.0, help="the call log stops growing at this size")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="replay: serve from N processes behind the one port; each run/client is served by one of "
        "them, so the answers are those of one process",
    )
    serve.add_argument("--worker", help=argparse.SUPPRESS)  # K/N: set by the --workers parent
    serve.add_argument("--worker-dir", help=argparse.SUPPRESS)
    serve.add_argument("--worker-channel", help=argparse.SUPPRESS)  # FD: the connections the parent deals
    seen = serve.add_argument_group("traces and metrics (README: Traces and metrics)")
    seen.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        help="send OpenTelemetry traces (OTLP/HTTP protobuf) to URL/v1/traces: a root span per run, a span "
        "per tool call and model exchange; OTEL_EXPORTER_OTLP_ENDPOINT set works as this flag",
    )
    seen.add_argument(
        "--trace-content",
        action="store_true",
        help="also put tool arguments and results (secrets masked) on the spans (opt-in content)",
    )
    seen.add_argument("--metrics", action="store_true", help="serve GET /metrics in Prometheus text format")
    serve.add_argument("-v", "--verbose", action="store_true")
    serve.set_defaults(func=cmd_serve)
    from mcpgw.cassette.paths import add_dir_option

    add_dir_option(serve)


def cmd_serve(args: argparse.Namespace) -> int:
    import re

    import anyio

    from mcpgw.app import Gateway
    from mcpgw.gateway.specs.settings import ModelSettings, Settings, TelemetrySettings
    from mcpgw.lock.config import default_lock, load_config

    for pattern in args.redact:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise GatewayError(f"--redact {pattern!r} is not a valid regular expression: {exc}") from None
    from mcpgw.gateway.endpoints.http_guard import check_exposure, load_token

    token = load_token(args.auth_token_env, args.auth_token_file)
    for name, value in (
        ("--max-sessions", args.max_sessions),
        ("--max-sessions-per-client", args.max_sessions_per_client),
        ("--session-idle-timeout", args.session_idle_timeout),
        ("--max-logged-value", args.max_logged_value),
        ("--max-call-log-mb", args.max_call_log_mb),
        ("--call-timeout", args.call_timeout),
        ("--max-call-timeout", args.max_call_timeout),
        ("--ready-timeout", args.ready_timeout),
        ("--max-response-bytes", args.max_response_bytes),
        ("--run-idle-timeout", args.run_idle_timeout),
        ("--max-lanes", args.max_lanes),
        ("--sse-max-unread-bytes", args.sse_max_unread_bytes),
        ("--llm-max-body-bytes", args.llm_max_body_bytes),
        ("--llm-body-timeout", args.llm_body_timeout),
        ("--llm-max-answer-bytes", args.llm_max_answer_bytes),
    ):
        if not value > 0:
            raise GatewayError(f"{name} must be a positive number, not {value}")
    if args.page_size < 0:
        raise GatewayError(f"--page-size must be 0 (whole lists) or a positive number of items, not {args.page_size}")
    if not args.run.strip():
        raise GatewayError("--run names the run untagged clients' lanes sit under: give a name (default: default)")
    stdio_http = args.stdio and args.port is not None  # a stdio harness's model, recorded with its tools
    if args.port is None:
        args.port = 8765
    if not 0 <= args.port < 65536:
        raise GatewayError(f"--port must be a TCP port number (1-65535, or 0 for any free one), not {args.port}")
    if args.port == 0 and args.workers != 1:
        raise GatewayError("--port 0 serves one process only: give --workers a fixed --port")
    if not args.stdio or stdio_http:
        check_exposure(args.host, token)
    if args.workers != 1:
        return _serve_workers(args)
    if (not args.stdio or stdio_http) and not args.worker:  # say so now, not after the servers have started
        check_port_free(args.host, args.port)
    if args.config:  # a broken file is refused first, and alone
        load_config(args.config)
    from mcpgw.cassette.embedded import default_cassette

    embedded = default_cassette(Path(args.cassettes_dir))  # the user's own cassettes/default, else the installed one
    mode = Mode(args.mode or default_mode(args, embedded))
    cassette = args.cassette
    if mode == "replay" and cassette in (None, "default") and embedded is not None:
        cassette = str(embedded.resolve())  # played read-only in place; the call log stays in --cassettes-dir
    from mcpgw.commands.answer_options import answer_settings

    answers = answer_settings(args, mode)
    if mode == Mode.REPLAY and answers["on_miss"] == OnMiss.LIVE and answers["overlay"]:
        mode = Mode.HYBRID  # the same thing, by today's name; without an overlay it would write the played cassette:
        # refused (mcpgw.overlay.check_answer_settings)
    specs = []
    separator = "__"
    install = "mcpgw servers install"
    if mode != "replay" or args.config:
        config_path = args.config or default_lock()
        if config_path is None:
            raise GatewayError(
                f"no {DEFAULT_CONFIG} here (and none installed with mcpgw); pass --config <lock file or "
                "mcpServers JSON>"
            )
        config = load_config(config_path)
        specs = config.select(args.profile, args.servers if mode == "live" or mode == "record" else None)
        separator = config.separator
        install = install_command(args.config, args.profile or config.default_profile, args.servers)
    settings = Settings(
        mode=mode,
        log_cassette=args.log_cassette,
        response_mode=args.responses,
        past_end=PastEnd(args.past_end),
        run_idle_timeout=args.run_idle_timeout,
        validate=args.validate,
        naming=args.naming,
        call_timeout=args.call_timeout,
        ready_timeout=args.ready_timeout,
        require_keys=args.require_keys,
        install_command=install,
        miss_as_tool_error=args.miss_as_tool_error,
        max_call_timeout=args.max_call_timeout,
        max_response_bytes=args.max_response_bytes,
        host=args.host,
        port=args.port,
        stdio_http=stdio_http,
        cassettes_dir=Path(args.cassettes_dir),
        cassette=cassette,
        separator=separator,
        model=ModelSettings(
            base_url=args.llm_base_url,
            key_env=args.llm_key_env,
            max_body_bytes=args.llm_max_body_bytes,
            body_timeout=args.llm_body_timeout,
            max_answer_bytes=args.llm_max_answer_bytes,
        ),
        log_results=max(0, args.log_results),
        allow_hosts=args.allow_host,
        auth_token=token,
        max_sessions=args.max_sessions,
        max_lanes=args.max_lanes,
        page_size=args.page_size,
        sse_max_unread_bytes=args.sse_max_unread_bytes,
        max_sessions_per_client=args.max_sessions_per_client,
        session_idle_timeout=args.session_idle_timeout,
        max_logged_value=args.max_logged_value,
        max_call_log_bytes=int(args.max_call_log_mb * 1024 * 1024),
        telemetry=TelemetrySettings(
            otlp_endpoint=args.otlp_endpoint,
            trace_content=args.trace_content,
            metrics=args.metrics,
            otlp_env=bool(
                os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            ),
        ),
        **answers,
    )
    if args.otlp_endpoint and not args.otlp_endpoint.startswith(("http://", "https://")):
        raise GatewayError(
            f"--otlp-endpoint takes an http(s) base URL (spans go to URL/v1/traces), not {args.otlp_endpoint!r}"
        )
    workers = channel = None
    if args.worker:
        from mcpgw.workers import parse_worker, worker_channel

        workers = parse_worker(args.worker, args.worker_dir)
        channel = worker_channel(args.worker_channel)
    gateway = Gateway(
        specs,
        settings,
        default_run=args.run,
        redact_patterns=args.redact,
        only=args.servers,
        workers=workers,
        worker_channel=channel,
    )
    try:
        # uvloop: the gateway's time is mostly event-loop and HTTP machinery, which uvloop makes cheaper.
        anyio.run(
            gateway.serve_stdio if args.stdio else gateway.serve_http, backend_options={"use_uvloop": _has_uvloop()}
        )
    except KeyboardInterrupt:
        pass
    return 0


def check_port_free(host: str, port: int) -> None:
    """Say now that the port is taken, not after the servers have started."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise GatewayError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def default_mode(args: argparse.Namespace, embedded: Path | None) -> str:
    """The mode when --mode is not given, said out loud: never a silent switch to starting servers."""
    from mcpgw.cassette.paths import cassette_path, is_cassette

    given = [
        flag
        for flag, value in (("--config", args.config), ("--profile", args.profile), ("--servers", args.servers))
        if value
    ]
    if given:
        print(
            f"mcpgw: mode live, because {' and '.join(given)} {'was' if len(given) == 1 else 'were'} given "
            "without --mode",
            file=sys.stderr,
        )
        return "live"
    name = args.cassette or "default"
    if (name == "default" and embedded is not None) or is_cassette(cassette_path(Path(args.cassettes_dir), name)):
        print(
            f"mcpgw: mode replay of cassette {name!r} (no --mode, --config, --profile or --servers given)",
            file=sys.stderr,
        )
        return "replay"
    restore = " (it ships with mcpgw: `git checkout -- cassettes/default` restores it)" if name == "default" else ""
    raise GatewayError(
        f"no cassette {name!r} in {args.cassettes_dir}/ to replay{restore}; to start the servers of "
        f"{DEFAULT_CONFIG} instead: mcpgw serve --mode live"
    )


def _serve_workers(args: argparse.Namespace) -> int:

    from mcpgw.app import open_cassette, replay_log_path
    from mcpgw.cassette.cassette import open_path
    from mcpgw.cassette.paths import cassette_path
    from mcpgw.gateway.specs.settings import Settings
    from mcpgw.workers import run_parent

    if args.workers < 1:
        raise GatewayError(f"--workers {args.workers}: needs at least 1")
    from mcpgw.cassette.embedded import default_cassette

    cassettes_dir = Path(args.cassettes_dir)
    embedded = default_cassette(cassettes_dir)
    if (args.mode or default_mode(args, embedded)) != "replay" or args.stdio:
        raise GatewayError("--workers needs --mode replay over HTTP (live and record keep one process per server)")
    if args.on_miss != "refuse" or args.model_mode or args.overlay:
        raise GatewayError(
            "--workers replays only: --on-miss, --model-mode and --overlay need one process (each "
            "would add to the overlay on its own)"
        )
    check_port_free(args.host, args.port)
    # The call log is made once and shared: this parent holds its writer lock while the workers run (each worker
    # writes it as its parent's: cassette.writer_lock), so another gateway is refused it.
    if args.log_cassette:
        log_name = args.log_cassette
        log = open_cassette(Settings(cassettes_dir=cassettes_dir), log_name, create=True, exclusive=True)
    else:  # one session: its call log goes where a single process's would (cassettes/<name>/runs/)
        played = (
            embedded.resolve()
            if args.cassette in (None, "default") and embedded is not None
            else cassette_path(cassettes_dir, args.cassette or "default")
        )
        log_path = replay_log_path(cassettes_dir, played, "replay")
        log = open_path(log_path, create=True, exclusive=True)
        log_name = str(log_path.resolve())
    held, log.lock = log.lock, None  # the store is closed; the lock is kept until the workers are gone
    log.close()
    argv, skip = [], False
    for item in args.argv:  # the same serve command, without --workers
        if skip:
            skip = False
        elif item == "--workers":
            skip = True
        elif not item.startswith("--workers=") and item != "--log-cassette" and not item.startswith("--log-cassette="):
            argv.append(item)
        elif item == "--log-cassette":
            skip = True
    print(f"mcpgw: {args.workers} workers on {args.host}:{args.port}; call log -> cassette {log_name}", file=sys.stderr)
    try:
        return run_parent(argv, args.workers, log_name, args.host, args.port)
    finally:
        if held is not None:
            held.release()


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def install_command(config: str | None, profile: str | None, servers: list[str] | None) -> str:
    """What a server that is not installed tells the user to run: `servers install` of what was served."""
    words = ["mcpgw", "servers", "install"]
    if config and Path(config).name != DEFAULT_CONFIG:
        words += ["--config", config]
    if profile:
        words += ["--profile", profile]
    if servers:
        words += ["--servers", *servers]
    return " ".join(words)
