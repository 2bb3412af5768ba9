"""The HTTP endpoint Prometheus scrapes (``thirteen serve --metrics HOST:PORT``): the text
exposition of one registry, on a port of its own.

Each connection is served on a thread of its own, at most ``MAX_CONNECTIONS`` at once (one more
is closed at once, and logged), and cut off ``DEADLINE`` seconds after it was accepted, however
it trickles its request: a client that holds a connection open stalls no scrape but its own.
The readings that query the store do not run on these threads (``readings``: the views keep a
connection per thread that reads them).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import structlog
from prometheus_client import CollectorRegistry, make_wsgi_app

log = structlog.get_logger("thirteen.metrics")
TIMEOUT = 5.0  # seconds one read or write of a connection may wait
DEADLINE = 10.0  # seconds a connection may stay open in all (Prometheus's default scrape timeout)
MAX_CONNECTIONS = 8  # served at once: Prometheus scrapes one at a time per target


class EndpointError(Exception):
    """The metrics address is not one this process can listen on; the message says why, and
    ``malformed`` whether it is not even ``HOST:PORT`` (bad input) rather than well formed but
    taken or not this machine's."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) as a host and a port.

    >>> split_address("127.0.0.1:9464")
    ('127.0.0.1', 9464)
    >>> split_address("[::1]:0")
    ('::1', 0)
    """
    host, sep, port = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise EndpointError(
            f"the metrics address must be HOST:PORT, got {address!r}", malformed=True
        )
    return host, int(port)


class _Quiet(WSGIRequestHandler):
    """Serves a scrape without logging it to stderr (the server's logs are JSON lines)."""

    timeout = TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _cut_off(connection: socket.socket) -> None:
    """End a connection past its deadline: its thread's blocked read returns at once."""
    with contextlib.suppress(OSError):  # it ended meanwhile
        connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a connection still open never holds up a stop
    block_on_close = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            log.warning(
                "metrics_connection_refused", client=client_address[0], open=MAX_CONNECTIONS
            )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: its slot is free again
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        deadline = threading.Timer(DEADLINE, _cut_off, (request,))
        deadline.daemon = True
        deadline.start()
        try:
            super().process_request_thread(request, client_address)
        finally:
            deadline.cancel()
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A scrape that failed (its client went silent or away, or past its deadline): one
        log line, where socketserver would print a traceback among the JSON logs."""
        log.warning("metrics_scrape_failed", client=client_address[0], cause=repr(sys.exception()))


class Endpoint:
    """Serves ``registry`` over HTTP on ``address`` (port 0 picks a free one) until closed."""

    def __init__(self, registry: CollectorRegistry, address: str) -> None:
        host, port = split_address(address)
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except (socket.gaierror, UnicodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise EndpointError(
                f"cannot listen for metrics on {address}: {host!r} is not a host name or "
                f"address of this machine ({reason})"
            ) from None
        family, _, _, _, bound = found[0]

        class Server(_Server):
            address_family = family

        try:
            self._server = make_server(
                str(bound[0]), port, make_wsgi_app(registry), Server, handler_class=_Quiet
            )
        except OSError as error:
            raise EndpointError(
                f"cannot listen for metrics on {address}: {error.strerror or error}"
            ) from None
        self.host = host
        self.port: int = self._server.server_port
        self._closed = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-endpoint", daemon=True
        )
        self._thread.start()

    @property
    def address(self) -> str:
        """Where it listens, the port as bound: ``HOST:PORT``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def close(self) -> None:
        """Stop accepting and free the port (again: nothing); a scrape under way finishes on
        its own thread."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
