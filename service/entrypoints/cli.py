"""The ``thirteen`` command line: the parser, assembled from one module per command group, each
registering its commands (and the function each one runs) with ``register(commands)``.

Bad input is answered with a one-line message on stderr and exit status 2; nothing here prints
a traceback.
"""

from __future__ import annotations

import errno
import io
import os
import signal
import sys
from collections.abc import Sequence

from service.entrypoints import (
    audit,
    backup,
    configuring,
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
from service.entrypoints.configuring import version
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
    parser.add_argument("--version", action="version", version=f"thirteen {version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in GROUPS:
        group.register(commands)
    for command in configuring.CONFIGURED:  # flags also from THIRTEEN_* and a TOML file
        configuring.enable(commands.choices[command], command)
        commands.choices[command].configured_as = command
        # Exact flags only: a setting's name is its flag's, and an abbreviation the command
        # line took (--conf) would be a flag that the settings' reading did not see.
        commands.choices[command].allow_abbrev = False
    return parser


EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""The reader of standard output stopped reading (``| head``): the status a shell sees of a
program the signal stopped, without a word on stderr."""
EXIT_CANNOT_WRITE = 1
WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show 十三水 gets \u escapes
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    try:
        status = int(args.run(args))
        sys.stdout.flush()  # here, where a full disk is one line, not at the exit
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _stdout_discarded()
        return EXIT_BROKEN_PIPE
    except OSError as error:
        if error.errno not in WRITE_ERRORS:
            raise
        _stdout_discarded()
        print(f"thirteen: cannot write the output: {error.strerror}", file=sys.stderr)
        return EXIT_CANNOT_WRITE


def _stdout_discarded() -> None:
    """Standard output pointed at /dev/null, so that the interpreter's own flush at the exit
    of what is still buffered fails no more."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
