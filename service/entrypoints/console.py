"""``thirteen console``: serve the dispute console until SIGINT or SIGTERM.

The console has no login of its own: whoever reaches its port reads every finished round (the
hands, the seeds, the players' balances) with the console's own certificate. So it listens on
loopback only unless ``--allow-remote`` says otherwise, and then it belongs behind something
that authenticates staff (a reverse proxy with single sign-on, a VPN).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING

from service.entrypoints.configuring import log_effective
from service.entrypoints.options import (
    Commands,
    add_client_tls,
    add_log_level,
    client_credentials,
    host_port,
    server_name,
    whole_number,
)
from service.tools.terminal import EXIT_BAD_INPUT

if TYPE_CHECKING:
    import grpc

EXIT_CANNOT_LISTEN = 1
"""A well-formed address that cannot be listened on (taken, or not this machine's): as
``serve`` for its gRPC and metrics ports. Bad input (a malformed address, a certificate that is
not one) is ``EXIT_BAD_INPUT``."""
IDLE_SECONDS = 15.0
"""How long a connection may stay without a request in progress, whether it never finished
sending one or waits for the next, before the console closes it. aiohttp's default (an hour)
lets a few thousand unfinished requests (slowloris) use up the process's file descriptors and
lock staff out; a proxy in front that keeps idle connections open must close them sooner."""


SERVICE_CALLS = (2, 64)
"""``--max-service-calls``: a round page makes two calls at once."""


def register(commands: Commands) -> None:
    """``console``."""
    console = commands.add_parser(
        "console",
        help="the dispute console: a read-only web page per round, player and table, read from "
        "a running service over gRPC",
    )
    console.add_argument(
        "--address",
        type=host_port,
        default="127.0.0.1:50051",
        help="HOST:PORT of the service (default 127.0.0.1:50051)",
    )
    console.add_argument(
        "--listen",
        type=host_port,
        default="127.0.0.1:8080",
        help="HOST:PORT to serve the pages on (default 127.0.0.1:8080; port 0 picks one)",
    )
    console.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on an address other than loopback: the console has no login, so only "
        "behind a proxy that authenticates staff",
    )
    add_client_tls(console, "client certificate (mutual TLS): auditor role")
    console.add_argument(
        "--tls-server-name",
        type=server_name,
        metavar="NAME",
        help="the DNS name the service's certificate holds, when --address names the service "
        "otherwise (by IP, or through a tunnel)",
    )
    console.add_argument(
        "--max-service-calls",
        type=whole_number(*SERVICE_CALLS),
        metavar="N",
        help="calls to the service under way at once (default 4; 2 to 64): the service's "
        "workers are the game's too; a page that waits 2 s for one is 503 with Retry-After",
    )
    add_log_level(console)
    console.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then serve; one line and exit status 2 when they cannot work, 1
    when the address to listen on cannot be had."""
    from service import logging as service_logging
    from service.security.tls import TlsConfigError, is_loopback

    def refuse(message: str) -> int:
        print(f"thirteen console: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT

    try:
        credentials = client_credentials(args, "the service's certificate")
    except TlsConfigError as error:
        return refuse(str(error))
    if args.tls_server_name is not None and credentials is None:
        return refuse("--tls-server-name needs --ca: it names the service's certificate")
    remote = not is_loopback(args.listen)
    if remote and not args.allow_remote:
        return refuse(
            f"--listen {args.listen} is not loopback: the console has no login and shows the "
            "hands of finished rounds to whoever reaches it; listen on 127.0.0.1, or give "
            "--allow-remote behind a proxy that authenticates staff"
        )
    service_logging.configure(args.log_level)
    try:
        return asyncio.run(_serve(args, credentials, remote))
    except KeyboardInterrupt:
        return 0


async def _serve(
    args: argparse.Namespace, credentials: grpc.ChannelCredentials | None, remote: bool
) -> int:
    from aiohttp import web

    from service.web.app import Runner, create_app
    from service.web.backend import MAX_CALLS, Backend

    host, _, port = args.listen.rpartition(":")
    host = host.strip("[]")
    backend = Backend(
        args.address,
        credentials,
        max_calls=args.max_service_calls or MAX_CALLS,
        server_name=args.tls_server_name,
    )
    runner = Runner(create_app(backend, loopback_only=not remote), keepalive_timeout=IDLE_SECONDS)
    await runner.setup()
    site = web.TCPSite(runner, host, int(port))
    try:
        await site.start()
    except OSError as error:  # well formed (the parser checked) but taken, or not this machine's
        await runner.cleanup()
        # asyncio words a failed bind "error while attempting to bind on address …"; the
        # system's own words are shorter. A name that does not resolve has a negative errno.
        number = error.errno or 0
        reason = os.strerror(number) if number > 0 else error.strerror
        print(
            f"thirteen console: cannot listen on {args.listen}: {reason or error}",
            file=sys.stderr,
        )
        return EXIT_CANNOT_LISTEN
    log_effective(args)  # serving: a refusal before stays one line
    bound = runner.addresses[0]
    where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    transport = "plaintext" if credentials is None else "TLS"
    if credentials is not None and args.cert is not None:
        transport = "mutual TLS"
    print(
        f"thirteen console: serving http://{where}:{bound[1]}/ for the service at "
        f"{args.address} ({transport}); read-only; Ctrl-C stops",
        flush=True,
    )
    if remote:
        print(
            "thirteen console: WARNING listening beyond loopback with no login of its own: "
            "keep it behind a proxy that authenticates staff",
            file=sys.stderr,
            flush=True,
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await runner.cleanup()
    return 0
