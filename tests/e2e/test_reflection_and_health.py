"""An outside client that knows only the service names can find the API by reflection, and
load balancers can ask for health (issue 3 §4)."""

from __future__ import annotations

from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from tests.support.health import health_stub
from tests.support.server import ServerThread

NAMES = [
    "thirteen.v1.WalletService",
    "thirteen.v1.TableService",
    "thirteen.v1.ResultsService",
    "thirteen.v1.AuditService",
    "thirteen.v1.DiagnosticsService",
]


def test_reflection_lists_every_service_with_its_methods(server: ServerThread) -> None:
    database = ProtoReflectionDescriptorDatabase(server.channel)
    assert set(NAMES) <= set(database.get_services())
    pool = DescriptorPool(database)
    table = pool.FindServiceByName("thirteen.v1.TableService")
    assert {"OpenTable", "Deal", "Arrange", "Reveal", "GetRound", "WatchTable"} <= {
        m.name for m in table.methods
    }
    credit = pool.FindMessageTypeByName("thirteen.v1.CreditRequest")
    assert [f.name for f in credit.fields] == ["player_id", "amount", "transfer_id"]


def test_health_reports_serving_for_the_server_and_each_service(server: ServerThread) -> None:
    health = health_stub(server.channel)
    for name in ["", *NAMES]:
        reply = health.Check(health_pb2.HealthCheckRequest(service=name))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
