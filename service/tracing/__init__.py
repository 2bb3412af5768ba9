"""OpenTelemetry tracing (issue 23), off unless configured: ``thirteen serve --otlp-endpoint
URL``, or the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``.

The OpenTelemetry packages are an optional extra (``thirteen[otel]``): ``setup`` imports them
only when tracing is asked for, and says what to install when they are missing. ``spans`` holds
the spans of a command (the call, its wait in the writer's queue, its batch's commit, and the
projection of its events); ``context`` passes a caller's ``traceparent`` on to the owner of a
table when tracing is off here.
"""

from service.tracing.context import TRACE_HEADERS, passed_through
from service.tracing.setup import TracingUnavailable, start_tracing, tracing_wanted

__all__ = [
    "TRACE_HEADERS",
    "TracingUnavailable",
    "passed_through",
    "start_tracing",
    "tracing_wanted",
]
