"""A small read-only HTTP/1.1 server on a port of its own, for what a process serves beside gRPC
(the metrics, ``service.metrics.endpoint``; the log's tiles, ``service.tiles``): one request per
connection (``Connection: close``), answered by a function run on a worker thread.

An asyncio server on a thread of its own: an open connection costs a socket and a little memory,
not a thread, so clients that hold connections open (idle, or trickling half a request) do not use
up the endpoint (issue 22). A connection must send its whole request head within
``HEADER_TIMEOUT`` seconds and is cut off ``DEADLINE`` seconds after it was accepted, however it
trickles; past ``MAX_WAITING`` connections still waiting for their head (a quarter of the files
the process may open, when fewer: ``waiting_limit``), the oldest of them is closed to make room,
so a client that sends its request at once is always read, and the store and gRPC keep files to
open. The answer is made on a worker thread (``workers`` of them; the loop's default pool when
None), never on the event loop; a request whose connection is cut before its turn is never
answered. One client address has at most ``PER_CLIENT`` requests at the workers (past it:
``429`` with ``Retry-After``), all clients ``MAX_BUSY`` (past it: ``503``), so a flood of costly
requests from one address does not make another client wait for the whole flood. The loop's
own errors (an accept that failed) are a line now and then, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import structlog

log = structlog.get_logger("thirteen.http")
HEADER_TIMEOUT = 5.0  # seconds a connection has to send its whole request head
DEADLINE = 10.0  # seconds a connection may stay open in all (Prometheus's default scrape timeout)
MAX_HEAD = 16 * 1024  # bytes of a request head (a scrape's is a few hundred)
MAX_WAITING = 1024  # connections waiting for their head at once; past it the oldest is closed
LOG_INTERVAL = 10.0  # seconds between two log lines about connections that failed or were closed
BACKLOG = 1024  # connections the kernel queues before the loop accepts them
PER_CLIENT = 8  # requests of one client address answered or waiting for a worker, at most
MAX_BUSY = 256  # requests of all clients answered or waiting for a worker, at most


class EndpointError(Exception):
    """The address is not one this process can listen on; the message says why, and
    ``malformed`` whether it is not even ``HOST:PORT`` (bad input) rather than well formed but
    taken or not this machine's."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


def split_address(address: str, what: str = "metrics") -> tuple[str, int]:
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
            f"the {what} address must be HOST:PORT, got {address!r}", malformed=True
        )
    return host, int(port)


@dataclass(frozen=True)
class Request:
    """A request head: its method, its path (percent-decoded) and query, its headers (names in
    lower case)."""

    method: str
    path: str
    query: str
    version: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """What to send back: a status line's code and reason, headers, and a body (left out of
    the answer to a HEAD request, its length still said)."""

    status: str
    headers: list[tuple[str, str]]
    body: bytes = b""


Handler = Callable[[Request], Answer]


def parse_head(head: bytes) -> Request | None:
    """The request of a head (request line and header lines, CRLF separated); None when it is
    not HTTP/1.x."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    method, target, version = parts
    url = urlsplit(target)
    headers = {}
    for line in lines[1:]:
        name, sep, content = line.partition(":")
        if sep:
            headers[name.strip().lower()] = content.strip()
    return Request(method, unquote(url.path), url.query, version, headers)


def encode(answer: Answer, method: str) -> bytes:
    """The whole HTTP answer's bytes."""
    head = [f"HTTP/1.1 {answer.status}", f"Content-Length: {len(answer.body)}", "Connection: close"]
    head += [f"{name}: {content}" for name, content in answer.headers]
    text = "\r\n".join(head) + "\r\n\r\n"
    return text.encode("latin-1") + (b"" if method == "HEAD" else answer.body)


BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
TOO_MANY = (
    b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
    b"Connection: close\r\n\r\n"
)
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
    b"Connection: close\r\n\r\n"
)


class Tally:
    """A warning counted and logged at most once per ``LOG_INTERVAL`` seconds, with the count
    since the last line: a client that opens connections by the thousand floods no log."""

    def __init__(self, event: str) -> None:
        self.event = event
        self.count = 0
        self._logged_at = -LOG_INTERVAL

    def add(self, **fields: Any) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_INTERVAL:
            log.warning(self.event, count=self.count, **fields)
            self.count, self._logged_at = 0, now


def waiting_limit() -> int:
    """Connections waiting for their head kept at once: ``MAX_WAITING``, or a quarter of the
    files this process may open when that is fewer (the store, gRPC and the other endpoint
    need theirs: connections held open must never use them all up)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_WAITING
    return min(MAX_WAITING, max(16, soft // 4))


class _Connections:
    """The connections still waiting for their request head, oldest first: past
    ``waiting_limit()`` the oldest is closed to make room."""

    def __init__(self, name: str, failed: str) -> None:
        self.limit = waiting_limit()
        self.waiting: dict[asyncio.StreamWriter, None] = {}
        self.dropped = Tally(f"{name}_connections_dropped")
        self.failed = Tally(f"{name}_{failed}")
        self.busy: Counter[str] = Counter()  # requests at the workers, by client address
        self.shed = Tally(f"{name}_requests_shed")

    def take(self, client: str) -> bytes | None:
        """A worker's turn for ``client``'s request (None), or the answer that refuses it at
        once: a client with ``PER_CLIENT`` requests at the workers already, or all clients
        with ``MAX_BUSY``. A flood of costly requests from one address then delays another
        client by ``PER_CLIENT`` answers at most, instead of the whole flood."""
        if self.busy[client] >= PER_CLIENT:
            self.shed.add(client=client, status=429)
            return TOO_MANY
        if self.busy.total() >= MAX_BUSY:
            self.shed.add(client=client, status=503)
            return BUSY
        self.busy[client] += 1
        return None

    def done(self, client: str) -> None:
        self.busy[client] -= 1
        if not self.busy[client]:
            del self.busy[client]

    def arrived(self, writer: asyncio.StreamWriter) -> None:
        self.waiting[writer] = None
        while len(self.waiting) > self.limit:
            oldest = next(iter(self.waiting))
            del self.waiting[oldest]
            oldest.transport.abort()  # its reader sees the connection lost
            self.dropped.add(waiting=self.limit)

    def read(self, writer: asyncio.StreamWriter) -> None:
        self.waiting.pop(writer, None)


def _answer(handler: Handler, request: Request) -> bytes:
    return encode(handler(request), request.method)


async def _serve(
    handler: Handler,
    executor: ThreadPoolExecutor | None,
    connections: _Connections,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """Answer one request on one connection, then close it."""
    peer = writer.get_extra_info("peername")
    connections.arrived(writer)
    try:
        async with asyncio.timeout(DEADLINE):
            try:
                async with asyncio.timeout(HEADER_TIMEOUT):
                    head = await reader.readuntil(b"\r\n\r\n")
            finally:
                connections.read(writer)
            request = parse_head(head[:-4])
            client = peer[0] if peer else "?"
            refused = None if request is None else connections.take(client)
            if request is None:
                answer = BAD_REQUEST
            elif refused is not None:
                answer = refused
            else:
                loop = asyncio.get_running_loop()
                try:
                    answer = await loop.run_in_executor(executor, _answer, handler, request)
                finally:
                    connections.done(client)
            writer.write(answer)
            writer.close()
            await writer.wait_closed()  # the answer is flushed, or the deadline cuts it
    except (TimeoutError, asyncio.LimitOverrunError, ValueError) as error:
        # Silent past its time, or a head too long: one log line now and then, where a
        # traceback would sit among the JSON logs.
        connections.failed.add(client=peer[0] if peer else "?", cause=repr(error))
    except (asyncio.IncompleteReadError, OSError):
        pass  # gone away, or closed to make room: nothing to answer
    except Exception as error:  # the handler failed: the endpoint serves on
        connections.failed.add(client=peer[0] if peer else "?", cause=repr(error))
    finally:
        writer.transport.abort()  # at once, whatever is left unsent (nothing, when answered)


class HttpServer:
    """Serves ``handler`` over HTTP on ``address`` (port 0 picks a free one) until closed.
    ``name`` names it in errors, log events and its thread (``metrics``: ``cannot listen for
    metrics on …``, ``metrics_connections_dropped``, and ``metrics_<failed>`` for a request
    that failed); ``workers`` threads make the answers (None: the loop's default pool)."""

    def __init__(
        self,
        handler: Handler,
        address: str,
        *,
        name: str,
        failed: str = "request_failed",
        workers: int | None = None,
    ) -> None:
        host, port = split_address(address, name)
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except (socket.gaierror, UnicodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise EndpointError(
                f"cannot listen for {name} on {address}: {host!r} is not a host name or "
                f"address of this machine ({reason})"
            ) from None
        family, _, _, _, bound = found[0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(bound)
            listener.listen(BACKLOG)
        except OSError as error:
            listener.close()
            raise EndpointError(
                f"cannot listen for {name} on {address}: {error.strerror or error}"
            ) from None
        listener.setblocking(False)
        self.host = host
        self.port: int = listener.getsockname()[1]
        self._closed = False
        self._executor = (
            None
            if workers is None
            else ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        )
        self._connections = _Connections(name, failed)
        self._loop = asyncio.new_event_loop()
        self._stopped = asyncio.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(handler, listener),
            name=f"{name}-endpoint",
            daemon=True,  # a connection still open never holds up an exit
        )
        self._thread.start()

    def _run(self, handler: Handler, listener: socket.socket) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main(handler, listener))
        finally:
            self._loop.close()

    async def _main(self, handler: Handler, listener: socket.socket) -> None:
        connections = self._connections
        asyncio.get_running_loop().set_exception_handler(  # no traceback: a line now and then
            lambda _, context: connections.failed.add(
                message=str(context.get("message", ""))[:200],
                cause=repr(context.get("exception"))[:200],
            )
        )
        server = await asyncio.start_server(
            lambda reader, writer: _serve(handler, self._executor, connections, reader, writer),
            sock=listener,
            limit=MAX_HEAD,
        )
        async with server:
            await self._stopped.wait()
        for writer in list(connections.waiting):
            writer.transport.abort()

    @property
    def address(self) -> str:
        """Where it listens, the port as bound: ``HOST:PORT``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def close(self) -> None:
        """Stop accepting and free the port (again: nothing); a request under way is cut."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(RuntimeError):  # the loop has ended already
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout=5)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
