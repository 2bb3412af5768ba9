"""``thirteen demo``: four bots (or as many as ``--ruleset`` seats) play a few rounds through the
real gRPC API, narrated (``service.tools.demo``), against a running server or one started here
for the demo."""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import grpc

from service.entrypoints.options import (
    Commands,
    add_client_tls,
    client_credentials,
    host_port,
    refuse,
    whole_number,
)

PRESET_NAMES = ("standard", "fujian", "puxian", "puxian5", "puxian6")
"""``domain.rules.ruleset.ALL_PRESETS``'s names, written out so that ``thirteen --help`` imports
no domain module."""


def register(commands: Commands) -> None:
    """``demo``."""
    demo = commands.add_parser(
        "demo", help="four bots play a few rounds against a server (or one started for the demo)"
    )
    demo.add_argument(
        "--address",
        type=host_port,
        default=None,
        help="HOST:PORT of a running server (default: start one on a temporary SQLite store)",
    )
    demo.add_argument(
        "--rounds",
        type=whole_number(1, 100, "rounds"),
        default=3,
        help="rounds to play (default 3)",
    )
    demo.add_argument(
        "--seed", default=None, help="seeds the client seeds and the foul draft (default random)"
    )
    demo.add_argument(
        "--ruleset",
        choices=PRESET_NAMES,
        default="standard",
        help="the preset the table opens with (default standard); puxian5 and puxian6 seat "
        "five and six bots (R14.6)",
    )
    add_client_tls(demo, "client certificate for mutual TLS (PEM)")
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Four bots play a few rounds through the gRPC API, narrated."""
    from service.security.tls import TlsConfigError

    if args.ca is not None and args.address is None:
        return refuse("demo", "--ca needs --address (the demo's own server is plaintext)")
    try:
        credentials = client_credentials(args, "the server's")
    except TlsConfigError as error:
        return refuse("demo", str(error))
    return main(args.address, args.rounds, args.seed, credentials=credentials, preset=args.ruleset)


def main(
    address: str | None,
    rounds: int,
    seed: str | None,
    out: TextIO = sys.stdout,
    *,
    credentials: grpc.ChannelCredentials | None = None,
    preset: str = "standard",
) -> int:
    """Run the demo (over TLS with ``credentials``); a problem is one line on stderr and exit
    status 1."""
    from service.tools.demo import EXIT_FAILED, play
    from service.tools.demo_client import DemoFailed

    seed = seed if seed is not None else secrets.token_hex(4)
    try:
        if address is not None:
            play(address, address, rounds, seed, out, credentials, preset)
        else:
            with local_server() as local:
                where = f"{local}, started for the demo on a temporary SQLite store"
                play(local, where, rounds, seed, out, preset=preset)
    except DemoFailed as error:
        out.flush()
        print(f"thirteen demo: {error}", file=sys.stderr)
        return EXIT_FAILED
    return 0


@contextmanager
def local_server() -> Iterator[str]:
    """Serve on 127.0.0.1:0 from a temporary SQLite store on a thread of its own; yield the
    address, then stop gracefully and delete the store."""
    from service import logging as service_logging
    from service.bootstrap import ServerOnThread
    from service.opening import open_app
    from service.tools.demo_client import DemoFailed

    service_logging.configure("error")  # the narration is the output, not the server's log
    with tempfile.TemporaryDirectory(prefix="thirteen-demo-") as data:
        try:
            app = open_app(Path(data), environ={"THIRTEEN_STORE": "sqlite"})
            server = ServerOnThread(app)
        except Exception as error:  # a store or a port we cannot have
            raise DemoFailed(f"cannot start a local server: {error}") from None
        try:
            yield f"127.0.0.1:{server.running.port}"
        finally:
            server.stop()
