"""The HTTP endpoint Prometheus scrapes (``thirteen serve --metrics HOST:PORT``): the text
exposition of one registry, on a port of its own (``service.http_server``: an asyncio server
that idle or trickling connections do not use up, one request per connection).

The exposition is built on a worker thread (``prometheus_client``'s WSGI app, so its content
negotiation, ``name[]`` filter and gzip hold), never on the event loop; the readings that query
the store do not run on those threads either (``readings``: the views keep a connection per
thread that reads them).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, make_wsgi_app

from service.http_server import Answer, EndpointError, HttpServer, Request, split_address

__all__ = ["Endpoint", "EndpointError", "split_address"]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Started:
    """What the WSGI app answered, as ``start_response`` heard it."""

    def __init__(self) -> None:
        self.status = "500 Internal Server Error"
        self.headers: list[tuple[str, str]] = []

    def start_response(self, status: str, headers: list[tuple[str, str]], *_: Any) -> None:
        self.status, self.headers = status, headers


def _environ(request: Request) -> dict[str, Any]:
    """The WSGI environ of a request."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "PATH_INFO": request.path,
        "QUERY_STRING": request.query,
        "SERVER_PROTOCOL": request.version,
        "wsgi.input": io.BytesIO(),
    }
    for name, content in request.headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = content
    return environ


def wsgi_handler(app: WsgiApp) -> Callable[[Request], Answer]:
    """A WSGI app as the server's handler (run on a worker thread: collecting is blocking)."""

    def handle(request: Request) -> Answer:
        started = _Started()
        body = b"".join(app(_environ(request), started.start_response))
        return Answer(started.status, started.headers, body)

    return handle


class Endpoint(HttpServer):
    """Serves ``registry`` over HTTP on ``address`` (port 0 picks a free one) until closed."""

    def __init__(self, registry: CollectorRegistry, address: str) -> None:
        super().__init__(
            wsgi_handler(make_wsgi_app(registry)), address, name="metrics", failed="scrape_failed"
        )
