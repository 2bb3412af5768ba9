"""The console's web application (aiohttp): its routes, and what every answer carries.

Read-only: GET and HEAD only, every other method 405. Each page asks the service over gRPC
(``backend``); a refused or failed call is a page with its HTTP status and one sentence, never a
traceback. Every answer carries ``HEADERS``: a Content-Security-Policy that allows no script at
all (none is needed) and only the console's own stylesheet, ``nosniff``, no framing, no
referrer, no caching (the pages show hands), and a ``Server`` that names no version, when
served by ``Runner`` (``command`` does): aiohttp's own answers to requests it cannot parse carry
them too. Served on loopback, a request must also name a loopback host, so a web page elsewhere
cannot reach the console through DNS rebinding.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import quote

import structlog
from aiohttp import web

from domain.errors import RuleError
from domain.ids import check_id
from service._generated.thirteen.v1 import wallet_pb2
from service.security.tls import is_loopback
from service.web import pages, round_page
from service.web.access import AccessLog, server_log
from service.web.backend import Backend, ServiceError
from service.web.labels import COOKIE, Words, choose
from service.web.markup import STYLESHEET, link, page
from service.web.round_view import report_of

BACKEND = web.AppKey("backend", Backend)
LOOPBACK_ONLY = web.AppKey("loopback_only", bool)
READ_METHODS = ("GET", "HEAD")
MAX_TOKEN_LENGTH = 4096  # as the service's page tokens (service.rpc.paging)
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Server": "thirteen-console",  # not aiohttp's name and version
}
PATH_SAFE = "/%:@!$&'()*+,;=-_.~"
"""What a page's own path keeps as sent when it is linked again (the language switch); the
rest is percent-encoded: a browser reads ``\\`` as ``/`` and drops tabs and newlines, so
``/\\evil.example`` would link off the console as ``//evil.example``."""
SEARCH_FIELDS = {"round": ("/rounds", "round_id"), "player": ("/players", "player_id"),
                 "table": ("/tables", "table_id")}  # fmt: skip

log = structlog.get_logger("thirteen.console")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def create_app(backend: Backend, *, loopback_only: bool = True) -> web.Application:
    """The console for the service ``backend`` reaches; ``loopback_only`` also checks that each
    request names a loopback host. Serve it with ``Runner``, which gives every answer
    ``HEADERS``."""
    app = web.Application(middlewares=[_guard])
    app[BACKEND] = backend
    app[LOOPBACK_ONLY] = loopback_only
    app.cleanup_ctx.append(_channel)
    routes = [
        ("/", _search_page),
        ("/search", _search),
        ("/console.css", _stylesheet),
        ("/players/{id}", _player),
        ("/players/", _player),
        ("/tables/{id}", _table),
        ("/tables/", _table),
        ("/rounds/{id}", _round),
        ("/rounds/{id}/{part}", _round),
        ("/rounds/", _round),
    ]
    for path, handler in routes:
        app.router.add_get(path, handler)
    return app


class _Request(web.Request):
    """A request whose answer carries ``HEADERS`` whatever drew it: a page, an error page, or
    aiohttp itself, which answers a request it cannot parse (400: no ``Host``, two of them, a
    header line too long) before any route, middleware or ``on_response_prepare`` signal, with
    ``Server: Python/3.11 aiohttp/…``. The hook that runs as any answer is prepared is the
    request's."""

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        response.headers.update(HEADERS)  # after aiohttp's own Server: this one replaces it
        await super()._prepare_hook(response)


class Runner(web.AppRunner):
    """``web.AppRunner`` whose requests are ``_Request``s, logged by ``AccessLog`` (and
    aiohttp's own errors by ``server_log``), and whose idle connections close after
    ``keepalive_timeout`` seconds.

    aiohttp offers no setting for the headers of its own 400s (aio-libs/aiohttp#3287): this
    passes the application's request factory (``Application._make_request``, not public) the
    request class. ``tests/e2e/test_attack_console.py`` fails if a new aiohttp drops it."""

    def __init__(self, app: web.Application, *, keepalive_timeout: float) -> None:
        super().__init__(
            app,
            access_log_class=AccessLog,
            # aiohttp logs access only when given a logging.Logger; AccessLog writes through
            # structlog instead
            access_log=logging.getLogger("thirteen.console.access"),
            logger=server_log(),
            keepalive_timeout=keepalive_timeout,
        )

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.request_factory = functools.partial(self.app._make_request, _cls=_Request)
        return server


async def _channel(app: web.Application) -> AsyncIterator[None]:
    await app[BACKEND].open()  # grpc.aio needs the loop that serves the pages
    yield
    await app[BACKEND].close()


def _words(request: web.Request) -> Words:
    return Words(choose(request.query, request.cookies, request.headers.get("Accept-Language", "")))


def _host_is_loopback(host: str) -> bool:
    """The Host header names this machine (a port may follow).

    >>> [_host_is_loopback(h) for h in ("127.0.0.1:8080", "localhost", "[::1]:1", "evil.test")]
    [True, True, True, False]
    """
    if (host.startswith("[") and host.endswith("]")) or ":" not in host:
        host += ":0"
    return is_loopback(host)


def _framed(
    request: web.Request, words: Words, title: str, body: str, status: int = 200
) -> web.Response:
    here = "/" + quote(request.rel_url.raw_path, safe=PATH_SAFE).lstrip("/")
    html = page(words, title, body, here, request.query)
    return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")


def _error(
    request: web.Request,
    status: int,
    message: str,
    refused: ServiceError | None = None,
    **headers: str,
) -> web.Response:
    words = _words(request)
    role, allowed = (refused.role, refused.allowed) if refused is not None else ("", ())
    body = pages.error(words, status, message, role, allowed)
    response = _framed(request, words, str(status), body, status)
    response.headers.update(headers)
    return response


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Read-only, loopback hosts only when so served, and every failure a page of its own."""
    words = _words(request)
    if request.method not in READ_METHODS:
        return _error(request, 405, words("read_only_405"), Allow=", ".join(READ_METHODS))
    if request.app[LOOPBACK_ONLY] and not _host_is_loopback(request.host):
        return _error(
            request,
            421,
            f"this console answers requests for 127.0.0.1 or localhost only, not {request.host!r}",
        )
    try:
        response = await handler(request)
    except web.HTTPException as http:
        if http.status < 400:  # a redirect
            raise
        said = words("no_such_page") if http.status == 404 else http.reason
        return _error(request, http.status, said)
    except ServiceError as refused:
        later = {"Retry-After": str(refused.retry_after)} if refused.retry_after else {}
        return _error(request, refused.status, refused.message, refused, **later)
    except RuleError as bad:
        return _error(request, 400, bad.message)
    except Exception:
        log.exception("console_page_failed", path=request.path)
        return _error(request, 500, "the console failed to draw this page; it has been logged")
    if request.query.get("lang") == words.lang:  # the switch: later pages keep the language
        response.set_cookie(
            COOKIE, words.lang, max_age=365 * 86400, httponly=True, samesite="Strict"
        )
    return response


def _id(request: web.Request, field: str) -> str:
    """The page's id, from its path or (for ids a browser would resolve away) ``?id=``; checked
    as the service checks ids: printable, at most 128 characters (else 400)."""
    given = request.match_info.get("id", request.query.get("id", ""))
    return check_id(given, field)


def _token(request: web.Request) -> str:
    token = request.query.get("page", "")
    if len(token) > MAX_TOKEN_LENGTH or not token.isprintable():
        raise RuleError(f"page must be a page token of at most {MAX_TOKEN_LENGTH} characters")
    return token


async def _stylesheet(request: web.Request) -> web.Response:
    return web.Response(text=STYLESHEET, content_type="text/css", charset="utf-8")


async def _search_page(request: web.Request) -> web.Response:
    words = _words(request)
    return _framed(request, words, words("search"), pages.search(words))


async def _search(request: web.Request) -> web.Response:
    """``/search?player=ID`` (or ``round``, ``table``) → that page (303)."""
    words = _words(request)
    given = {k: v.strip() for k, v in request.query.items() if k in SEARCH_FIELDS and v.strip()}
    if len(given) != 1:
        body = pages.search(words, words("search_one"))
        return _framed(request, words, words("search"), body, 400)
    ((kind, value),) = given.items()
    path, field = SEARCH_FIELDS[kind]
    raise web.HTTPSeeOther(link(path, check_id(value, field)))


async def _player(request: web.Request) -> web.Response:
    words = _words(request)
    player_id, token = _id(request, "player_id"), _token(request)
    backend = request.app[BACKEND]

    async def balance() -> wallet_pb2.GetBalanceResponse | ServiceError:
        try:
            return await backend.balance(player_id)
        except ServiceError as refused:
            return refused

    rounds, now = await asyncio.gather(backend.player_rounds(player_id, token), balance())
    body = pages.player(words, player_id, rounds, now, token)
    return _framed(request, words, words("player_title", id=player_id), body)


async def _table(request: web.Request) -> web.Response:
    words = _words(request)
    table_id, token = _id(request, "table_id"), _token(request)
    found = await request.app[BACKEND].table_rounds(table_id, token)
    body = pages.table(words, table_id, found, token)
    return _framed(request, words, words("table_title", id=table_id), body)


async def _round(request: web.Request) -> web.Response:
    """The round page, or its export (``/rounds/ID/export.json``) as a download."""
    round_id = _id(request, "round_id")
    part = request.match_info.get("part", request.query.get("part", ""))
    backend = request.app[BACKEND]
    if part == "export.json":
        download = await backend.export_round(round_id)
        name = re.sub(r"[^A-Za-z0-9._-]", "_", round_id)[:100]
        return web.Response(
            text=download,
            content_type="application/json",
            charset="utf-8",
            headers={"Content-Disposition": f'attachment; filename="round-{name}.json"'},
        )
    if part:
        raise web.HTTPNotFound()
    words = _words(request)
    document, audit = await asyncio.gather(  # one does not need the other: both at once
        backend.export_round(round_id), backend.audit_round(round_id), return_exceptions=True
    )
    if isinstance(document, BaseException):  # first: it names the round's state (409, 404)
        raise document
    if isinstance(audit, BaseException):
        raise audit
    report = await asyncio.to_thread(report_of, document)
    body = round_page.render(words, report, audit)
    return _framed(request, words, words("round_title", id=round_id), body)
