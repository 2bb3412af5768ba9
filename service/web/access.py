"""The console's access log: one structured line per answer (``console_request``), with who
asked (the peer, and what a proxy in front says about the user) for what, the status and how
long it took. The console shows every hand and balance; this is the record of who looked.

Everything in the line but the status and the duration comes from the client, or from a proxy
that passes on what its client sent: each value is clipped and its unprintable characters (and
backslashes) are escaped, so no value can forge another line, field or terminal control.
"""

from __future__ import annotations

import logging

import structlog
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

SERVER_LOG = "thirteen.console.server"
LOGGED_CHARACTERS = 256
"""The most kept of one value (a path, a header): enough for a 128-character id encoded."""
FORWARDED = {
    "Forwarded": "forwarded",
    "X-Forwarded-For": "forwarded_for",
    "X-Real-IP": "real_ip",
    "X-Forwarded-User": "forwarded_user",
    "X-Forwarded-Email": "forwarded_email",
    "X-Auth-Request-User": "auth_request_user",
    "X-Auth-Request-Email": "auth_request_email",
    "Remote-User": "remote_user",
}
"""Headers a proxy in front sets about the client and the user it authenticated (RFC 7239,
the de-facto X-Forwarded-*, oauth2-proxy's X-Auth-Request-*), and their fields in the line.
They are logged as sent: the console cannot tell a proxy's from a client's own."""

log = structlog.get_logger("thirteen.console.access")


def clip(text: str, limit: int = LOGGED_CHARACTERS) -> str:
    """``text`` for a log line: unprintable characters and backslashes escaped as Python
    writes them, at most ``limit`` characters of it kept and ``…`` after a cut.

    >>> clip("ann\\x1b[2J\\u202e"), clip("a\\\\b"), clip("x" * 5, 3)
    ('ann\\\\x1b[2J\\\\u202e', 'a\\\\\\\\b', 'xxx…')
    """
    shown = "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in text[:limit])
    return shown + ("…" if len(text) > limit else "")


class AccessLog(AbstractAccessLogger):
    """aiohttp's access logger, writing through structlog (``service.logging``): one line
    per answer, aiohttp's own 400s for requests it could not parse included (their method
    is ``UNKNOWN``)."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        said = {
            field: clip(", ".join(request.headers.getall(header)))
            for header, field in FORWARDED.items()
            if header in request.headers
        }
        log.info(
            "console_request",
            method=clip(request.method),
            path=clip(request.path),
            query=clip(request.query_string),
            status=response.status,
            client=clip(request.remote or ""),
            duration_ms=round(time * 1000, 1),
            **said,
        )


class _OneLine(logging.Handler):
    """A record of aiohttp's own server log as one structured line (``console_http_error``):
    the reason a request could not be parsed, say, which aiohttp would print with a
    traceback, lines that any client can make the console write."""

    def emit(self, record: logging.LogRecord) -> None:
        cause = record.exc_info[1] if record.exc_info else None
        log.log(
            record.levelno,
            "console_http_error",
            said=clip(record.getMessage()),
            cause=clip(f"{type(cause).__name__}: {cause}") if cause is not None else "",
        )


def server_log() -> logging.Logger:
    """The logger to give aiohttp for its server's own messages: they come out as structured
    lines, not through the standard library's last-resort handler."""
    found = logging.getLogger(SERVER_LOG)
    if not found.handlers:
        found.addHandler(_OneLine())
        found.propagate = False
    return found
