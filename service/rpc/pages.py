"""A page of a listing of rounds (``service.rpc.listings``), answered as of the call: read in a
reader process and answered with the bytes it encoded (``service.rpc.reader``), or, without
reader processes, read and mapped on a worker thread here. Either way a heavy read
(``Runner.heavy``, paced: here one at a time, in readers as many at once as there are readers),
with ``Views``' waiting for the views around it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from projections.store import ViewsMissing
from service.errors import NotFound
from service.rpc import paging
from service.rpc.guards import GuardingInterceptor, Handler
from service.rpc.listings import LISTINGS, REFUSALS, Listing
from service.rpc.reader import Reader
from service.rpc.runner import Runner
from service.rpc.views import Behind, Views

ENCODED = (
    "/thirteen.v1.TableService/ListRounds",
    "/thirteen.v1.ResultsService/ListRoundResults",
    "/thirteen.v1.ResultsService/ListPlayerRounds",
)
"""The methods whose answer may come encoded already (``PassEncoded``)."""


class Pages:
    """The pages of the listings, read from ``views`` (in ``reader``'s processes, when given)
    as heavy reads of ``run``."""

    def __init__(self, views: Views, run: Runner, reader: Reader | None) -> None:
        self.views = views
        self.run = run
        self.reader = reader
        # Pages read elsewhere take turns of their own, as many at once as there are readers
        # (the serving process only hands each over); read here, one heavy read at a time.
        self.lane = None if reader is None else asyncio.Semaphore(reader.processes)

    async def listed(
        self, kind: str, subject: str, request: Any, check: Callable[[], object]
    ) -> Any:
        """The page ``request`` asks (its ``page_size`` and ``page_token``) of the listing
        ``kind`` of ``subject``: its response, or the response encoded (bytes). ``check()``
        runs first on the worker thread (the subject's existence, read from the log)."""
        listing = LISTINGS[kind]
        scope = f"{listing.scope}:{subject}"
        after, size = paging.page(
            scope, request.page_size, request.page_token, paging.MAX_ROUNDS_PAGE_SIZE
        )
        what = listing.what.format(repr(subject))

        def here(upto: int | None) -> Any:
            rows = self.views.read(
                lambda s: listing.rows(s, subject, after, size + 1), what, upto=upto
            )
            shown, following = paging.cut(scope, rows, size, listing.key)
            return listing.respond(paging.sliced(shown, listing.message), following)

        def there(upto: int | None) -> bytes:
            return self.views.attempted(
                lambda target: self._asked(kind, subject, after, size, target), what, upto=upto
            )

        def answer() -> Any:
            check()
            return _as_of(listing, after, here if self.reader is None else there)

        return await self.run.heavy(answer, lane=self.lane)

    async def of_table(self, kind: str, request: Any, check_table: Callable[[str], object]) -> Any:
        """The page ``request`` asks of the listing ``kind`` of its ``table_id`` (``listed``);
        NOT_FOUND for an unknown table (``check_table``), before the page is read."""
        table_id = request.table_id
        return await self.listed(kind, table_id, request, lambda: check_table(table_id))

    def _asked(self, kind: str, subject: str, after: int, size: int, upto: int | None) -> bytes:
        assert self.reader is not None
        answer = self.reader.page(kind, subject, after, size, upto)
        if answer[0] == "page":
            page: bytes = answer[1]
            return page
        if answer[0] == "behind":
            raise Behind(answer[1])
        if answer[0] == "missing":
            raise ViewsMissing
        _, name, message, field = answer
        raise REFUSALS[name](message, field=field)


def _as_of(listing: Listing, after: int, read: Callable[[int | None], Any]) -> Any:
    """``read(upto)`` of a page as of the call: views that hold every event stored before it
    (``upto`` None). A later page of a newest-first listing (recall) needs the views only up to
    where it starts: rows are written in the order of their positions, so none below it can
    still come."""
    if not (listing.newest_first and after):
        return read(None)
    try:
        return read(after - 1)
    except NotFound:  # no wallet up to there (a made-up token): perhaps one since
        return read(None)


class PassEncoded(GuardingInterceptor):
    """The listings' answers sent as they come when a reader process encoded them (bytes), as
    ``service.routing.forwarding`` sends a forwarded answer; a message is encoded as always."""

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        if path not in ENCODED:
            return found
        handler: Any = found  # grpc.aio's handlers are namedtuples, rewired untyped
        serialize = handler.response_serializer

        def passing(response: Any) -> bytes:
            return response if isinstance(response, bytes) else serialize(response)

        rewired: Handler[Any, Any] = handler._replace(response_serializer=passing)
        return rewired
