"""``thirteen serve``: check the flags, open the store and its keys, and serve the gRPC API until
SIGTERM or SIGINT (``service.bootstrap``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from service.bootstrap.backgrounds import BACKGROUNDS
from service.entrypoints import replicas, serve_tiles, serve_tls
from service.entrypoints.configuring import log_effective
from service.entrypoints.log_flags import register_transparency
from service.entrypoints.options import (
    Commands,
    add_data,
    add_log_level,
    host_port,
    whole_number,
)
from service.entrypoints.starting import Refused, add_metrics, listening_metrics, say, say_metrics
from service.tools.terminal import EXIT_BAD_INPUT

if TYPE_CHECKING:
    from service.application import Thirteen
    from service.metrics import Metrics
    from service.routing.peers import Routing
    from service.security.policy import Policy
    from service.security.tls import ServerTls
    from service.tiles import TilesEndpoint
    from service.tracing.spans import Tracing
    from service.transparency.options import LogOptions


def register(commands: Commands) -> None:
    """``serve``."""
    serve_parser = commands.add_parser("serve", help="serve the gRPC API")
    serve_parser.add_argument(
        "--address",
        type=host_port,
        default="127.0.0.1:50051",
        help="HOST:PORT to listen on (default 127.0.0.1:50051; port 0 picks one)",
    )
    add_data(serve_parser)
    add_log_level(serve_parser)
    serve_parser.add_argument(
        "--max-in-flight",
        type=whole_number(1, 100_000, "--max-in-flight"),
        default=1_000,
        metavar="N",
        help="calls served at once, and as many streams open at once; past it a call is "
        "answered RESOURCE_EXHAUSTED with a delay to retry after (default 1000)",
    )
    add_metrics(serve_parser)
    serve_tiles.register(serve_parser)
    serve_parser.add_argument(
        "--otlp-endpoint",
        type=_otlp_endpoint,
        metavar="URL",
        help="send OpenTelemetry traces over OTLP/gRPC there, http://HOST:PORT or "
        "https://HOST:PORT (default: none, unless OTEL_EXPORTER_OTLP_ENDPOINT is set; needs "
        "thirteen[otel])",
    )
    serve_parser.add_argument(
        "--seed-key",
        type=Path,
        metavar="FILE",
        help="the keys server seeds are derived from, one per line, the current first "
        "(default <data>/seed.key, created on the first start with SQLite; a file given here, "
        "or any on PostgreSQL, must exist: `thirteen seed-key init FILE`; every replica needs "
        "the same file)",
    )
    serve_parser.add_argument(
        "--background",
        choices=BACKGROUNDS,
        default="here",
        help="where the work no caller waits for runs (the views' projector, the transparency "
        "log's appender and signer): here, in this process (default), or in a `thirteen "
        "worker` beside it, whose views and log this process serves",
    )
    serve_tls.register(serve_parser)
    register_transparency(serve_parser)
    replicas.register(serve_parser)
    serve_parser.set_defaults(run=serve)


def _otlp_endpoint(text: str) -> str:
    from service.tracing.setup import endpoint_url

    try:
        return endpoint_url(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def serve(args: argparse.Namespace) -> int:
    """Serve the gRPC API until SIGTERM or SIGINT (and metrics, with ``--metrics``)."""
    from service import logging as service_logging

    service_logging.configure(args.log_level)
    routing = replicas.routing(args)
    if isinstance(routing, str):
        print(f"thirteen serve: {routing}", file=sys.stderr)
        return EXIT_BAD_INPUT
    security = serve_tls.transport_security(args)
    if isinstance(security, str):
        print(f"thirteen serve: {security}", file=sys.stderr)
        return EXIT_BAD_INPUT
    refused = _cannot_listen(args.address)  # before the store opens or a key file is made
    if refused is not None:
        print(f"thirteen serve: cannot listen on {args.address}: {refused}", file=sys.stderr)
        return 1
    tracing = _tracing(args)
    if isinstance(tracing, int):
        return tracing
    metrics = listening_metrics(args)  # before the store opens: a taken port changes nothing
    if isinstance(metrics, int):
        return metrics
    tiles = serve_tiles.listening(args)
    if isinstance(tiles, int):
        if metrics is not None:
            metrics.close()
        return tiles
    try:
        return _serve(args, *security, metrics, routing, tracing, tiles)
    finally:
        if tiles is not None:
            tiles.close()
        if metrics is not None:
            metrics.close()
        if tracing is not None:
            tracing.close()


def _tracing(args: argparse.Namespace) -> Tracing | int | None:
    """Tracing, when ``--otlp-endpoint`` or the ``OTEL_*`` variables ask for it (None: off);
    or, after one line saying why it cannot be on, the exit status 2."""
    from service.tracing import TracingUnavailable, start_tracing, tracing_wanted

    if not tracing_wanted(args.otlp_endpoint):
        return None
    try:
        return start_tracing(args.otlp_endpoint)
    except TracingUnavailable as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _cannot_listen(address: str) -> str | None:
    """Why the gRPC ``address`` cannot be listened on now (None: it can, or grpc is left to
    judge it: port 0, a name that does not resolve, not ``HOST:PORT``). Checked before the store
    opens, so that a taken port creates no data directory and no key files; grpc's own bind,
    later, stays the authority (the port may be taken in between)."""
    import socket

    from service.metrics.endpoint import EndpointError, split_address

    try:
        host, port = split_address(address)
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (EndpointError, OSError):
        return None
    if port == 0 or not found:
        return None
    family, kind, proto, _, where = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpc binds
        try:
            probe.bind(where)
        except OSError:
            return "the address is taken or not ours"
    return None


def _serve(
    args: argparse.Namespace,
    tls: ServerTls | None,
    policy: Policy | None,
    metrics: Metrics | None,
    routing: Routing | None,
    tracing: Tracing | None,
    tiles: TilesEndpoint | None = None,
) -> int:
    """``serve`` once its flags are checked: open the store and serve until a signal."""
    import asyncio

    from service.bootstrap import serve_forever
    from service.small_files import open_to_others

    found = open_to_others(Path(args.data))  # as found: what this process creates is owner-only
    try:
        app, transparency = _opened(args)
    except Refused as refused:
        print(f"thirteen serve: {refused}", file=sys.stderr)
        return refused.status
    _warn_if_open(Path(args.data), found)  # once it will serve: a refusal stays one line
    try:
        asyncio.run(
            serve_forever(
                app,
                args.address,
                on_started=lambda running: _banner(args, app, tls, metrics, running.port, tiles),
                credentials=tls.credentials if tls is not None else None,
                mutual_tls=tls is not None and tls.mutual,
                policy=policy,
                transparency=transparency,
                metrics=metrics,
                background=args.background,
                routing=routing,
                max_in_flight=args.max_in_flight,
                tracing=tracing,
                tiles=tiles,
            )
        )
    except OSError as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return 1
    return 0


def _opened(args: argparse.Namespace) -> tuple[Thirteen, LogOptions]:
    """The application on the store with its seed keys read (or, on a first start of the
    embedded default, created) and its transparency log's key checked; or ``Refused``."""
    from service.entrypoints.starting import checked_log, opened_store
    from service.rpc.reader import readers
    from service.seed_keys import SEED_KEY_FILE, SeedKeyError
    from service.tools.log_keys import log_key_unreadable

    unreadable = log_key_unreadable(args)
    if unreadable is not None:
        raise Refused(unreadable)
    try:
        readers(os.environ)  # THIRTEEN_READERS, before the store is opened
    except ValueError as error:
        raise Refused(str(error)) from None
    seed_key = args.seed_key or Path(args.data) / SEED_KEY_FILE
    creating = not seed_key.exists()
    if creating and (args.seed_key is not None or os.environ.get("THIRTEEN_STORE") == "postgres"):
        # Only the embedded default makes its own key: a mistyped path, a missing mount or a
        # replica's own new key would commit tables the other replicas cannot deal.
        raise Refused(
            f"seed key file {seed_key} does not exist: create it once with "
            f"`thirteen seed-key init {seed_key}` and give every server of the store that file"
        )
    app = opened_store(Path(args.data), seed_key)
    try:
        if creating:
            _refuse_a_new_seed_key(app, seed_key)
        try:
            seed_keys = app.seed_keys  # read (or create) the key file now, not at the first deal
        except SeedKeyError as error:
            raise Refused(str(error)) from None
        if creating:
            print(
                f"thirteen serve: created the seed key file {seed_key} (key id "
                f"{seed_keys.current}); keep it secret, back it up, and give every replica the "
                "same file",
                file=sys.stderr,
                flush=True,
            )
        transparency = checked_log(args, app, "serve")
    except BaseException:
        app.close()
        raise
    return app, transparency


def _refuse_a_new_seed_key(app: Thirteen, seed_key: Path) -> None:
    """``Refused`` when the store's tables committed their next deals under seed keys (a new
    key could deal none of them); a store whose tables hold their next seeds in clear (the
    first release's, issue 23) or that has none is given a new key."""
    from service.tools.store_status import seed_commitments

    if app.max_position() == 0:
        return
    needed = sorted(key_id for key_id in seed_commitments(app) if key_id)
    if needed:
        raise Refused(
            f"seed key file {seed_key} does not exist, but the store's tables committed their "
            f"next deals under key id{'s' if len(needed) > 1 else ''} {', '.join(needed)}: "
            "restore the key file that holds them (a new key could deal none of those tables)"
        )


def _warn_if_open(data: Path, found: dict[Path, int]) -> None:
    """One log line and one line on stderr when others than the owner may read the data
    directory or a file in it (issue 22): hands in progress and the keys are in there. Served
    all the same, as with a seed key file others may read; a new directory and the files the
    service creates are owner-only, so this is a directory made or files left by someone else."""
    import shlex

    import structlog

    if not found:
        return
    structlog.get_logger("thirteen.files").warning(
        "data_open_to_others", paths={str(path): oct(mode) for path, mode in found.items()}
    )
    listed = ", ".join(f"{path} (mode {oct(mode)})" for path, mode in found.items())
    fixes = [f"chmod 700 {shlex.quote(str(data))}"] if data in found else []
    files = [shlex.quote(str(path)) for path in found if path != data]
    fixes += [f"chmod 600 {' '.join(files)}"] if files else []
    say(
        f"thirteen serve: other users may read {listed}, where hands in progress and keys are "
        f"kept; serving all the same. To close it: {'; '.join(fixes)}"
    )


def _banner(
    args: argparse.Namespace,
    app: Thirteen,
    tls: ServerTls | None,
    metrics: Metrics | None,
    port: int,
    tiles: TilesEndpoint | None = None,
) -> None:
    """What a person starting ``serve`` reads once it serves: where, how, and what to try; and
    the effective configuration, logged."""
    log_effective(args)
    host = args.address.rsplit(":", 1)[0]
    transport = "plaintext" if tls is None else "mutual TLS" if tls.mutual else "TLS"
    client = "" if tls is None else " --ca CA.pem"
    client += " --cert CLIENT.pem --key CLIENT.key" if tls is not None and tls.mutual else ""
    say(
        f"thirteen: serving gRPC on {host}:{port} over {transport}"
        f" (store: {app.database.kind})."
        f" Try: {sys.argv[0]} demo --address {host}:{port}{client}"
    )
    say_metrics(metrics)
    serve_tiles.say(tiles)
