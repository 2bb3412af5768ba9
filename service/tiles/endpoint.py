"""The HTTP endpoint of the log's tiles (``thirteen serve --tiles HOST:PORT``, C2SP
``tlog-tiles``): ``/checkpoint``, ``/tile/<L>/<N>[.p/<W>]`` and ``/tile/entries/<N>[.p/<W>]``
below the address's root, read-only (GET and HEAD), on a port of its own
(``service.http_server``), from the stored tree (``service.transparency.tiles``).

- ``/checkpoint``: the latest signed checkpoint with its cosignatures, ``text/plain``,
  ``Cache-Control: no-cache``; ``503`` before the first is signed.
- Tiles and bundles: ``application/octet-stream``, immutable (``Cache-Control: public,
  max-age=31536000, immutable``), only within the latest checkpoint's tree (``404`` beyond it:
  not yet, so not cached long); a path not spelt as the specification says is ``400``. A bundle
  is gzip-compressed for a client that accepts it (``accepts_gzip``: not ``gzip;q=0``), and
  ``404`` too while one of its events holds what is still hidden
  (``service.transparency.disclosure``).
- Its listener opens before the store (a taken port is refused first); it answers ``503``
  until ``attach`` gives it the log, and again after ``detach``.

The answers are made on ``WORKERS`` threads of its own: a flood of tile requests reads the store
on at most that many connections and leaves the gRPC server's threads alone.
"""

from __future__ import annotations

import structlog

from domain.tlog.tiles import ENTRIES, TilePathError, parse_path
from service.http_server import Answer, HttpServer, Request, Tally
from service.transparency.tiles import TileMismatch, TileReader, Withheld

log = structlog.get_logger("thirteen.tiles")
WORKERS = 2  # threads that read tiles from the store at once
IMMUTABLE = "public, max-age=31536000, immutable"
SHORT = "no-cache"  # the checkpoint, and what may exist later
# No Access-Control-Allow-Origin: a page in the browser of someone who reaches a private
# endpoint must not read its bundles for a site elsewhere.
COMMON = [("X-Content-Type-Options", "nosniff")]


def _text(status: str, message: str, *extra: tuple[str, str]) -> Answer:
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", SHORT)]
    return Answer(status, headers + COMMON + list(extra), (message + "\n").encode())


def accepts_gzip(accepted: str) -> bool:
    """Whether an ``Accept-Encoding`` header accepts gzip: ``gzip``, ``x-gzip`` or ``*`` with a
    weight above 0 (``gzip;q=0`` refuses it: RFC 9110 12.5.3).

    >>> accepts_gzip("gzip"), accepts_gzip("br, GZIP;q=0.5"), accepts_gzip("*")
    (True, True, True)
    >>> accepts_gzip("gzip;q=0"), accepts_gzip("x-nogzip"), accepts_gzip("*, gzip;q=0")
    (False, False, False)
    """
    weights: dict[str, bool] = {}
    for item in accepted.split(","):
        coding, *parameters = (part.strip() for part in item.split(";"))
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding.lower()] = weight > 0
    for coding in ("gzip", "x-gzip"):
        if coding in weights:
            return weights[coding]
    return weights.get("*", False)


class TilesEndpoint(HttpServer):
    """The log's tiles over HTTP on ``address`` (port 0 picks a free one) until closed."""

    def __init__(self, address: str) -> None:
        self.reader: TileReader | None = None
        self._unavailable = Tally("tiles_unavailable")  # a store down: a line now and then
        super().__init__(self.handle, address, name="tiles", workers=WORKERS)

    def attach(self, reader: TileReader) -> None:
        self.reader = reader

    def detach(self) -> None:
        self.reader = None

    def handle(self, request: Request) -> Answer:
        """The answer to one request (on a worker thread)."""
        if request.method not in ("GET", "HEAD"):
            return _text("405 Method Not Allowed", "read-only: GET or HEAD", ("Allow", "GET, HEAD"))
        reader = self.reader
        if reader is None:
            return _text(
                "503 Service Unavailable", "the log is not served yet", ("Retry-After", "1")
            )
        try:
            return self._answer(reader, request)
        except Withheld as error:  # a hand of a round in progress: not yet
            return _text("404 Not Found", str(error), ("Retry-After", "5"))
        except (TileMismatch, ValueError) as error:  # or an entry too long for a bundle
            log.error("tiles_unservable", path=request.path, reason=str(error))
            return _text("500 Internal Server Error", "the stored log cannot be served there")
        except Exception as error:  # the store did not answer: a cut session, a timeout
            self._unavailable.add(path=request.path, cause=repr(error))
            return _text(
                "503 Service Unavailable", "the store did not answer", ("Retry-After", "1")
            )

    def _answer(self, reader: TileReader, request: Request) -> Answer:
        path = request.path
        if path == "/checkpoint":
            found = reader.checkpoint()
            if found is None:
                return _text(
                    "503 Service Unavailable", "no checkpoint signed yet", ("Retry-After", "1")
                )
            headers = [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", SHORT)]
            return Answer("200 OK", headers + COMMON, found[1].encode())
        if not path.startswith("/tile/"):
            return _text("404 Not Found", "not found: /checkpoint and /tile/… are served")
        try:
            tile = parse_path(path[1:])
        except TilePathError as error:
            return _text("400 Bad Request", f"bad tile path: {error}")
        gzipped = tile.level == ENTRIES and accepts_gzip(request.headers.get("accept-encoding", ""))
        data = reader.tile(tile, compressed=gzipped)
        if data is None:
            return _text("404 Not Found", f"{tile.path} is beyond the latest checkpoint")
        headers = [("Content-Type", "application/octet-stream"), ("Cache-Control", IMMUTABLE)]
        if tile.level == ENTRIES:
            headers.append(("Vary", "Accept-Encoding"))
        if gzipped:
            headers.append(("Content-Encoding", "gzip"))
        return Answer("200 OK", headers + COMMON, data)
