"""The ``thirteen`` command line: its arguments, and which command runs.

Bad input is answered with a one-line message on stderr and exit status 2; nothing here prints
a traceback. Each command's body is in the module named for it: ``offline`` (score, suggest,
deal), ``store_commands`` (serve, projections rebuild, replay, explain), ``audit``, ``demo``,
``dev_certs``; ``console`` is ``service.entrypoints.console``'s (a server of web pages, not a tool).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from domain.fairness.shuffle import SEED_BYTES
from service.entrypoints import offline, store
from service.entrypoints.terminal import EXIT_BAD_INPUT
from service.tools import audit, rng


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


def _player_seed(text: str) -> tuple[str, str]:
    player, sep, seed = text.partition("=")
    if not sep or not player:
        raise argparse.ArgumentTypeError(f"player seed must be PLAYER=SEED, got {text!r}")
    return player, seed


def _address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"address must be HOST:PORT, got {text!r}")
    return text


CHECKPOINT_INTERVALS = (0.1, 60.0)
"""``serve --checkpoint-interval``, in seconds: from a tenth of a second (each checkpoint is a
signature and a row) to a minute (an export waits for a checkpoint covering its round)."""


def _checkpoint_interval(text: str) -> float:
    low, high = CHECKPOINT_INTERVALS
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not low <= seconds <= high:  # nan and inf fail too
        raise argparse.ArgumentTypeError(
            f"checkpoint interval must be a number of seconds from {low:g} to {high:g}, "
            f"got {text[:40]!r}"
        )
    return seconds


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


def _seed_key_init(args: argparse.Namespace) -> int:
    """A new seed key file, never over an existing one."""
    from service.seed_keys import SeedKeyError, create

    if args.file.exists() or args.file.is_symlink():
        return _refuse("seed-key init", f"{args.file} exists: a seed key file is never replaced")
    try:
        ring = create(args.file)
    except FileExistsError:
        return _refuse("seed-key init", f"{args.file} exists: a seed key file is never replaced")
    except SeedKeyError as error:
        return _refuse("seed-key init", str(error))
    print(
        f"wrote {args.file} (key id {ring.current}); give every server of the store this file "
        "with --seed-key, keep it secret and back it up"
    )
    return 0


def _keys(task: str, args: argparse.Namespace) -> int:
    """``thirteen keys``: the transparency log's key pairs (``service.tools.log_keys``)."""
    from service.tools import log_keys

    run: Callable[[argparse.Namespace], int] = getattr(log_keys, task)
    return run(args)


def _witness(args: argparse.Namespace) -> int:
    """``thirteen witness`` (``service.tools.witness``)."""
    from service.tools.witness import run

    return run(args)


SERVICE_CALLS = (2, 64)
"""``console --max-service-calls``: a round page makes two calls at once."""


def _service_calls(text: str) -> int:
    low, high = SERVICE_CALLS
    if not text.isdigit() or not low <= int(text) <= high:
        raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}")
    return int(text)


DNS_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"


def _server_name(text: str) -> str:
    if len(text) > 253 or not re.fullmatch(rf"{DNS_LABEL}(\.{DNS_LABEL})*", text):
        raise argparse.ArgumentTypeError(f"must be a DNS name, got {text!r}")
    return text


def _console(args: argparse.Namespace) -> int:
    """``thirteen console`` (``service.entrypoints.console``)."""
    from service.entrypoints.console import run

    return run(args)


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
    dealer.add_argument(
        "--players", type=_players, help="2 to 4, seated as p0, p1, … (or give --seat-ids)"
    )
    dealer.add_argument(
        "--seat-ids",
        nargs="+",
        metavar="ID",
        help="the round's player ids in seat order, as GetRound lists them (2 to 4)",
    )
    dealer.add_argument(
        "--player-seed",
        type=_player_seed,
        action="append",
        default=[],
        metavar="PLAYER=SEED",
        help="a player's seed (R12.8), repeatable; PLAYER is a seat id (p0 … without --seat-ids)",
    )
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
        "--metrics",
        type=_address,
        metavar="HOST:PORT",
        help="serve Prometheus metrics over plain HTTP there, at /metrics (default: none; "
        "port 0 picks one)",
    )
    serve.add_argument(
        "--seed-key",
        type=Path,
        metavar="FILE",
        help="the keys server seeds are derived from, one per line, the current first "
        "(default <data>/seed.key, created on the first start with SQLite; a file given here, "
        "or any on PostgreSQL, must exist: `thirteen seed-key init FILE`; every replica needs "
        "the same file)",
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
    transparency = serve.add_argument_group("transparency log", "signed checkpoints (issue 12)")
    transparency.add_argument(
        "--log-key",
        type=Path,
        metavar="FILE",
        help="the key that signs the log's checkpoints (default <data>/log.key, created when "
        "missing; every replica needs the same file)",
    )
    transparency.add_argument(
        "--witness-key",
        action="append",
        default=[],
        metavar="KEY",
        help="a witness's public key (a vkey or a file holding one) whose cosignatures "
        "AddCosignature keeps; repeatable",
    )
    transparency.add_argument(
        "--checkpoint-interval",
        type=_checkpoint_interval,
        default=2.0,
        metavar="SECONDS",
        help="sign a checkpoint at most this often while the log grows (default 2; from 0.1 to 60)",
    )
    serve.set_defaults(run=store.serve)
    projections = commands.add_parser("projections", help="maintain the read models")
    tasks = projections.add_subparsers(dest="task", required=True, parser_class=_Parser)
    rebuild = tasks.add_parser("rebuild", help="drop the views and replay the whole log")
    rebuild.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    rebuild.set_defaults(run=store.rebuild)
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
        "--log-public-key",
        metavar="KEY",
        help="with --file: the log's public key (a vkey or a file holding one): check the "
        "export's checkpoint signature and every event's inclusion proof",
    )
    auditor.add_argument(
        "--earlier-checkpoint",
        metavar="FILE",
        help="with --file: a checkpoint (or an export holding one) kept from before: check "
        "the export's log extends it (the export must carry that consistency proof)",
    )
    auditor.add_argument(
        "--witness-key",
        action="append",
        default=[],
        metavar="KEY",
        help="with --file, repeatable: a witness's public key (a vkey or a file holding one): "
        "the export's checkpoint must carry its valid cosignature",
    )
    auditor.add_argument(
        "--witnesses-required",
        type=int,
        metavar="N",
        help="with --witness-key: how many of the given witnesses must have cosigned "
        "(default: all)",
    )
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
    keys = commands.add_parser("keys", help="the transparency log's and witnesses' key pairs")
    key_tasks = keys.add_subparsers(dest="task", required=True, parser_class=_Parser)
    keys_init = key_tasks.add_parser(
        "init", help="write log.key (mode 0600) and log.pub, or a witness's pair"
    )
    keys_init.add_argument("dir", type=Path, metavar="DIR", help="where to write them")
    keys_init.add_argument("--name", help="the key's name: the log's origin (default random)")
    keys_init.add_argument(
        "--witness", action="store_true", help="a witness's cosigning key (C2SP tlog-cosignature)"
    )
    keys_init.set_defaults(run=lambda args: _keys("keys_init", args))
    keys_show = key_tasks.add_parser("show", help="print the public key of a private key file")
    keys_show.add_argument("file", type=Path, metavar="FILE")
    keys_show.set_defaults(run=lambda args: _keys("keys_show", args))
    witness = commands.add_parser(
        "witness",
        help="watch a transparency log: check each checkpoint extends the last, cosign it; "
        "exit 3 with an ALARM line when it does not",
    )
    witness.add_argument(
        "--log", type=_address, required=True, metavar="HOST:PORT", help="the log's address"
    )
    witness.add_argument(
        "--log-public-key", required=True, metavar="KEY", help="the log's vkey or a file holding it"
    )
    witness.add_argument(
        "--key", type=Path, required=True, metavar="FILE", help="the witness's private key file"
    )
    witness.add_argument(
        "--state",
        type=Path,
        required=True,
        metavar="DIR",
        help="where the last accepted checkpoint is kept (a restart continues from it)",
    )
    witness.add_argument(
        "--interval", type=float, default=5.0, metavar="SECONDS", help="between polls (default 5)"
    )
    witness.add_argument(
        "--alarm-after",
        type=int,
        default=3,
        metavar="POLLS",
        help="alarm when the log shows a newer checkpoint without proving it extends the "
        "accepted one at this many polls in a row (default 3)",
    )
    witness.add_argument("--once", action="store_true", help="poll once and exit (for cron)")
    witness.add_argument("--ca", type=Path, metavar="FILE", help="connect over TLS with this CA")
    witness.add_argument("--cert", type=Path, metavar="FILE", help="client certificate (mTLS)")
    witness.add_argument("--cert-key", type=Path, metavar="FILE", help="its private key (PEM)")
    witness.set_defaults(run=_witness)
    console = commands.add_parser(
        "console",
        help="the dispute console: a read-only web page per round, player and table, read from "
        "a running service over gRPC",
    )
    console.add_argument(
        "--address",
        type=_address,
        default="127.0.0.1:50051",
        help="HOST:PORT of the service (default 127.0.0.1:50051)",
    )
    console.add_argument(
        "--listen",
        type=_address,
        default="127.0.0.1:8080",
        help="HOST:PORT to serve the pages on (default 127.0.0.1:8080; port 0 picks one)",
    )
    console.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on an address other than loopback: the console has no login, so only "
        "behind a proxy that authenticates staff",
    )
    console.add_argument("--ca", type=Path, metavar="FILE", help="reach the service over TLS")
    console.add_argument(
        "--cert", type=Path, metavar="FILE", help="client certificate (mutual TLS): auditor role"
    )
    console.add_argument("--key", type=Path, metavar="FILE", help="its private key (PEM)")
    console.add_argument(
        "--tls-server-name",
        type=_server_name,
        metavar="NAME",
        help="the DNS name the service's certificate holds, when --address names the service "
        "otherwise (by IP, or through a tunnel)",
    )
    console.add_argument(
        "--max-service-calls",
        type=_service_calls,
        metavar="N",
        help="calls to the service under way at once (default 4; 2 to 64): the service's "
        "workers are the game's too; a page that waits 2 s for one is 503 with Retry-After",
    )
    console.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    console.set_defaults(run=_console)
    seed_key = commands.add_parser("seed-key", help="the seed key file (`serve --seed-key`)")
    seed_key_tasks = seed_key.add_subparsers(dest="task", required=True, parser_class=_Parser)
    seed_key_init = seed_key_tasks.add_parser(
        "init", help="write a new seed key file with one random key (mode 0600)"
    )
    seed_key_init.add_argument("file", type=Path, metavar="FILE")
    seed_key_init.set_defaults(run=_seed_key_init)
    replay = commands.add_parser(
        "replay",
        help="a round's events in order, each with the round's state after it; or a player's "
        "wallet events, each with who called",
    )
    replayed = replay.add_mutually_exclusive_group(required=True)
    replayed.add_argument("--round", help="the round id")
    replayed.add_argument("--player", help="a player id: its wallet's events (who credited…)")
    replay.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    replay.add_argument("--json", action="store_true", help="a JSON list of {event, state}")
    replay.set_defaults(run=store.replay)
    explain = commands.add_parser(
        "explain", help="a round's dispute report: hands, comparisons, coins, fairness proof"
    )
    explain.add_argument("--round", required=True, help="the round id")
    explain.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    explain.add_argument("--player", help="tell the report from this player's point of view")
    explain.add_argument("--html", metavar="FILE", help="also write the report as one HTML page")
    explain.set_defaults(run=store.explain)
    rng_kit = commands.add_parser(
        "rng", help="the RNG kit for testing labs: collect raw words or deals, run the tests"
    )
    rng_tasks = rng_kit.add_subparsers(dest="task", required=True, parser_class=_Parser)
    collect = rng_tasks.add_parser(
        "collect", help="raw 32-bit words or dealt hands from the production shuffle (R12)"
    )
    wanted = collect.add_mutually_exclusive_group(required=True)
    wanted.add_argument(
        "--raw", type=rng.count, metavar="N", help="N words as drawn, before scaling (R12.3)"
    )
    wanted.add_argument(
        "--deals", type=rng.count, metavar="N", help="N deals to four seats, one per line"
    )
    collect.add_argument(
        "--binary",
        action="store_true",
        help="raw words as 4 big-endian bytes each, nothing else (NIST SP 800-22, dieharder)",
    )
    collect.add_argument("--out", type=Path, metavar="FILE", help="default: standard output")
    tester = rng_tasks.add_parser(
        "test", help="frequency, runs and serial correlation at 99%% confidence: a report"
    )
    sample = tester.add_mutually_exclusive_group()
    sample.add_argument(
        "--cards",
        type=rng.count,
        default=rng.DEFAULT_CARDS,
        metavar="N",
        help=f"deal at least N cards now (default {rng.DEFAULT_CARDS:,})",
    )
    sample.add_argument("--file", type=Path, help="test a text file `rng collect` wrote")
    tester.add_argument("--out", type=Path, metavar="FILE", help="also write the report there")
    for task in (collect, tester):
        task.add_argument(
            "--fixed-seed",
            type=rng.seed_key,
            metavar="HEX",
            help="a seed key (64 hex digits) for a reproducible run instead of fresh seeds",
        )
    collect.set_defaults(run=rng.collect)
    tester.set_defaults(run=rng.run_tests)
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
