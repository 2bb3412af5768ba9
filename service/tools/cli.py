"""The ``thirteen`` command line.

Bad input is answered with a one-line message on stderr and exit status 2; nothing here prints
a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from domain.cards import format_cards
from domain.errors import RuleError
from domain.shuffle import SEED_BYTES, commitment, deal
from service.tools.score import score_line, suggest_line

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line instead of argparse's usage block (exit status 2 as argparse's own)."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see --help)\n")


def _json_lines(
    handler: Callable[[Any], dict[str, Any]], stdin: TextIO, stdout: TextIO, stderr: TextIO
) -> int:
    """Answer each input line in order; a bad line yields ``{"error": ...}`` in its place."""
    status = 0
    for number, line in enumerate(stdin, start=1):
        if not line.strip():
            continue
        try:
            result = handler(json.loads(line))
        except json.JSONDecodeError as error:
            result = {
                "error": f"line {number}: malformed JSON: {error.msg} at column {error.colno}"
            }
        except RuleError as error:
            result = {"error": f"line {number}: {error.message}"}
        if "error" in result:
            status = EXIT_BAD_INPUT
            print(f"thirteen: {result['error']}", file=stderr)
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        stdout.flush()
    return status


def _score(args: argparse.Namespace) -> int:
    return _json_lines(score_line, sys.stdin, sys.stdout, sys.stderr)


def _suggest(args: argparse.Namespace) -> int:
    return _json_lines(suggest_line, sys.stdin, sys.stdout, sys.stderr)


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


def _deal(args: argparse.Namespace) -> int:
    """R12: recompute a deal from its seeds."""
    hands = deal(args.server_seed, args.client_seed, args.round_id, args.players)
    out = {"commitment": commitment(args.server_seed), "hands": [format_cards(h) for h in hands]}
    print(json.dumps(out))
    return 0


def _address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"address must be HOST:PORT, got {text!r}")
    return text


def _serve(args: argparse.Namespace) -> int:
    """Serve the gRPC API until SIGTERM or SIGINT."""
    import asyncio

    from service import logging as service_logging
    from service.rpc.server import serve_forever
    from service.storage import StoreConfigError, open_app

    service_logging.configure(args.log_level)
    try:
        app = open_app(Path(args.data))
    except StoreConfigError as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as error:  # the database is unreachable or unusable
        print(f"thirteen serve: cannot open the event store: {error}", file=sys.stderr)
        return 1

    def started(running: object) -> None:
        port = getattr(running, "port", 0)
        host = args.address.rsplit(":", 1)[0]
        print(
            f"thirteen: serving gRPC on {host}:{port} (store: {app.env.get('PERSISTENCE_MODULE')})."
            f" Try: {sys.argv[0]} demo --address {host}:{port}",
            file=sys.stderr,
            flush=True,
        )

    try:
        asyncio.run(serve_forever(app, args.address, on_started=started))
    except OSError as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return 1
    return 0


def _rounds(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(
            f"rounds must be a whole number from 1 to 100, got {text!r}"
        )
    return int(text)


def _demo(args: argparse.Namespace) -> int:
    """Four bots play a few rounds through the gRPC API, narrated."""
    from service.tools.demo import main as demo

    return demo(args.address, args.rounds, args.seed)


class _ProgressBar:
    """A one-line progress bar on stderr (a terminal redraws it; a log gets a few lines)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, position: int, last: int) -> None:
        share = 1.0 if last <= 0 else min(position / last, 1.0)
        percent = int(share * 100)
        if percent == self.shown or (not self.tty and percent % 10 and percent != 100):
            return
        self.shown = percent
        bar = "#" * (percent // 4) + "." * (25 - percent // 4)
        end = "\r" if self.tty and percent < 100 else "\n"
        print(
            f"{self.label} [{bar}] {percent:3d}% ({position}/{last})",
            end=end,
            file=sys.stderr,
            flush=True,
        )


def _rebuild(args: argparse.Namespace) -> int:
    """Drop the views and replay the whole event log into them."""
    import time

    from projections.projector import rebuild
    from service.storage import open_views

    app = _read_store("projections rebuild", args.data)
    if isinstance(app, int):
        return app
    store, leadership = open_views(app)
    if not leadership.acquire():
        print(
            "thirteen projections rebuild: a running server is keeping the views; stop "
            "every server on this store first",
            file=sys.stderr,
        )
        return 1
    try:
        started = time.perf_counter()
        count = rebuild(app, store, _ProgressBar("rebuilding views"))
        seconds = time.perf_counter() - started
        print(
            f"rebuilt the views from {count} events in {seconds:.1f} s "
            f"({count / seconds if seconds else 0:,.0f} events/s)",
            file=sys.stderr,
        )
    finally:
        leadership.release()
        store.close()
        app.close()
    return 0


def _open_store(command: str, data: str) -> Any:
    """The application on the configured store, or a one-line error and an exit status."""
    from service.storage import StoreConfigError, open_app

    try:
        return open_app(Path(data))
    except StoreConfigError as error:
        print(f"thirteen {command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as error:
        print(f"thirteen {command}: cannot open the event store: {error}", file=sys.stderr)
        return 1


def _finding_line(finding: Any) -> str:
    mark = "ok  " if finding.ok else "FAIL"
    where = f"  [{finding.event}]" if finding.event else ""
    return f"  {mark} {finding.rule:<6} {finding.message}{where}"


def _audit(args: argparse.Namespace) -> int:
    """Verify rounds against the rules: from the store, or offline from an export."""
    from domain.audit import passed
    from service.evidence import Decoder, Evidence, StoreReader, audit, audit_many, from_document

    if args.receipt and args.all:
        print(
            "thirteen audit: --receipt belongs to one round (--round or --file), not --all",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    decoder = Decoder()
    reports: list[tuple[str, list[Any]]] = []
    if args.file:
        try:
            evidence: Evidence = from_document(Path(args.file).read_text())
        except OSError as error:
            print(f"thirteen audit: cannot read {args.file}: {error.strerror}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except (ValueError, KeyError, TypeError) as error:
            print(f"thirteen audit: {args.file} is not a round export: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        evidence.receipt = args.receipt or evidence.receipt
        reports.append((evidence.round_id, audit(evidence, decoder)))
    else:
        app = _read_store("audit", args.data)
        if isinstance(app, int):
            return app
        from service.rpc.audit import result_reader
        from service.storage import open_views

        views, _ = open_views(app)
        views_reader = result_reader(views)

        def result_of(round_id: str) -> Any:
            try:
                return views_reader(round_id)
            except Exception:  # no views yet: audit the events alone
                return None

        reader = StoreReader(app, result_of)
        try:
            if args.round:
                try:
                    evidence = reader.evidence(args.round)
                except RuleError as error:
                    print(f"thirteen audit: {error.message}", file=sys.stderr)
                    return EXIT_BAD_INPUT
                evidence.receipt = args.receipt or ""
                reports.append((args.round, audit(evidence, decoder)))
            else:
                bar = None if args.json else _ProgressBar("reading the log")
                evidences = []
                for found, extra in reader.every_round(bar):
                    if found is None:
                        if extra:
                            reports.append(("(streams outside rounds)", extra))
                        continue
                    evidences.append(found)
                reports += audit_many(evidences, args.workers)
        finally:
            views.close()
            app.close()
    failed = [(r, f) for r, f in reports if not passed(f)]
    if args.json:
        print(
            json.dumps(
                {
                    "ok": not failed,
                    "rounds": [
                        {"round_id": r, "ok": passed(f), "findings": [vars(x) for x in f]}
                        for r, f in reports
                    ],
                },
                ensure_ascii=False,
            )
        )
    else:
        for round_id, findings in reports:
            shown = findings if (args.round or args.file) else [x for x in findings if not x.ok]
            if shown or args.round or args.file:
                verdict = "passes" if passed(findings) else "FAILS"
                print(f"round {round_id} {verdict}")
                for finding in shown:
                    print(_finding_line(finding))
        checks = sum(len(f) for _, f in reports)
        print(
            f"audited {len(reports)} round(s), {checks} checks: "
            f"{'all passed' if not failed else f'{len(failed)} round(s) FAILED'}"
        )
    return 1 if failed else 0


def _read_store(command: str, data: str) -> Any:
    """``_open_store`` for commands that only read: a missing SQLite store is an error here,
    not a new empty one."""
    store = Path(data) / "thirteen.sqlite"
    if os.environ.get("THIRTEEN_STORE", "sqlite") == "sqlite" and not store.is_file():
        print(f"thirteen {command}: no event store in {data} (expected {store})", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _open_store(command, data)


def _replay(args: argparse.Namespace) -> int:
    """A round's events in order, each with the round's state after it."""
    from service.application import check_id
    from service.tools.replay import render_json, render_text, round_events, steps

    app = _read_store("replay", args.data)
    if isinstance(app, int):
        return app
    try:
        found = steps(round_events(app, check_id(args.round, "round")))
    except RuleError as error:
        print(f"thirteen replay: {error.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        app.close()
    sys.stdout.write(render_json(found) if args.json else render_text(args.round, found))
    return 0


def _explain(args: argparse.Namespace) -> int:
    """A round's dispute report, in text and optionally as one HTML page."""
    from service.application import check_id
    from service.tools.explain import load, render_text
    from service.tools.explain_html import render_html

    app = _read_store("explain", args.data)
    if isinstance(app, int):
        return app
    try:
        report = load(app, check_id(args.round, "round"))
        if args.player is not None:
            report.player(args.player)
    except RuleError as error:
        print(f"thirteen explain: {error.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        app.close()
    if args.html:
        try:
            Path(args.html).write_text(render_html(report, args.player), encoding="utf-8")
        except OSError as error:
            print(f"thirteen explain: cannot write {args.html}: {error.strerror}", file=sys.stderr)
            return EXIT_BAD_INPUT
    sys.stdout.write(render_text(report, args.player))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="thirteen", description="十三水 (Thirteen) rules engine and service.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    score = commands.add_parser(
        "score", help="score rounds: JSON Lines on stdin, one result line per round"
    )
    score.set_defaults(run=_score)
    suggest = commands.add_parser(
        "suggest", help="qualifying specials and an arrangement for 13 cards (JSON Lines)"
    )
    suggest.set_defaults(run=_suggest)
    dealer = commands.add_parser("deal", help="recompute a provably fair deal (R12)")
    dealer.add_argument("--server-seed", type=_seed, required=True, help="64 hex digits")
    dealer.add_argument("--client-seed", default="", help="the caller's seed (default empty)")
    dealer.add_argument("--round-id", required=True)
    dealer.add_argument("--players", type=_players, required=True, help="2 to 4")
    dealer.set_defaults(run=_deal)
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
    serve.set_defaults(run=_serve)
    projections = commands.add_parser("projections", help="maintain the read models")
    tasks = projections.add_subparsers(dest="task", required=True, parser_class=_Parser)
    rebuild = tasks.add_parser("rebuild", help="drop the views and replay the whole log")
    rebuild.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    rebuild.set_defaults(run=_rebuild)
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
    auditor.set_defaults(run=_audit)
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
    demo.set_defaults(run=_demo)
    replay = commands.add_parser(
        "replay", help="a round's events in order, each with the round's state after it"
    )
    replay.add_argument("--round", required=True, help="the round id")
    replay.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    replay.add_argument("--json", action="store_true", help="a JSON list of {event, state}")
    replay.set_defaults(run=_replay)
    explain = commands.add_parser(
        "explain", help="a round's dispute report: hands, comparisons, coins, fairness proof"
    )
    explain.add_argument("--round", required=True, help="the round id")
    explain.add_argument(
        "--data", default="var", help="data directory of the SQLite store (default ./var)"
    )
    explain.add_argument("--player", help="tell the report from this player's point of view")
    explain.add_argument("--html", metavar="FILE", help="also write the report as one HTML page")
    explain.set_defaults(run=_explain)
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
