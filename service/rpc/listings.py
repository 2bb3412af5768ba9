"""The listings of rounds (``ListRounds``, ``ListRoundResults``, ``ListPlayerRounds``), each
once: what a page reads from the views, its rows' key and message, and its response. A page is
answered from them in the serving process or in a reader process (``service.rpc.reader``,
issue 22), alike: ``service.rpc.pages`` dispatches it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from projections.store import FinishedRound, PlayerRound, ViewsMissing, ViewStore
from service._generated.thirteen.v1 import results_pb2, table_pb2
from service.application import no_wallet
from service.errors import NotFound, Unavailable
from service.rpc import mapping, paging
from service.rpc.views import Behind, snapshot

Answer = tuple[Any, ...]
"""What a reader process answers for a page: ``("page", the encoded response)``, ``("behind",
the position the views must reach)``, ``("missing",)`` (the views are being rebuilt) or
``("refused", the error's class name in ``REFUSALS``, its message, its field)``."""
REFUSALS: dict[str, type[NotFound] | type[Unavailable]] = {
    "NotFound": NotFound,
    "Unavailable": Unavailable,
}


def balance_of(store: ViewStore, player_id: str) -> int:
    """The player's balance in the views; NOT_FOUND for a player without a wallet. Every wallet
    begins with a credit, in the same commit that opens it, so views that hold the log up to
    some position know of every wallet opened up to there."""
    balance = store.balance(player_id)
    if balance is None:
        raise no_wallet(player_id)
    return balance


@dataclass(frozen=True)
class Listing:
    """One listing: ``rows(store, subject, after, limit)`` read in a snapshot of the views (its
    subject: a table or a player), ``key`` of a row for the next page's token, ``message`` of a
    row, ``respond(messages, next token)``; ``scope`` binds its tokens (``paging``), ``what``
    names the read in a message (``{}``: the subject's repr). ``newest_first``: a later page
    needs the views only up to where it starts (``before - 1``)."""

    scope: str
    rows: Callable[[ViewStore, str, int, int], Sequence[Any]]
    key: Callable[[Any], int]
    message: Callable[[Any], Message]
    respond: Callable[[list[Any], str], Message]
    what: str
    newest_first: bool = False


def table_round(found: FinishedRound) -> results_pb2.TableRound:
    message = results_pb2.TableRound(
        round_id=found.round_id,
        number=found.number,
        outcome=found.outcome,
        base_stake=found.base_stake,
        ended_at=mapping.timestamp(found.ended_at),
    )
    if found.result is not None:
        message.result.CopyFrom(
            table_pb2.RoundResult(**mapping.result_fields(found.result), receipt=found.receipt)
        )
    return message


def player_round(found: PlayerRound) -> results_pb2.PlayerRound:
    line = found.line
    return results_pb2.PlayerRound(
        round_id=line.round_id,
        table_id=line.table_id,
        number=line.number,
        seat=line.seat,
        dealt_at=mapping.timestamp(line.dealt_at),
        ended_at=mapping.timestamp(line.ended_at),
        outcome=line.outcome,
        base_stake=line.base_stake,
        cards=line.cards,
        front=line.front,
        middle=line.middle,
        back=line.back,
        special=line.special,
        foul=line.foul,
        foul_reason=line.foul_reason,
        escaped=line.escaped,
        points=line.points,
        coins=line.coins,
        balance_before=found.balance_before,
        balance_after=found.balance_after,
    )


def _recall(store: ViewStore, player_id: str, before: int, limit: int) -> list[PlayerRound]:
    balance_of(store, player_id)
    return store.player_rounds(player_id, before, limit)


LISTINGS = {
    # A token holds the number of the last round listed: rounds are numbered 1, 2, … at each
    # table (R10.1), so the tokens of the offsets that earlier versions gave mean the same.
    "rounds": Listing(
        "t",
        lambda store, table_id, after, limit: store.listed_rounds(table_id, after, limit),
        lambda row: int(row["number"]),
        mapping.listed_round,
        lambda rounds, following: table_pb2.ListRoundsResponse(
            rounds=rounds, next_page_token=following
        ),
        "the rounds of table {}",
    ),
    # Not ListRounds' scope ("t"): its tokens count rounds, these hold a round's number.
    "results": Listing(
        "results",
        lambda store, table_id, after, limit: store.table_history(table_id, after, limit),
        lambda row: row.number,
        table_round,
        lambda rounds, following: results_pb2.ListRoundResultsResponse(
            rounds=rounds, next_page_token=following
        ),
        "the rounds of table {}",
    ),
    "recall": Listing(
        "recall",
        _recall,
        lambda row: row.position,
        player_round,
        lambda rounds, following: results_pb2.ListPlayerRoundsResponse(
            rounds=rounds, next_page_token=following
        ),
        "the rounds of {} that are over",
        newest_first=True,
    ),
}


def encoded(
    store: ViewStore, kind: str, subject: str, after: int, size: int, upto: int | None
) -> Answer:
    """A page of the listing ``kind`` (``LISTINGS``) read and encoded whole, where a reader
    process runs it: the rows after ``after`` in a snapshot of views that hold the log up to
    ``upto`` (``service.rpc.views.snapshot``), or what stood in the way (``Answer``)."""
    listing = LISTINGS[kind]
    scope = f"{listing.scope}:{subject}"
    try:
        rows = snapshot(store, lambda s: listing.rows(s, subject, after, size + 1), upto)
    except Behind as behind:
        return ("behind", behind.target)
    except ViewsMissing:
        return ("missing",)
    except (NotFound, Unavailable) as refused:
        name = "NotFound" if isinstance(refused, NotFound) else "Unavailable"
        return ("refused", name, refused.message, refused.field)
    shown, following = paging.cut(scope, rows, size, listing.key)
    response = listing.respond([listing.message(row) for row in shown], following)
    return ("page", response.SerializeToString())
