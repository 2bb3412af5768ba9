"""What an end-to-end test does through the real API: set up wallets and tables, arrange hands
(with the domain's own advice, as a client library would), read rich errors, follow WatchTable
streams and poll for the deadline sweeper. Every call goes over gRPC; the only things read from
the server process are the store's head position (to prove a refused command stored nothing)
and, for special hands, the committed seed (see ``client_seed_for``)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from domain.fairness.shuffle import deal as shuffle_deal
from domain.ids import deal_round_id
from domain.rules.arrangement import Arrangement
from domain.rules.cards import Card, format_cards, parse_cards
from domain.rules.ruleset import STANDARD, Ruleset
from domain.rules.settlement import gross, settle
from domain.rules.suggest import suggest
from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc, wallet_pb2, wallet_pb2_grpc
from tests.support.server import ServerThread

DOMAIN = "thirteen.v1"
WAIT = 10.0  # seconds: generous bound for anything the server does in the background
Piles = tuple[list[str], list[str], list[str]]

PHASE = table_pb2.RoundPhase
_T = TypeVar("_T")


class Served(Protocol):
    """What most helpers use of a server under test: its wallet and table stubs. A
    ``ServerThread``, or ``thirteen serve`` in a process of its own (``ServeProcess``)."""

    @property
    def wallets(self) -> wallet_pb2_grpc.WalletServiceStub: ...

    @property
    def tables(self) -> table_pb2_grpc.TableServiceStub: ...


# Wallets and tables ---------------------------------------------------------------------------


def credit(server: Served, player_id: str, amount: int, transfer_id: str = "") -> int:
    reply = server.wallets.Credit(
        wallet_pb2.CreditRequest(
            player_id=player_id,
            amount=amount,
            transfer_id=transfer_id or f"credit-{player_id}-{uuid.uuid4().hex}",
        )
    )
    return reply.balance


def balance(server: Served, player_id: str) -> int:
    return server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player_id)).balance


def balances(server: Served, players: Sequence[str]) -> dict[str, int]:
    return {p: balance(server, p) for p in players}


def open_table(
    server: Served,
    table_id: str,
    *,
    ruleset: str = "",
    parameters: table_pb2.RulesetParameters | None = None,
    request_id: str = "",
) -> table_pb2.OpenTableResponse:
    request = table_pb2.OpenTableRequest(table_id=table_id, ruleset=ruleset, request_id=request_id)
    if parameters is not None:
        request.ruleset_parameters.CopyFrom(parameters)
    return server.tables.OpenTable(request)


def sit(server: Served, table_id: str, player_id: str) -> table_pb2.SitDownResponse:
    return server.tables.SitDown(table_pb2.SitDownRequest(table_id=table_id, player_id=player_id))


def stand(server: Served, table_id: str, player_id: str) -> table_pb2.StandUpResponse:
    return server.tables.StandUp(table_pb2.StandUpRequest(table_id=table_id, player_id=player_id))


def seated_table(
    server: Served,
    table_id: str,
    coins: dict[str, int],
    *,
    ruleset: str = "",
    parameters: table_pb2.RulesetParameters | None = None,
) -> table_pb2.SitDownResponse:
    """Credit each player, open the table and seat them in the order given."""
    for player, amount in coins.items():
        credit(server, player, amount, f"start-{player}")
    open_table(server, table_id, ruleset=ruleset, parameters=parameters)
    table = None
    for player in coins:
        table = sit(server, table_id, player)
    assert table is not None
    return table


def get_table(server: Served, table_id: str) -> table_pb2.GetTableResponse:
    return server.tables.GetTable(table_pb2.GetTableRequest(table_id=table_id))


def get_round(server: Served, round_id: str, viewer: str = "") -> table_pb2.GetRoundResponse:
    return server.tables.GetRound(table_pb2.GetRoundRequest(round_id=round_id, viewer=viewer))


def deal(
    server: Served, table_id: str, client_seed: str = "", request_id: str = ""
) -> table_pb2.DealResponse:
    return server.tables.Deal(
        table_pb2.DealRequest(table_id=table_id, client_seed=client_seed, request_id=request_id)
    )


def reveal(server: Served, round_id: str) -> table_pb2.RevealResponse:
    return server.tables.Reveal(table_pb2.RevealRequest(round_id=round_id))


def hands_of(dealt: Any) -> dict[str, list[str]]:
    """The hands of a Deal, GetRound or Round message, by player."""
    return {hand.player_id: list(hand.cards) for hand in dealt.hands}


# Arrangements ---------------------------------------------------------------------------------


def good_piles(cards: Sequence[str], ruleset: Ruleset = STANDARD) -> Piles:
    """A non-foul arrangement (R4.2), as ``domain.rules.suggest`` advises."""
    arrangement = suggest(parse_cards(cards), ruleset).arrangement
    return (
        format_cards(arrangement.front),
        format_cards(arrangement.middle),
        format_cards(arrangement.back),
    )


def foul_piles(cards: Sequence[str], seed: int = 13) -> Piles:
    """A foul arrangement (R4.2) of these cards, the same one every time for the same cards."""
    hand = list(parse_cards(cards))
    rng = random.Random(seed)
    for _ in range(10_000):
        rng.shuffle(hand)
        arrangement = Arrangement.of(hand[:3], hand[3:8], hand[8:])
        if arrangement.foul_reason() is not None:
            return format_cards(hand[:3]), format_cards(hand[3:8]), format_cards(hand[8:])
    raise AssertionError(f"no foul arrangement found for {cards}")


def arrange(
    server: Served,
    round_id: str,
    player_id: str,
    piles: Piles = ([], [], []),
    special: str = "",
) -> table_pb2.ArrangeResponse:
    front, middle, back = piles
    return server.tables.Arrange(
        table_pb2.ArrangeRequest(
            round_id=round_id,
            player_id=player_id,
            front=front,
            middle=middle,
            back=back,
            special=special,
        )
    )


def arrange_well(
    server: Served, dealt: Any, players: Sequence[str] | None = None
) -> dict[str, Piles]:
    """Every (or the given) player submits a non-foul arrangement; returns them."""
    hands = hands_of(dealt)
    submitted = {}
    for player in players if players is not None else list(hands):
        piles = good_piles(hands[player])
        reply = arrange(server, dealt.round_id, player, piles)
        assert not reply.foul, reply.foul_reason
        submitted[player] = piles
    return submitted


def client_seed_for(
    server: ServerThread,
    table_id: str,
    request_id: str,
    players: int,
    wanted: Callable[[tuple[tuple[Card, ...], ...]], bool],
    tries: int = 50_000,
) -> str:
    """A client seed whose deal (with this request id) gives hands that ``wanted`` accepts.

    Special hands are rare (about one hand in a hundred), so rather than deal blindly the test
    reads the seed the table committed to from the server's own application object and tries
    client seeds offline through the R12 shuffle, then deals through the API as usual. This is
    what a caller who knew the unrevealed seed could do; R12.1 is why no caller does."""
    seed = server.app.table(table_id).committed_seed(server.app.seed_keys)
    round_id = deal_round_id(table_id, request_id)
    for k in range(tries):
        client_seed = f"pick-{k}"
        if wanted(shuffle_deal(seed, client_seed, round_id, players)):
            return client_seed
    raise AssertionError(f"no client seed among {tries} gives the wanted hands")


# Rich errors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """A refused call, with the google.rpc details the service attaches."""

    code: grpc.StatusCode
    message: str
    reason: str
    domain: str
    field_violations: dict[str, str] = field(default_factory=dict)
    precondition_violations: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def of(cls, error: grpc.RpcError) -> Refusal:
        # A synchronous call's error is its grpc.Call; an aio call's has the same methods.
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        assert status is not None, f"{error.code()} without rich details: {error.details()}"
        assert status.code == error.code().value[0]
        info = error_details_pb2.ErrorInfo()
        fields: dict[str, str] = {}
        preconditions = []
        found_info = False
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                detail.Unpack(info)
                found_info = True
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                fields.update({v.field: v.description for v in bad.field_violations})
            elif detail.Is(error_details_pb2.PreconditionFailure.DESCRIPTOR):
                failure = error_details_pb2.PreconditionFailure()
                detail.Unpack(failure)
                preconditions += [(v.type, v.subject, v.description) for v in failure.violations]
        assert found_info, f"no google.rpc.ErrorInfo in {error.details()}"
        return cls(error.code(), status.message, info.reason, info.domain, fields, preconditions)


def refusal_of(call: Callable[[Any], Any], request: Any) -> Refusal:
    try:
        reply = call(request)
    except grpc.RpcError as error:
        return Refusal.of(error)
    raise AssertionError(f"expected a refusal, got {type(reply).__name__}: {reply}")


def assert_refused(
    call: Callable[[Any], Any],
    request: Any,
    code: grpc.StatusCode,
    reason: str,
    *,
    field: str | None = None,
    says: str = "",
) -> Refusal:
    """The call fails with ``code`` and an ErrorInfo ``reason`` in our domain; malformed input
    names the ``field`` in a BadRequest, a broken rule or phase gives a PreconditionFailure."""
    refused = refusal_of(call, request)
    assert refused.code == code, f"{refused.code} ({refused.message}), expected {code}"
    assert (refused.reason, refused.domain) == (reason, DOMAIN), refused
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        assert refused.field_violations, f"no BadRequest field violation: {refused}"
        if field is not None:
            assert field in refused.field_violations, (
                f"BadRequest names {list(refused.field_violations)}, expected {field!r}"
            )
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        assert [v[0] for v in refused.precondition_violations] == [reason], refused
        if field is not None:
            assert refused.precondition_violations[0][1] == field, refused
    assert says.lower() in refused.message.lower(), f"{refused.message!r} lacks {says!r}"
    return refused


# Nothing stored -------------------------------------------------------------------------------


def head(server: ServerThread) -> int:
    """The position of the last event in the server's store (0 when empty)."""
    return server.app.recorder.max_notification_id() or 0


def _observe(
    server: ServerThread, tables: Sequence[str], rounds: Sequence[str], players: Sequence[str]
) -> dict[str, Any]:
    seen: dict[str, Any] = {"head": head(server)}
    for table_id in tables:
        seen[f"table {table_id}"] = get_table(server, table_id)
    for round_id in rounds:
        for viewer in ["", *players]:
            seen[f"round {round_id} as {viewer!r}"] = get_round(server, round_id, viewer)
    for player in players:
        try:
            reply: Any = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player))
        except grpc.RpcError as error:
            reply = error.code()
        seen[f"wallet {player}"] = reply
    return seen


@contextmanager
def nothing_stored(
    server: ServerThread,
    *,
    tables: Sequence[str] = (),
    rounds: Sequence[str] = (),
    players: Sequence[str] = (),
) -> Iterator[None]:
    """The block's refused commands append no event anywhere and change no table, round or
    wallet as the API shows them."""
    before = _observe(server, tables, rounds, players)
    yield
    after = _observe(server, tables, rounds, players)
    changed = [key for key in before if before[key] != after[key]]
    assert not changed, f"a refused command changed {changed}"


# Streams --------------------------------------------------------------------------------------


def watch(
    server: Served,
    table_id: str,
    *,
    after: int = 0,
    viewer: str = "",
    timeout: float = WAIT * 3,
) -> Any:
    return server.tables.WatchTable(
        table_pb2.WatchTableRequest(table_id=table_id, after=after, viewer=viewer),
        timeout=timeout,
    )


def first_message(method: Callable[..., Any]) -> Callable[[Any], Any]:
    """A server-streaming RPC as a call that returns its first message (or raises its error)."""

    def call(request: Any) -> Any:
        stream = method(request, timeout=WAIT)
        try:
            return next(stream)
        finally:
            stream.cancel()

    return call


def anything(message: Any) -> bool:
    """Stops ``read_until`` at the first message."""
    return True


def read_until(stream: Any, last: Callable[[Any], bool]) -> list[Any]:
    """Messages from an open stream up to and including the first that ``last`` accepts."""
    seen: list[Any] = []
    try:
        for message in stream:
            seen.append(message)
            if last(message):
                return seen
    except grpc.RpcError as error:
        raise AssertionError(
            f"stream ended with {error.code()} after {[(m.position, m.type) for m in seen]}"
        ) from None
    raise AssertionError(f"stream ended after {[(m.position, m.type) for m in seen]}")


def events(
    server: Served,
    table_id: str,
    last: Callable[[Any], bool],
    *,
    after: int = 0,
    viewer: str = "",
) -> list[Any]:
    """The table's events after ``after`` as ``viewer`` sees them, up to ``last``."""
    stream = watch(server, table_id, after=after, viewer=viewer)
    try:
        return read_until(stream, last)
    finally:
        stream.cancel()


def of_type(kind: str, player_id: str = "") -> Callable[[Any], bool]:
    return lambda m: m.type == kind and (not player_id or m.player_id == player_id)


def assert_no_table_event_since(server: Served, table_id: str, position: int) -> None:
    """WatchTable shows no event after ``position`` but the sentinel this helper causes: a
    fresh player sits down (the table must have a free seat) and stands up again."""
    sentinel = f"sentinel-{uuid.uuid4().hex[:12]}"
    credit(server, sentinel, 10**6, f"start-{sentinel}")
    sit(server, table_id, sentinel)
    first = events(server, table_id, anything, after=position)[0]
    stand(server, table_id, sentinel)
    assert (first.type, first.player_id) == ("PlayerSatDown", sentinel), (
        f"WatchTable shows {first.type} by {first.player_id!r} at {first.position} "
        f"after position {position}"
    )


# Waiting --------------------------------------------------------------------------------------


def wait_until(check: Callable[[], _T | None], what: str, timeout: float = WAIT) -> _T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout} s waiting for {what}")
        time.sleep(0.02)


def wait_for_phase(server: Served, round_id: str, phase: int) -> table_pb2.GetRoundResponse:
    def reached() -> table_pb2.GetRoundResponse | None:
        found = get_round(server, round_id)
        return found if found.phase == phase else None

    return wait_until(reached, f"round {round_id} to reach {PHASE.Name(phase)}")


def expected_coins(result: Any, players: Sequence[Any]) -> dict[str, int]:
    """R7, R9 from the revealed points and the balances recorded at the deal."""
    active = [p for p in players if not p.escaped]
    points = {p.player_id: p.points for p in result.players}
    coins = settle(
        gross([points[p.player_id] for p in active], result.base_stake),
        [p.balance_at_deal for p in active],
    )
    return {p.player_id: c for p, c in zip(active, coins, strict=True)}


def showdowns(server: Served, table: str, rounds: int) -> list[str]:
    """``rounds`` rounds at a seated ``table``, each dealt, arranged well and revealed; their
    round ids in order."""
    played = []
    for _ in range(rounds):
        dealt = deal(server, table)
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
        played.append(dealt.round_id)
    return played


def unarranged_rounds(app: Any, clock: Any, players: Sequence[str], rounds: int) -> None:
    """``rounds`` rounds of ``players`` at table ``t``, written by the application ``app``
    itself (quicker than over gRPC), each revealed once ``clock`` passed its deadline with
    nobody arranged (R10.3: all foul, R4.3)."""
    for player in players:
        app.credit(player, 10**9, f"start-{player}")
    app.open_table("t", STANDARD)
    for player in players:
        app.sit_down("t", player)
    for k in range(rounds):
        dealt = app.deal("t", request_id=f"r{k}")
        clock.advance(61)
        app.reveal(dealt.round_id)
