"""What the command groups share on the command line: the parser that answers bad input in one
line, the options several commands take (``--data``, ``--log-level``, the TLS client files),
and the types that check an argument's value before any command runs."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from service.tools.terminal import EXIT_BAD_INPUT

if TYPE_CHECKING:
    import grpc

Commands: TypeAlias = "argparse._SubParsersAction[Parser]"
"""What a command group registers its commands on (``register(commands)``)."""


class Parser(argparse.ArgumentParser):
    configured_as: str | None = None
    """The command whose flags also come from the environment and a TOML file
    (``service.entrypoints.configuring``), or None."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.configured_as is None or args is None or namespace is not None:
            return super().parse_known_args(args, namespace)
        from service.entrypoints import configuring

        return configuring.parse_known_args(
            self, self.configured_as, super().parse_known_args, args
        )

    def error(self, message: str) -> NoReturn:
        """One line instead of argparse's usage block (exit status 2 as argparse's own)."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see --help)\n")


def refuse(command: str, message: str) -> int:
    """One line on stderr naming the command; the exit status of bad input."""
    print(f"thirteen {command}: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def add_data(parser: argparse.ArgumentParser) -> None:
    """``--data``: where the SQLite store is (PostgreSQL is chosen by ``THIRTEEN_STORE``)."""
    parser.add_argument(
        "--data",
        type=directory,
        default="var",
        help="data directory of the SQLite store (default ./var)",
    )


def directory(text: str) -> str:
    """A directory's path; not empty, which would mean the current directory by accident (an
    unset variable in ``--data "$DIR"``): ``.`` says so on purpose."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a directory, got '' (give . for this one)")
    return text


def add_log_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )


def host_port(text: str) -> str:
    """``HOST:PORT`` (the port 0 to 65535; 0 picks one where the command listens)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"address must be HOST:PORT, got {text!r}")
    return text


def whole_number(low: int, high: int, what: str = "") -> type[int]:
    """A type accepting a whole number from ``low`` to ``high``, named ``what`` in its error."""

    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            named = f"{what} must be" if what else "must be"
            raise argparse.ArgumentTypeError(
                f"{named} a whole number from {low} to {high}, got {text!r}"
            )
        return int(text)

    parse.__name__ = what or "whole number"
    return parse  # type: ignore[return-value]


def seconds(low: float, high: float, what: str) -> type[float]:
    """A type accepting a number of seconds from ``low`` to ``high`` (not nan, not inf)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:  # nan and inf fail too
            raise argparse.ArgumentTypeError(
                f"{what} must be a number of seconds from {low:g} to {high:g}, got {text[:40]!r}"
            )
        return value

    parse.__name__ = what
    return parse  # type: ignore[return-value]


DNS_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"


def server_name(text: str) -> str:
    """A DNS name (what a certificate names)."""
    if len(text) > 253 or not re.fullmatch(rf"{DNS_LABEL}(\.{DNS_LABEL})*", text):
        raise argparse.ArgumentTypeError(f"must be a DNS name, got {text!r}")
    return text


def add_client_tls(
    parser: argparse.ArgumentParser, cert_help: str, key_flag: str = "--key"
) -> None:
    """``--ca``, ``--cert`` and its key: how a client command reaches a server over TLS."""
    parser.add_argument(
        "--ca", type=Path, metavar="FILE", help="connect over TLS, trusting this CA (PEM)"
    )
    parser.add_argument("--cert", type=Path, metavar="FILE", help=cert_help)
    parser.add_argument(key_flag, type=Path, metavar="FILE", help="its private key (PEM)")


def client_credentials(
    args: argparse.Namespace, signed: str, key_flag: str = "--key"
) -> grpc.ChannelCredentials | None:
    """The TLS credentials ``add_client_tls``'s flags ask for (None: plaintext), or
    ``TlsConfigError`` with the line to print; ``signed`` names the certificate the CA signed."""
    from service.security.tls import TlsConfigError, channel_credentials

    key = getattr(args, key_flag.lstrip("-").replace("-", "_"))
    if args.ca is None:
        if args.cert is not None or key is not None:
            raise TlsConfigError(f"--cert and {key_flag} need --ca (the CA that signed {signed})")
        return None
    return channel_credentials(args.ca, args.cert, key)
