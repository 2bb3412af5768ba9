"""The ``thirteen`` command line: its arguments, and which command runs.

Bad input is answered with a one-line message on stderr and exit status 2; nothing here prints
a traceback. Each command's body is in the module named for it: ``offline`` (score, suggest,
deal), ``store_commands`` (serve, projections rebuild, replay, explain), ``audit``, ``demo``,
``dev_certs``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from domain.shuffle import SEED_BYTES
from service.tools import audit, offline, store_commands
from service.tools.console import EXIT_BAD_INPUT


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line instead of argparse's usage block (exit status 2 as argparse's own)."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see --help)\n")


def _seed(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"server seed {text!r} is not hex") from None
    if len(seed) != SEED_BYTES:
        raise argparse.ArgumentTypeError(
            f"server seed must be {SEED_BYTES} bytes ({2 * SEED_BYTES} hex digits), got {len(seed)}"
        )
    return seed


def _players(text: str) -> int:
    if not text.isdigit() or not 2 <= int(text) <= 4:
        raise argparse.ArgumentTypeError(f"players must be 2, 3 or 4, got {text!r}")
    return int(text)


def _address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"address must be HOST:PORT, got {text!r}")
    return text


def _rounds(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(
            f"rounds must be a whole number from 1 to 100, got {text!r}"
        )
    return int(text)


def _demo(args: argparse.Namespace) -> int:
    """Four bots play a few rounds through the gRPC API, narrated."""
    from service.security.tls import TlsConfigError, channel_credentials
    from service.tools.demo import main as demo

    credentials = None
    if args.ca is not None:
        if args.address is None:
            return _refuse("demo", "--ca needs --address (the demo's own server is plaintext)")
        try:
            credentials = channel_credentials(args.ca, args.cert, args.key)
        except TlsConfigError as error:
            return _refuse("demo", str(error))
    elif args.cert is not None or args.key is not None:
        return _refuse("demo", "--cert and --key need --ca (the CA that signed the server's)")
    return demo(args.address, args.rounds, args.seed, credentials=credentials)


def _dev_certs(args: argparse.Namespace) -> int:
    """Development certificates and a policy for mutual TLS on this machine."""
    from service.tools.dev_certs import write

    return write(args.dir, force=args.force)


def _refuse(command: str, message: str) -> int:
    print(f"thirteen {command}: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="thirteen", description="十三水 (Thirteen) rules engine and service.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    score = commands.add_parser(
        "score", help="score rounds: JSON Lines on stdin, one result line per round"
    )
    score.set_defaults(run=offline.score)
    suggest = commands.add_parser(
        "suggest", help="qualifying specials and an arrangement for 13 cards (JSON Lines)"
    )
    suggest.set_defaults(run=offline.suggest)
    dealer = commands.add_parser("deal", help="recompute a provably fair deal (R12)")
    dealer.add_argument("--server-seed", type=_seed, required=True, help="64 hex digits")
    dealer.add_argument("--client-seed", default="", help="the caller's seed (default empty)")
    dealer.add_argument("--round-id", required=True)
    dealer.add_argument("--players", type=_players, required=True, help="2 to 4")
    dealer.set_defaults(run=offline.deal)
    serve = commands.add_parser("serve", help="serve the gRPC API")
    serve.add_argument(
        "--address",
        type=_address,
        default="127.0.0.1:50051",
        help="HOST:PORT to listen on (default 127.0.0.1:50051; port 0 picks one)",
    )
    serve.add_argument(
        "--data", default="var", help="data directory for the SQLite store (default ./var)"
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--seed-key",
        type=Path,
        metavar="FILE",
        help="the keys server seeds are derived from, one per line, the current first "
        "(default <data>/seed.key, created when missing; every replica needs the same file)",
    )
    tls = serve.add_argument_group(
        "transport security", "an address other than loopback needs TLS, or --insecure"
    )
    tls.add_argument("--tls-cert", type=Path, metavar="FILE", help="server certificate (PEM)")
    tls.add_argument("--tls-key", type=Path, metavar="FILE", help="its private key (PEM)")
    tls.add_argument(
        "--client-ca",
        type=Path,
        metavar="FILE",
        help="require client certificates signed by this CA (mutual TLS)",
    )
    tls.add_argument(
        "--policy",
        type=Path,
        metavar="FILE",
        help="TOML mapping client identities to roles (default: every caller is admin)",
    )
    tls.add_argument(
        "--insecure",
        action="store_true",
        help="serve plaintext on an address other than loopback (anyone reaching it is admin)",
    )
    serve.set_defaults(run=store_commands.serve)
    projections = commands.add_parser("projections", help="maintain the read models")
    tasks = projections.add_subparsers(dest="task", required=True, parser_class=_Parser)
    rebuild = tasks.add_parser("rebuild", help="drop the views and replay the whole log")
    rebuild.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    rebuild.set_defaults(run=store_commands.rebuild)
    auditor = commands.add_parser(
        "audit", help="verify rounds against the rules, from the store or from an export"
    )
    source = auditor.add_mutually_exclusive_group(required=True)
    source.add_argument("--round", help="the round to audit (with --data)")
    source.add_argument("--all", action="store_true", help="every round in the store")
    source.add_argument("--file", help="an ExportRound document: audit it offline")
    auditor.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    auditor.add_argument(
        "--receipt", help="the receipt Reveal returned, to check the chain still ends there"
    )
    auditor.add_argument("--json", action="store_true", help="machine-readable output")
    auditor.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes for --all (default 1: on two cores more were slower, as the log is "
        "read in one pass first)",
    )
    auditor.set_defaults(run=audit.run)
    demo = commands.add_parser(
        "demo", help="four bots play a few rounds against a server (or one started for the demo)"
    )
    demo.add_argument(
        "--address",
        type=_address,
        default=None,
        help="HOST:PORT of a running server (default: start one on a temporary SQLite store)",
    )
    demo.add_argument("--rounds", type=_rounds, default=3, help="rounds to play (default 3)")
    demo.add_argument(
        "--seed", default=None, help="seeds the client seeds and the foul draft (default random)"
    )
    demo.add_argument(
        "--ca", type=Path, metavar="FILE", help="connect over TLS, trusting this CA (PEM)"
    )
    demo.add_argument(
        "--cert", type=Path, metavar="FILE", help="client certificate for mutual TLS (PEM)"
    )
    demo.add_argument("--key", type=Path, metavar="FILE", help="its private key (PEM)")
    demo.set_defaults(run=_demo)
    certs = commands.add_parser(
        "dev-certs",
        help="write a development CA, server and per-role client certificates and a policy",
    )
    certs.add_argument("dir", type=Path, metavar="DIR", help="where to write them")
    certs.add_argument("--force", action="store_true", help="overwrite files already there")
    certs.set_defaults(run=_dev_certs)
    replay = commands.add_parser(
        "replay", help="a round's events in order, each with the round's state after it"
    )
    replay.add_argument("--round", required=True, help="the round id")
    replay.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    replay.add_argument("--json", action="store_true", help="a JSON list of {event, state}")
    replay.set_defaults(run=store_commands.replay)
    explain = commands.add_parser(
        "explain", help="a round's dispute report: hands, comparisons, coins, fairness proof"
    )
    explain.add_argument("--round", required=True, help="the round id")
    explain.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    explain.add_argument("--player", help="tell the report from this player's point of view")
    explain.add_argument("--html", metavar="FILE", help="also write the report as one HTML page")
    explain.set_defaults(run=store_commands.explain)
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
