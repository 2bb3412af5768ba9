"""``serve``'s transport security: the TLS flags, and the credentials and policy they give (or
why they cannot be served)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.security.policy import Policy
    from service.security.tls import ServerTls


def register(serve_parser: argparse.ArgumentParser) -> None:
    tls = serve_parser.add_argument_group(
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


def transport_security(args: argparse.Namespace) -> tuple[ServerTls | None, Policy | None] | str:
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
