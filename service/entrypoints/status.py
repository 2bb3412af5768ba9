"""``thirteen status``: what a store holds and what an upgrade would do to it
(``service.tools.store_status``); it reads, and writes nothing."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from service.entrypoints.options import Commands, add_data
from service.tools.terminal import read_store


def register(commands: Commands) -> None:
    """``status``."""
    parser = commands.add_parser(
        "status",
        help="what a store holds: events and their versions, views' schema, seed key ids in "
        "use, the transparency log, and upgrade steps pending",
    )
    add_data(parser)
    parser.add_argument(
        "--seed-key",
        type=Path,
        metavar="FILE",
        help="the seed key file to compare with the key ids in use (default <data>/seed.key; "
        "never created)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from service import logging as service_logging
    from service.tools.store_status import status, text

    service_logging.configure("warning")  # the status is the output, on stdout
    app = read_store("status", args.data)
    if isinstance(app, int):
        return app
    try:
        found = status(app, Path(args.data), args.seed_key)
    finally:
        app.close()
    print(json.dumps(found.as_dict(), indent=2) if args.json else text(found))
    return 0
