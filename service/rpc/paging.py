"""AIP-158 pagination: opaque page tokens bound to what is being listed.

A token is URL-safe base64 of ``{"scope": …, "after": …}``. Anything else a caller sends —
not base64, not UTF-8, not that object, an ``after`` that is not a whole number from 0 to
``MAX_POSITION`` (``Infinity``, ``NaN``, ``1.5``, ``"7"``, 2**70) — is INVALID_ARGUMENT:

>>> page("t:x", 0, token("t:x", 7))
(7, 50)
>>> page("t:x", 0, token("t:x", 2**70))
Traceback (most recent call last):
...
domain.errors.RuleError: page_token is not valid for this request

The widest token of ours, for an id of 128 characters outside the BMP, is within the bound:

>>> len(token("results:" + "\U0001f600" * 128, MAX_POSITION)) <= MAX_TOKEN_LENGTH
True
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

from domain.errors import RuleError
from domain.rules.limits import MAX_POSITION

T = TypeVar("T")
R = TypeVar("R")  # a row of a view
M = TypeVar("M")  # its message
Resp = TypeVar("Resp")  # the response of a page
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
"""Rows of a listing whose rows are small (ledger entries): 1,000 cost about a millisecond."""
MAX_ROUNDS_PAGE_SIZE = 100
"""Rounds of a listing of rounds (``ListRounds``, ``ListRoundResults``, ``ListPlayerRounds``):
each carries hands and results, so one call's cost stays a small fraction of a second whatever
it asks (issue 22)."""
SLICE = 10
"""Rows mapped to messages (about a millisecond of work) between two chances for other threads
to run (``mapped``)."""
SLICE_PAUSE = 0.0001
"""Seconds a heavy read sleeps between two slices. Not ``sleep(0)``: a thread that releases
the interpreter and asks for it back at once usually has it again before a waiting thread
wakes up, which then waits for the switch interval (5 ms)."""
MAX_TOKEN_LENGTH = 4096
"""Characters of a page token. Ours hold a scope of at most a 128-character id, whose
characters JSON escapes to at most 12 each (one outside the BMP is a surrogate pair,
``\\ud83d\\ude00``), and a key below 2**62: about 1,590 characters, 2,116 in base64."""


def page(
    scope: str, page_size: int, page_token: str, maximum: int = MAX_PAGE_SIZE
) -> tuple[int, int]:
    """(the key to continue after, the page size) of a list request. A negative size is
    refused, a size above ``maximum`` is coerced to it (AIP-158: the server may return fewer),
    and a token from another listing or not from us is refused. A newest-first listing
    continues before the key; 0 (no token) is its start either way.

    >>> page("t:x", 2**31 - 1, "", MAX_ROUNDS_PAGE_SIZE)
    (0, 100)
    """
    if page_size < 0:
        raise RuleError("page_size must not be negative", field="page_size")
    size = min(page_size or DEFAULT_PAGE_SIZE, maximum)
    if not page_token:
        return 0, size
    return _after(scope, page_token), size


def _after(scope: str, page_token: str) -> int:
    if len(page_token) > MAX_TOKEN_LENGTH:
        _refuse()
    try:
        raw = base64.b64decode(page_token.encode("ascii"), altchars=b"-_", validate=True)
        data: Any = json.loads(raw, parse_constant=_refuse, parse_float=_refuse)
    except (ValueError, binascii.Error, RecursionError):  # UnicodeError is a ValueError
        _refuse()
    if not isinstance(data, dict) or data.keys() != {"scope", "after"}:
        _refuse()
    after = data["after"]
    if data["scope"] != scope or type(after) is not int or not 0 <= after <= MAX_POSITION:
        _refuse()
    return after


def _refuse(*_: object) -> NoReturn:
    raise RuleError("page_token is not valid for this request", field="page_token")


def token(scope: str, after: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"scope": scope, "after": after}).encode()).decode()


def cut(
    scope: str, rows: Sequence[T], size: int, key: Callable[[T], int]
) -> tuple[Sequence[T], str]:
    """A page of ``rows`` (read one past ``size``, to know whether more follow) and the token
    of the page after it ("" when none follows)."""
    if len(rows) <= size:
        return rows, ""
    shown = rows[:size]
    return shown, token(scope, key(shown[-1]))


def sliced(rows: Sequence[R], to_message: Callable[[R], M]) -> list[M]:
    """``rows`` mapped ``to_message``, in slices: every ``SLICE`` rows the thread lets the
    others have the interpreter, so the event loop does not wait for it through a whole page."""
    messages = []
    for index, row in enumerate(rows):
        if index and not index % SLICE:
            time.sleep(SLICE_PAUSE)  # the GIL released long enough for a waiter to take it
        messages.append(to_message(row))
    return messages


async def listed(
    scope: str,
    request: Any,
    read: Callable[[int, int], Sequence[R]],
    key: Callable[[R], int],
    to_message: Callable[[R], M],
    respond: Callable[[list[M], str], Resp],
    run: Callable[[Callable[[], Resp]], Awaitable[Resp]],
    maximum: int = MAX_PAGE_SIZE,
) -> Resp:
    """One page of a listing, answered whole where ``run`` runs it (a worker thread: a page of a
    hundred rounds is milliseconds of work the event loop, which every call waits for, must not
    wait through): ``read(after, limit)`` reads one row past the page asked for by ``request``
    (its ``page_size`` and ``page_token``, at most ``maximum``), the page's rows are mapped
    ``to_message`` in slices (``sliced``), and ``respond(messages, token of the next page)``
    makes the response."""
    after, size = page(scope, request.page_size, request.page_token, maximum)

    def answer() -> Resp:
        rows, following = cut(scope, read(after, size + 1), size, key)
        return respond(sliced(rows, to_message), following)

    return await run(answer)
