"""Whether tracing is on, and turning it on: the exporter, the tracer provider, the spans.

On when ``--otlp-endpoint`` is given, or when the standard variables name where spans go
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_ENDPOINT``) and
``OTEL_SDK_DISABLED`` is not ``true``; the SDK reads the other ``OTEL_*`` variables itself
(the sampler, headers, the service's name). The OpenTelemetry packages are imported only then.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from service.tracing.spans import Tracing

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
INSTALL = "pip install 'thirteen[otel]'"


class TracingUnavailable(Exception):
    """Tracing was asked for but cannot be turned on; the message says why and what to do."""


def endpoint_url(text: str) -> str:
    """An OTLP/gRPC endpoint: ``http://HOST:PORT`` (plaintext) or ``https://HOST:PORT``.

    >>> endpoint_url("http://127.0.0.1:4317")
    'http://127.0.0.1:4317'
    >>> endpoint_url("127.0.0.1:4317")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the OTLP endpoint must be http://HOST:PORT or https://HOST:PORT, got '127...'
    """
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError:
        url, port = None, None
    if url is None or url.scheme not in ("http", "https") or not url.hostname or port is None:
        raise ValueError(
            f"the OTLP endpoint must be http://HOST:PORT or https://HOST:PORT, got {text!r}"
        )
    return text


def tracing_wanted(endpoint: str | None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether tracing is asked for: by the flag, or by the standard variables.

    >>> tracing_wanted(None, {})
    False
    >>> tracing_wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"})
    True
    >>> tracing_wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
    ...                       "OTEL_SDK_DISABLED": "true"})
    False
    """
    if endpoint:
        return True
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name) for name in ENDPOINT_VARIABLES)


def start_tracing(endpoint: str | None, exporter: SpanExporter | None = None) -> Tracing:
    """Tracing on: spans exported over OTLP/gRPC to ``endpoint`` (None: where the ``OTEL_*``
    variables say), in batches on a thread of the SDK's; or, given ``exporter`` (the tests'
    in-memory one), handed to it as each span ends. ``TracingUnavailable`` when the
    OpenTelemetry packages are not installed."""
    try:
        from service.tracing.spans import Tracing
    except ImportError as error:
        raise TracingUnavailable(
            f"tracing needs the OpenTelemetry packages ({error.name} is missing): {INSTALL}"
        ) from None
    if exporter is not None:
        return Tracing.exporting(exporter, batched=False)
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    except ImportError as error:
        raise TracingUnavailable(
            f"tracing needs the OTLP exporter ({error.name} is missing): {INSTALL}"
        ) from None
    return Tracing.exporting(OTLPSpanExporter(endpoint=endpoint), batched=True)
