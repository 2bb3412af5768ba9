"""The gRPC server itself: an asyncio server with the given servicers and interceptors, on an
address (port 0 picks a free one), over TLS or plaintext. What it serves is assembled by
``service.bootstrap``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc
from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection

from service._generated.thirteen.v1 import (
    audit_pb2,
    diagnostics_pb2,
    results_pb2,
    table_pb2,
    transparency_pb2,
    wallet_pb2,
)
from service.rpc import reflecting
from service.rpc.admission import MAX_IN_FLIGHT

MAX_MESSAGE_BYTES = 1 << 20  # a request is a few hundred bytes; refuse anything near a MiB
SERVICES = {
    name: module.DESCRIPTOR.services_by_name[name].full_name
    for module, name in (
        (wallet_pb2, "WalletService"),
        (table_pb2, "TableService"),
        (diagnostics_pb2, "DiagnosticsService"),
        (results_pb2, "ResultsService"),
        (audit_pb2, "AuditService"),
        (transparency_pb2, "TransparencyService"),
    )
}
"""The ``thirteen.v1`` services' full names, by their names."""

KNOWN_SERVICES = [*SERVICES.values(), health.SERVICE_NAME, reflection.SERVICE_NAME]
"""Every service a server serves (the metrics' bounded label values)."""

Registration = Callable[[grpc.aio.Server], None]
"""Adds one servicer to a server (``add_XServicer_to_server`` with its servicer bound)."""


PENDING = 50 * MAX_IN_FLIGHT


def create_server(
    servicers: Sequence[Registration],
    interceptors: Sequence[grpc.aio.ServerInterceptor],
    address: str,
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """A server (not started yet) with ``servicers``, reflection of every known service, and
    ``interceptors`` in order (the first sees each call first), bound to ``address``; and the
    port it is bound to. Raises ``OSError`` when the address cannot be listened on."""
    server = grpc.aio.server(
        interceptors=list(interceptors),
        options=[
            ("grpc.so_reuseport", 0),  # a second server on a taken port must fail, not share it
            # Calls gRPC holds before the server takes them: far past the server's own bound
            # (``service.rpc.admission``), which answers RESOURCE_EXHAUSTED with a delay, where
            # gRPC's defaults (1,000 and 3,000) cancel them without a word.
            ("grpc.server.max_pending_requests", PENDING),
            ("grpc.server.max_pending_requests_hard_limit", PENDING),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", 16 * MAX_MESSAGE_BYTES),
        ],
    )
    for register in servicers:
        register(server)
    reflection.enable_server_reflection(
        KNOWN_SERVICES, server, pool=reflecting.pool(KNOWN_SERVICES)
    )
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError:  # grpc reports a failed bind this way
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address}: the address is taken or not ours")
    return server, port
