"""``thirteen serve``, ``projections rebuild``, ``replay`` and ``explain``: the commands that open
the event store (``thirteen audit`` is ``service.tools.audit``'s)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from domain.errors import RuleError
from service.tools.console import EXIT_BAD_INPUT, ProgressBar, read_store


def serve(args: argparse.Namespace) -> int:
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


def rebuild(args: argparse.Namespace) -> int:
    """Drop the views and replay the whole event log into them."""
    import time

    from projections.projector import rebuild
    from service.storage import open_views

    app = read_store("projections rebuild", args.data)
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
    """A round's events in order, each with the round's state after it."""
    from service.application import check_id
    from service.tools.replay import render_json, render_text, round_events, steps

    app = read_store("replay", args.data)
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


def explain(args: argparse.Namespace) -> int:
    """A round's dispute report, in text and optionally as one HTML page."""
    from service.application import check_id
    from service.tools.explain import load
    from service.tools.explain_html import render_html
    from service.tools.explain_words import render_text

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
