"""Every servicer a server serves (one per ``thirteen.v1`` service, and health checking), each
bound to what it needs and ready to add to a server (``service.rpc.server.create_server``)."""

from __future__ import annotations

import functools

from grpc_health.v1 import health, health_pb2_grpc

from service._generated.thirteen.v1 import (
    audit_pb2_grpc,
    diagnostics_pb2_grpc,
    results_pb2_grpc,
    table_pb2_grpc,
    transparency_pb2_grpc,
    wallet_pb2_grpc,
)
from service.application import Thirteen
from service.rpc.audit import AuditServicer
from service.rpc.diagnostics import DiagnosticsServicer
from service.rpc.pages import Pages
from service.rpc.results import ResultsServicer
from service.rpc.runner import Runner
from service.rpc.server import Registration
from service.rpc.table import TableServicer
from service.rpc.transparency import TransparencyServicer
from service.rpc.views import Views
from service.rpc.wallet import WalletServicer
from service.rpc.watch import WatchHub
from service.transparency.log import TransparencyLog


def every_servicer(
    app: Thirteen,
    run: Runner,
    hub: WatchHub,
    reads: Views,
    pages: Pages,
    health_servicer: health.aio.HealthServicer,
    transparency_log: TransparencyLog | None,
) -> list[Registration]:
    """Every servicer the server serves, each bound to what it needs."""
    return [
        functools.partial(
            wallet_pb2_grpc.add_WalletServiceServicer_to_server, WalletServicer(app, run)
        ),
        functools.partial(
            table_pb2_grpc.add_TableServiceServicer_to_server, TableServicer(app, run, hub, pages)
        ),
        functools.partial(
            diagnostics_pb2_grpc.add_DiagnosticsServiceServicer_to_server, DiagnosticsServicer(run)
        ),
        functools.partial(
            results_pb2_grpc.add_ResultsServiceServicer_to_server,
            ResultsServicer(app, reads, run, pages),
        ),
        functools.partial(
            audit_pb2_grpc.add_AuditServiceServicer_to_server,
            AuditServicer(app, reads, run, transparency_log),
        ),
        functools.partial(
            transparency_pb2_grpc.add_TransparencyServiceServicer_to_server,
            TransparencyServicer(app, transparency_log, run),
        ),
        functools.partial(health_pb2_grpc.add_HealthServicer_to_server, health_servicer),
    ]
