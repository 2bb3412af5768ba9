"""The W3C trace context of a call passed on as it came: what a replica without tracing sends
to the owner of a table with a call it forwards (``service.routing.forwarding``), so that a
trace begun by the caller goes on at the owner. No OpenTelemetry here: this costs a look at the
metadata of forwarded calls only."""

from __future__ import annotations

from typing import Any

import grpc

TRACE_HEADERS = ("traceparent", "tracestate")
"""The W3C Trace Context headers (gRPC metadata keys are lower case)."""

Headers = tuple[tuple[str, str], ...]


def passed_through(context: grpc.aio.ServicerContext[Any, Any]) -> Headers:
    """The caller's ``traceparent`` and ``tracestate``, as it sent them (none: nothing)."""
    return tuple(
        (key, value)
        for key, value in context.invocation_metadata() or ()
        if key in TRACE_HEADERS and isinstance(value, str)
    )
