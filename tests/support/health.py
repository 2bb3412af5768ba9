"""The standard gRPC health service's client stub, typed.

types-grpcio-health-checking declares ``HealthStub`` with a constructor only, without its
``Check`` and ``Watch`` callables; this gives them their types and is otherwise the stub itself.
"""

from __future__ import annotations

from typing import Protocol, cast

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


class HealthStub(Protocol):
    Check: grpc.UnaryUnaryMultiCallable[
        health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
    ]
    Watch: grpc.UnaryStreamMultiCallable[
        health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
    ]


def health_stub(channel: grpc.Channel) -> HealthStub:
    """``grpc_health.v1.health_pb2_grpc.HealthStub(channel)``."""
    return cast(HealthStub, health_pb2_grpc.HealthStub(channel))
