"""A channel to a thirteen server: plaintext or TLS (``credentials``), its connection its own,
and gRPC's retry policy for the calls of every ``thirteen.v1`` service: a call answered
``UNAVAILABLE`` (the server restarting, a replica failing over), ``ABORTED`` (a command lost
a race to another) or ``RESOURCE_EXHAUSTED`` (the server shedding a burst, nothing of the call
done) is sent again, up to ``ATTEMPTS`` times, after an exponential backoff with jitter, or after
the delay the server asked for (``grpc-retry-pushback-ms``, sent with every shed call). Every
command takes an idempotency key, so a command sent twice is done once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import grpc

SERVICES = (
    "WalletService",
    "TableService",
    "ResultsService",
    "AuditService",
    "TransparencyService",
    "DiagnosticsService",
)
RETRIED = ("UNAVAILABLE", "ABORTED", "RESOURCE_EXHAUSTED")
ATTEMPTS = 5
RETRY_POLICY = {
    "methodConfig": [
        {
            "name": [{"service": f"thirteen.v1.{service}"} for service in SERVICES],
            "retryPolicy": {
                "maxAttempts": ATTEMPTS,
                "initialBackoff": "0.1s",
                "maxBackoff": "2s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": list(RETRIED),
            },
        }
    ]
}


def options(server_name: str | None = None, retries: bool = True) -> list[tuple[str, str | int]]:
    """The channel's options: a connection of its own (gRPC otherwise shares one, with its
    reconnect backoff, among every channel to the same address), the retry policy, and the name
    the server's certificate must hold when ``address`` names the server otherwise."""
    chosen: list[tuple[str, str | int]] = [("grpc.use_local_subchannel_pool", 1)]
    if retries:
        chosen += [("grpc.enable_retries", 1), ("grpc.service_config", json.dumps(RETRY_POLICY))]
    else:
        chosen += [("grpc.enable_retries", 0)]
    if server_name:
        chosen.append(("grpc.ssl_target_name_override", server_name))
    return chosen


def credentials(
    ca: Path, cert: Path | None = None, key: Path | None = None
) -> grpc.ChannelCredentials:
    """TLS trusting the server certificates ``ca`` signed, presenting ``cert`` and ``key`` when
    given (mutual TLS); ``TlsConfigError`` with one line when a file cannot be used."""
    from service.security.tls import channel_credentials

    return channel_credentials(ca, cert, key)


def channel(
    address: str,
    tls: grpc.ChannelCredentials | None = None,
    *,
    server_name: str | None = None,
    retries: bool = True,
    extra: Sequence[tuple[str, str | int]] = (),
) -> grpc.Channel:
    """A blocking channel to ``address`` (``HOST:PORT``), over TLS when ``tls`` is given."""
    chosen = [*options(server_name, retries), *extra]
    if tls is None:
        return grpc.insecure_channel(address, chosen)
    return grpc.secure_channel(address, tls, chosen)


def aio_channel(
    address: str,
    tls: grpc.ChannelCredentials | None = None,
    *,
    server_name: str | None = None,
    retries: bool = True,
) -> grpc.aio.Channel:
    """The same for asyncio (``grpc.aio``)."""
    chosen = options(server_name, retries)
    if tls is None:
        return grpc.aio.insecure_channel(address, chosen)
    return grpc.aio.secure_channel(address, tls, chosen)
