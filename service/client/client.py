"""``connect``: a channel and every service's stub, and ``call``, which raises ``ApiError``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import grpc

from service._generated.thirteen.v1 import (
    audit_pb2_grpc,
    diagnostics_pb2_grpc,
    results_pb2_grpc,
    table_pb2_grpc,
    transparency_pb2_grpc,
    wallet_pb2_grpc,
)
from service.client.channel import channel, credentials
from service.client.errors import ApiError

Request = TypeVar("Request")
Response = TypeVar("Response")
TIMEOUT = 10.0
"""Seconds a call may take, retries included, unless ``call`` is told otherwise."""


@dataclass
class Client:
    """The stubs of every ``thirteen.v1`` service on one channel. Close it (or use it in a
    ``with``) when done."""

    address: str
    channel: grpc.Channel
    tls: bool

    def __post_init__(self) -> None:
        self.wallets = wallet_pb2_grpc.WalletServiceStub(self.channel)
        self.tables = table_pb2_grpc.TableServiceStub(self.channel)
        self.results = results_pb2_grpc.ResultsServiceStub(self.channel)
        self.audit = audit_pb2_grpc.AuditServiceStub(self.channel)
        self.transparency = transparency_pb2_grpc.TransparencyServiceStub(self.channel)
        self.diagnostics = diagnostics_pb2_grpc.DiagnosticsServiceStub(self.channel)

    def call(
        self,
        method: Callable[..., Response],
        request: Request,
        *,
        timeout: float = TIMEOUT,
        metadata: tuple[tuple[str, str], ...] = (),
    ) -> Response:
        """``method(request)`` with a deadline; ``ApiError`` when it fails (after the
        channel's retries)."""
        try:
            return method(request, timeout=timeout, metadata=metadata or None)
        except grpc.RpcError as error:
            raise ApiError.of(error) from None

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def connect(
    address: str,
    *,
    ca: Path | None = None,
    cert: Path | None = None,
    key: Path | None = None,
    tls: grpc.ChannelCredentials | None = None,
    server_name: str | None = None,
    retries: bool = True,
) -> Client:
    """A client of the server at ``address``: plaintext, or TLS trusting ``ca`` (presenting
    ``cert`` and ``key`` for mutual TLS), or the ``tls`` credentials given."""
    if tls is None and ca is not None:
        tls = credentials(ca, cert, key)
    opened = channel(address, tls, server_name=server_name, retries=retries)
    return Client(address, opened, tls is not None)
