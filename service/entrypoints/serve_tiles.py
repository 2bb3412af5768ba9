"""``serve --tiles HOST:PORT``: the transparency log served as C2SP ``tlog-tiles`` over plain
HTTP (``service.tiles``), listening before the store opens, as the metrics do."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from service.entrypoints.options import host_port
from service.entrypoints.starting import say as say_line
from service.tools.terminal import EXIT_BAD_INPUT

if TYPE_CHECKING:
    from service.tiles import TilesEndpoint


def register(serve_parser: argparse.ArgumentParser) -> None:
    serve_parser.add_argument(
        "--tiles",
        type=host_port,
        metavar="HOST:PORT",
        help="serve the transparency log read-only over plain HTTP there as C2SP tlog-tiles: "
        "/checkpoint, /tile/<L>/<N> and /tile/entries/<N> (default: none; port 0 picks one)",
    )


def listening(args: argparse.Namespace) -> TilesEndpoint | int | None:
    """The tiles endpoint listening on ``--tiles`` (None without it); or, after one line saying
    why it cannot, the exit status: 2 for an address that is not HOST:PORT, 1 for one that is
    taken or not this machine's."""
    if args.tiles is None:
        return None
    from service.http_server import EndpointError
    from service.tiles import TilesEndpoint

    try:
        return TilesEndpoint(args.tiles)
    except EndpointError as error:
        print(f"thirteen {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT if error.malformed else 1


def say(tiles: TilesEndpoint | None) -> None:
    """Where the tiles are served, on stderr (nothing without them)."""
    if tiles is not None:
        say_line(f"thirteen: serving the log's tiles on http://{tiles.address}/")
