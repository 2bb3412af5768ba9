"""The serving process's interceptors, in order (``every_interceptor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from service.routing.forwarding import Router
from service.rpc.admission import Admission
from service.rpc.authorizing import Authorize
from service.rpc.pages import PassEncoded
from service.rpc.server import KNOWN_SERVICES
from service.rpc.undecodable import RefuseUndecodable
from service.security.policy import Policy

if TYPE_CHECKING:
    from service.metrics import Metrics


def every_interceptor(
    policy: Policy, metrics: Metrics | None, router: Router | None, max_in_flight: int
) -> list[grpc.aio.ServerInterceptor]:
    """How many calls at once (``Admission``), who may call (``policy``), requests that do not
    decode refused, the listings' answers a reader process encoded sent as they are
    (``PassEncoded``), then the call passed to its table's owner (``router``, last: only a call
    this replica could serve is passed on), and the metrics first: they count the calls the
    others refuse, with their codes."""
    found: list[grpc.aio.ServerInterceptor] = [
        Admission(max_in_flight),
        Authorize(policy),
        RefuseUndecodable(),
        PassEncoded(),
    ]
    if router is not None:
        found.append(router)
    if metrics is not None:
        found.insert(0, metrics.interceptor(KNOWN_SERVICES))
    return found
