"""``thirteen serve``'s replica flags: the other replicas of a PostgreSQL store, to which a call
for a table they own is passed (``service.routing``; docs/operating/replicas.md)."""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from service.entrypoints.options import host_port

if TYPE_CHECKING:
    from service.routing.peers import Routing

WILDCARDS = ("0.0.0.0", "::", "[::]", "")


def register(serve_parser: argparse.ArgumentParser) -> None:
    replicas = serve_parser.add_argument_group(
        "replicas",
        "several `thirteen serve` on one PostgreSQL store: each table's commands are served by "
        "its owner, computed from the replicas that answer (docs/operating/replicas.md)",
    )
    peers = replicas.add_mutually_exclusive_group()
    peers.add_argument(
        "--peers",
        metavar="HOST:PORT,...",
        help="every replica's address, this one's included (default: none; every call is "
        "served where it lands)",
    )
    peers.add_argument(
        "--peers-file",
        type=Path,
        metavar="FILE",
        help="a file listing them, one per line or separated by commas, read again every "
        "second (replicas can be added or removed without a restart)",
    )
    replicas.add_argument(
        "--advertise",
        type=host_port,
        metavar="HOST:PORT",
        help="the address the other replicas know this one by, as listed (default: --address, "
        "with the port it bound)",
    )
    replicas.add_argument(
        "--peer-ca", type=Path, metavar="FILE", help="CA of the replicas' server certificates"
    )
    replicas.add_argument(
        "--peer-cert",
        type=Path,
        metavar="FILE",
        help="this replica's client certificate for the others (mutual TLS; its identity needs "
        "the role replica in their --policy)",
    )
    replicas.add_argument("--peer-key", type=Path, metavar="FILE", help="its private key")


def routing(args: argparse.Namespace) -> Routing | str | None:
    """The replicas the flags name (None: none), or why they cannot be used (one line)."""
    from service.routing.peers import PeersError, Routing, parse_peers, peers_file
    from service.security.tls import TlsConfigError, channel_credentials

    given = args.peers is not None or args.peers_file is not None
    flags = ("advertise", "peer_ca", "peer_cert", "peer_key")
    extras = [flag for flag in flags if vars(args)[flag]]
    if not given:
        if extras:
            return f"--{extras[0].replace('_', '-')} needs --peers or --peers-file"
        return None
    if os.environ.get("THIRTEEN_STORE") != "postgres":
        return (
            "--peers needs the PostgreSQL store (THIRTEEN_STORE=postgres): a SQLite store is "
            "served by one process"
        )
    host = args.address.rsplit(":", 1)[0]
    if args.advertise is None and host in WILDCARDS:
        return f"--address {args.address} listens on every interface: give --advertise HOST:PORT"
    if args.tls_cert is not None and args.peer_ca is None:
        return "replicas serving TLS call each other over TLS: give --peer-ca"
    if args.client_ca is not None and args.peer_cert is None:
        return (
            "replicas serving mutual TLS show each other a certificate: give --peer-cert and "
            "--peer-key (an identity with the role replica in --policy)"
        )
    if args.client_ca is not None and args.policy is None:
        return "--peers with --client-ca needs --policy granting the replicas the role replica"
    if args.tls_cert is None and args.peer_ca is not None:
        return "--peer-ca is for replicas serving TLS: give --tls-cert and --tls-key too"
    try:
        if args.peers is not None:
            listed = parse_peers(args.peers, "--peers")
            source: Callable[[], tuple[str, ...]] = functools.partial(tuple, listed)
        else:
            source = peers_file(args.peers_file)
            listed = source()  # readable now, or refused before the store opens
        credentials = (
            None
            if args.peer_ca is None
            else channel_credentials(args.peer_ca, args.peer_cert, args.peer_key)
        )
    except (PeersError, TlsConfigError) as error:
        return str(error)
    if not listed and args.peers is not None:
        return "--peers lists no replica"
    return Routing(source, args.advertise, credentials)
