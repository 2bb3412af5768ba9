"""``thirteen serve``, ``projections rebuild``, ``replay`` and ``explain``: the commands that open
the event store (``thirteen audit`` is ``service.tools.audit``'s)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from domain.errors import RuleError
from service.entrypoints.terminal import EXIT_BAD_INPUT, ProgressBar, read_store

if TYPE_CHECKING:
    from service.metrics import Metrics
    from service.security.policy import Policy
    from service.security.tls import ServerTls


def serve(args: argparse.Namespace) -> int:
    """Serve the gRPC API until SIGTERM or SIGINT (and metrics, with ``--metrics``)."""
    from service import logging as service_logging

    service_logging.configure(args.log_level)
    security = _transport_security(args)
    if isinstance(security, str):
        print(f"thirteen serve: {security}", file=sys.stderr)
        return EXIT_BAD_INPUT
    refused = _cannot_listen(args.address)  # before the store opens or a key file is made
    if refused is not None:
        print(f"thirteen serve: cannot listen on {args.address}: {refused}", file=sys.stderr)
        return 1
    metrics = _metrics(args.metrics)  # before the store opens: a taken port changes nothing
    if isinstance(metrics, int):
        return metrics
    try:
        return _serve(args, *security, metrics)
    finally:
        if metrics is not None:
            metrics.close()


def _cannot_listen(address: str) -> str | None:
    """Why the gRPC ``address`` cannot be listened on now (None: it can, or grpc is left to
    judge it: port 0, a name that does not resolve, not ``HOST:PORT``). Checked before the store
    opens, so that a taken port creates no data directory and no key files; grpc's own bind,
    later, stays the authority (the port may be taken in between)."""
    import socket

    from service.metrics.endpoint import EndpointError, split_address

    try:
        host, port = split_address(address)
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (EndpointError, OSError):
        return None
    if port == 0 or not found:
        return None
    family, kind, proto, _, where = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpc binds
        try:
            probe.bind(where)
        except OSError:
            return "the address is taken or not ours"
    return None


def _metrics(address: str | None) -> Metrics | int | None:
    """The metrics, listening on ``address`` (None without one); or, after one line saying why
    they cannot, the exit status: 2 for an address that is not HOST:PORT, 1 for one that is
    taken or not this machine's (as for the gRPC port, and ``thirteen console``)."""
    if address is None:
        return None
    from service.metrics import EndpointError, Metrics

    metrics = Metrics()
    try:
        metrics.listen(address)
    except EndpointError as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT if error.malformed else 1
    return metrics


def _serve(
    args: argparse.Namespace, tls: ServerTls | None, policy: Policy | None, metrics: Metrics | None
) -> int:
    """``serve`` once its flags are checked: open the store and serve until a signal."""
    import asyncio

    from service.eventstore.storage import StoreConfigError, open_app
    from service.rpc.server import serve_forever
    from service.seed_keys import SEED_KEY_FILE, SeedKeyError
    from service.tools.log_keys import log_options

    seed_key = args.seed_key or Path(args.data) / SEED_KEY_FILE
    creating = not seed_key.exists()
    if creating and (args.seed_key is not None or os.environ.get("THIRTEEN_STORE") == "postgres"):
        # Only the embedded default makes its own key: a mistyped path, a missing mount or a
        # replica's own new key would commit tables the other replicas cannot deal.
        print(
            f"thirteen serve: seed key file {seed_key} does not exist: create it once with "
            f"`thirteen seed-key init {seed_key}` and give every server of the store that file",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        app = open_app(Path(args.data), seed_key=seed_key)
    except StoreConfigError as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as error:  # the database is unreachable or unusable
        print(f"thirteen serve: cannot open the event store: {error}", file=sys.stderr)
        return 1
    if creating and app.max_position() > 0:
        # Not a first start: the store's tables committed under a key that is gone, and a new
        # one could deal none of them.
        app.close()
        print(
            f"thirteen serve: seed key file {seed_key} does not exist, but the store already "
            "holds events: restore the key file its tables committed under (a new key could "
            "deal none of them)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        seed_keys = app.seed_keys  # read (or create) the key file now, not at the first deal
    except SeedKeyError as error:
        app.close()
        print(f"thirteen serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if creating:
        print(
            f"thirteen serve: created the seed key file {seed_key} (key id {seed_keys.current});"
            " keep it secret, back it up, and give every replica the same file",
            file=sys.stderr,
            flush=True,
        )
    transparency = log_options(args, app)  # the log key, read (or created) and checked now
    if isinstance(transparency, str):
        app.close()
        print(f"thirteen serve: {transparency}", file=sys.stderr)
        return EXIT_BAD_INPUT

    def started(running: object) -> None:
        port = getattr(running, "port", 0)
        host = args.address.rsplit(":", 1)[0]
        transport = "plaintext" if tls is None else "mutual TLS" if tls.mutual else "TLS"
        client = "" if tls is None else " --ca CA.pem"
        client += " --cert CLIENT.pem --key CLIENT.key" if tls is not None and tls.mutual else ""
        print(
            f"thirteen: serving gRPC on {host}:{port} over {transport}"
            f" (store: {app.env.get('PERSISTENCE_MODULE')})."
            f" Try: {sys.argv[0]} demo --address {host}:{port}{client}",
            file=sys.stderr,
            flush=True,
        )
        if metrics is not None:
            print(
                f"thirteen: serving metrics on http://{metrics.address}/metrics",
                file=sys.stderr,
                flush=True,
            )

    try:
        asyncio.run(
            serve_forever(
                app,
                args.address,
                on_started=started,
                credentials=tls.credentials if tls is not None else None,
                mutual_tls=tls is not None and tls.mutual,
                policy=policy,
                transparency=transparency,
                metrics=metrics,
            )
        )
    except OSError as error:
        print(f"thirteen serve: {error}", file=sys.stderr)
        return 1
    return 0


def _transport_security(args: argparse.Namespace) -> tuple[ServerTls | None, Policy | None] | str:
    """``serve``'s TLS credentials and policy, or why the flags cannot be served (and the
    warning ``--insecure`` asks for, logged)."""
    import structlog

    from service.security.policy import Policy, PolicyError
    from service.security.tls import TlsConfigError, is_loopback, server_credentials

    if (args.tls_cert is None) != (args.tls_key is None):
        return "--tls-cert and --tls-key go together: give both (the certificate and its key)"
    if args.client_ca is not None and args.tls_cert is None:
        return "--client-ca needs --tls-cert and --tls-key (mutual TLS runs over TLS)"
    if args.policy is not None and args.client_ca is None:
        return (
            "--policy needs --client-ca: identities come from client certificates, which "
            "only mutual TLS asks for"
        )
    if args.insecure and args.tls_cert is not None:
        return "--insecure serves plaintext; leave it out when giving --tls-cert and --tls-key"
    if args.tls_cert is None and not args.insecure and not is_loopback(args.address):
        return (
            f"refusing to serve {args.address} without TLS: anyone who reaches it could call "
            "everything and read the traffic; give --tls-cert and --tls-key (and --client-ca), "
            "or --insecure to serve plaintext anyway"
        )
    if args.tls_cert is not None and args.policy is None and not is_loopback(args.address):
        return (
            f"refusing to serve {args.address} without --policy: every caller would be admin; "
            "give --client-ca and --policy (identities and their roles), or serve on loopback"
        )
    try:
        tls = (
            None
            if args.tls_cert is None
            else server_credentials(args.tls_cert, args.tls_key, args.client_ca)
        )
        policy = None if args.policy is None else Policy.load(args.policy)
    except (TlsConfigError, PolicyError) as error:
        return str(error)
    if args.insecure:
        structlog.get_logger("thirteen.serve").warning(
            "insecure_plaintext",
            address=args.address,
            reason="--insecure: no TLS, so every caller is unauthenticated and admin, and the "
            "traffic can be read and changed on the way",
        )
    return tls, policy


def rebuild(args: argparse.Namespace) -> int:
    """Drop the views and replay the whole event log into them."""
    import time

    from projections.projector import rebuild
    from service.eventstore.storage import open_views

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
