"""The ``thirteen`` command line: the parser, assembled from one module per command group, each
registering its commands (and the function each one runs) with ``register(commands)``.

Bad input is answered with a one-line message on stderr and exit status 2; nothing here prints
a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from service.entrypoints import (
    audit,
    backup,
    console,
    demo,
    keys,
    offline,
    restore,
    rng,
    serve,
    status,
    store,
    witness,
    worker,
)
from service.entrypoints.options import Parser

GROUPS = (
    offline,
    serve,
    worker,
    store,
    status,
    backup,
    restore,
    audit,
    demo,
    keys,
    witness,
    console,
    rng,
)
"""Every command group, in the order ``thirteen --help`` lists them."""


def build_parser() -> Parser:
    parser = Parser(prog="thirteen", description="十三水 (Thirteen) rules engine and service.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in GROUPS:
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
