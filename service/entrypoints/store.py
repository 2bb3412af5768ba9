"""``thirteen projections rebuild``, ``replay`` and ``explain``: the commands that read the event
store and never serve (``thirteen audit`` is ``service.tools.audit``'s)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from domain.errors import RuleError
from service.entrypoints.options import Commands, Parser, add_data
from service.tools.terminal import EXIT_BAD_INPUT, ProgressBar, read_store


def register(commands: Commands) -> None:
    """``projections rebuild``, ``replay`` and ``explain``."""
    projections = commands.add_parser("projections", help="maintain the read models")
    tasks = projections.add_subparsers(dest="task", required=True, parser_class=Parser)
    rebuild_parser = tasks.add_parser("rebuild", help="drop the views and replay the whole log")
    add_data(rebuild_parser)
    rebuild_parser.set_defaults(run=rebuild)
    replay_parser = commands.add_parser(
        "replay",
        help="a round's events in order, each with the round's state after it; or a player's "
        "wallet events, each with who called",
    )
    replayed = replay_parser.add_mutually_exclusive_group(required=True)
    replayed.add_argument("--round", help="the round id")
    replayed.add_argument("--player", help="a player id: its wallet's events (who credited…)")
    add_data(replay_parser)
    replay_parser.add_argument("--json", action="store_true", help="a JSON list of {event, state}")
    replay_parser.set_defaults(run=replay)
    explain_parser = commands.add_parser(
        "explain", help="a round's dispute report: hands, comparisons, coins, fairness proof"
    )
    explain_parser.add_argument("--round", required=True, help="the round id")
    add_data(explain_parser)
    explain_parser.add_argument("--player", help="tell the report from this player's point of view")
    explain_parser.add_argument(
        "--html", metavar="FILE", help="also write the report as one HTML page"
    )
    explain_parser.set_defaults(run=explain)


if TYPE_CHECKING:
    pass


def rebuild(args: argparse.Namespace) -> int:
    """Drop the views and replay the whole event log into them."""
    import time

    from projections.projector import rebuild

    app = read_store("projections rebuild", args.data)
    if isinstance(app, int):
        return app
    store, leadership = app.database.views()
    if not leadership.acquire():
        print(
            "thirteen projections rebuild: a running server is keeping the views; stop "
            "every server on this store first",
            file=sys.stderr,
        )
        return 1
    try:
        started = time.perf_counter()
        count = rebuild(app, store, ProgressBar("rebuilding views"))
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


def replay(args: argparse.Namespace) -> int:
    """A round's events in order, each with the round's state after it; or, with ``--player``,
    the player's wallet events, each with the identity that called."""
    import json

    from domain.ids import check_id
    from service.report.replay import (
        render_json,
        render_text,
        render_wallet_text,
        round_events,
        steps,
        wallet_events,
    )

    app = read_store("replay", args.data)
    if isinstance(app, int):
        return app
    try:
        if args.player is not None:
            moves = wallet_events(app, check_id(args.player, "player"))
        else:
            found = steps(round_events(app, check_id(args.round, "round")))
    except RuleError as error:
        print(f"thirteen replay: {error.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        app.close()
    if args.player is not None:
        text = json.dumps(moves, ensure_ascii=False, indent=2) + "\n"
        sys.stdout.write(text if args.json else render_wallet_text(args.player, moves))
        return 0
    sys.stdout.write(render_json(found) if args.json else render_text(args.round, found))
    return 0


def explain(args: argparse.Namespace) -> int:
    """A round's dispute report, in text and optionally as one HTML page."""
    from domain.ids import check_id
    from service.report.explain import load
    from service.report.html import render_html
    from service.report.words import render_text

    app = read_store("explain", args.data)
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
