"""Limits and hostile input through the real server: every amount, balance and ruleset
parameter has a documented bound (``domain.rules.limits``), and whatever a caller sends, a refusal
is INVALID_ARGUMENT, NOT_FOUND or FAILED_PRECONDITION with a short message — never INTERNAL,
UNKNOWN or RESOURCE_EXHAUSTED — and stores nothing.

The numbers are written out here rather than imported, so that these tests read as the API's
contract (wallet.proto, table.proto)."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_status import rpc_status

from domain.rules.ruleset import ALL_PRESETS, STANDARD
from service._generated.thirteen.v1 import (
    audit_pb2,
    diagnostics_pb2,
    results_pb2,
    table_pb2,
    wallet_pb2,
)
from tests.e2e.helpers import (
    Refusal,
    arrange,
    arrange_well,
    assert_refused,
    balance,
    credit,
    deal,
    first_message,
    foul_piles,
    get_table,
    good_piles,
    hands_of,
    head,
    nothing_stored,
    open_table,
    reveal,
    seated_table,
    sit,
    wait_until,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

INVALID = grpc.StatusCode.INVALID_ARGUMENT
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
REFUSALS = {INVALID, grpc.StatusCode.NOT_FOUND, PRECONDITION}
SHORT = 300  # characters of a status message (service.rpc.status)

MAX_TRANSFER = 10**12  # wallet.proto
MAX_BALANCE = 10**15  # wallet.proto
INT32 = 2**31 - 1
INT64 = 2**63 - 1
LONG = "x" * 100_000
WIDE = "水" * 30_000
EMOJI = "\U0001f600" * 25_000


# A. Amounts and balances --------------------------------------------------------------------


def test_a_transfer_above_max_transfer_is_invalid_argument_and_stores_nothing(
    server: ServerThread,
) -> None:
    """wallet.proto: an amount is 1 … 10^12 coins. Before the limit, two credits of 2^62 took
    the ledger's external account past int64 and the views stopped for good."""
    credit(server, "A", 1000, "start-A")
    transfers: list[tuple[Callable[[Any], Any], Callable[..., Any]]] = [
        (server.wallets.Credit, wallet_pb2.CreditRequest),
        (server.wallets.Debit, wallet_pb2.DebitRequest),
    ]
    with nothing_stored(server, players=["A", "N"]):
        for player, amount in [("A", 2**62), ("N", 2**62), ("A", INT64), ("A", MAX_TRANSFER + 1)]:
            for call, request_type in transfers:
                if (call, player) == (server.wallets.Debit, "N"):
                    continue  # no wallet: NOT_FOUND comes first
                request = request_type(player_id=player, amount=amount, transfer_id=f"big-{amount}")
                assert_refused(
                    call,
                    request,
                    INVALID,
                    "INVALID_ARGUMENT",
                    field="amount",
                    says="at most 1,000,000,000,000 coins",
                )
    assert credit(server, "A", MAX_TRANSFER, "max") == MAX_TRANSFER + 1000
    _views_follow(server, "A", transfer_id="max")


def test_a_balance_takes_no_credit_past_max_balance_and_winnings_past_it_block_the_deal(
    server: ServerThread, clock: ManualClock
) -> None:
    """wallet.proto: a credit may take a balance to at most 10^15 coins. Winnings may pass it
    (R9.1: they come out of the others' balances), and then the next deal is refused naming the
    player (FAILED_PRECONDITION) until they withdraw. Before the limit, a credit past 2^63 - 1
    was stored and every later GetBalance of that wallet failed with INTERNAL."""
    for k in range(MAX_BALANCE // MAX_TRANSFER):
        credit(server, "A", MAX_TRANSFER, f"a{k}")
    assert balance(server, "A") == MAX_BALANCE
    with nothing_stored(server, players=["A"]):
        refused = assert_refused(
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=1, transfer_id="one-more"),
            INVALID,
            "INVALID_ARGUMENT",
            field="amount",
            says="above the limit of 1,000,000,000,000,000",
        )
    assert len(refused.message) <= SHORT

    credit(server, "B", MAX_TRANSFER, "b")
    open_table(server, "t")
    sit(server, "t", "A")
    sit(server, "t", "B")
    dealt = deal(server, "t")
    hands = hands_of(dealt)
    arrange(server, dealt.round_id, "A", good_piles(hands["A"]))
    arrange(server, dealt.round_id, "B", foul_piles(hands["B"]))
    clock.advance(60)  # R10.3: with a foul hand the round is revealed at the deadline
    result = reveal(server, dealt.round_id)  # R6.3: A wins every pile of a foul, scooped
    won = next(p.coins for p in result.players if p.player_id == "A")
    assert won > 0 and balance(server, "A") == MAX_BALANCE + won

    with nothing_stored(server, tables=["t"], players=["A", "B"]):
        refused = assert_refused(
            server.tables.Deal,
            table_pb2.DealRequest(table_id="t"),
            PRECONDITION,
            "LIMIT_REACHED",
            says=f"A ({MAX_BALANCE + won:,}) holds more than the 1,000,000,000,000,000 coins",
        )
    assert "withdraw" in refused.message
    server.wallets.Debit(wallet_pb2.DebitRequest(player_id="A", amount=won, transfer_id="out"))
    assert deal(server, "t").round_id
    _views_follow(server, "A", transfer_id="out")


def _views_follow(server: Any, player: str, transfer_id: str) -> None:
    """The read models have taken the transfer in: the projector is alive."""

    def seen() -> bool:
        token = ""
        while True:
            page = server.results.ListLedgerEntries(
                results_pb2.ListLedgerEntriesRequest(
                    player_id=player, page_size=1000, page_token=token
                )
            )
            if any(e.transfer_id == transfer_id for e in page.entries):
                return True
            token = page.next_page_token
            if not token:
                return False

    wait_until(seen, f"the ledger to show {transfer_id}")


_LIMITS = [
    ("scoop_multiplier", table_pb2.RulesetParameters(scoop_multiplier=INT32), "1 to 4"),
    ("home_run_multiplier", table_pb2.RulesetParameters(home_run_multiplier=5), "1 to 4"),
    ("home_run_min_players", table_pb2.RulesetParameters(home_run_min_players=INT32), "3 to 6"),
    ("seat_minimum", table_pb2.RulesetParameters(seat_minimum=INT64), "1,000,000,000,000,000"),
    ("base_stake", table_pb2.RulesetParameters(base_stake=INT64), "1,000,000,000,000,000"),
    (
        "escape_penalty_multiple",
        table_pb2.RulesetParameters(escape_penalty_multiple=INT32),
        "0 to 1,000",
    ),
    ("arrange_seconds", table_pb2.RulesetParameters(arrange_seconds=INT32), "1 to 86,400"),
    (
        "special_points",
        table_pb2.RulesetParameters(special_points={"dragon": INT32}),
        "limit of 200",
    ),
    (
        "pile_bonuses",
        table_pb2.RulesetParameters(
            pile_bonuses=table_pb2.PileBonuses(middle={"straight_flush": INT32})
        ),
        "limit of 100",
    ),
]


@pytest.mark.parametrize(("name", "parameters", "says"), _LIMITS, ids=[c[0] for c in _LIMITS])
def test_r13_a_parameter_above_its_limit_refuses_the_table(
    server: ServerThread, name: str, parameters: table_pb2.RulesetParameters, says: str
) -> None:
    """table.proto states each parameter's limit; above it OpenTable is INVALID_ARGUMENT naming
    the parameter, and no table opens. Before the limits a table could be opened whose rounds'
    points overflow int64."""
    with nothing_stored(server):
        request = table_pb2.OpenTableRequest(table_id="t", ruleset_parameters=parameters)
        assert_refused(
            server.tables.OpenTable,
            request,
            INVALID,
            "INVALID_RULESET",
            field=f"ruleset.{name}",
            says=says,
        )


def test_r13_parameters_that_together_could_score_more_than_a_round_allows_refuse_the_table(
    server: ServerThread,
) -> None:
    """table.proto: a player wins or loses at most 2,000 points in a round; a back flush worth
    100 with the other piles' 1 and 1, scooped ×4 and home-run ×2 against three players would be
    2,448."""
    bonuses = table_pb2.PileBonuses(back={"flush": 100})
    with nothing_stored(server):
        assert_refused(
            server.tables.OpenTable,
            table_pb2.OpenTableRequest(
                table_id="t",
                ruleset_parameters=table_pb2.RulesetParameters(
                    pile_bonuses=bonuses, scoop_multiplier=4
                ),
            ),
            INVALID,
            "INVALID_RULESET",
            field="ruleset",
            says="2,448 points in a round, above the limit of 2,000",
        )
    opened = open_table(
        server,
        "t",
        parameters=table_pb2.RulesetParameters(scoop_multiplier=4, arrange_seconds=86_400),
    )
    assert opened.ruleset_parameters.scoop_multiplier == 4


@pytest.mark.parametrize(
    ("preset", "seats", "suits"), [("puxian", 4, ""), ("puxian5", 5, "d"), ("puxian6", 6, "dc")]
)
def test_r14_6_opentable_serves_the_variant_presets_with_their_seats_and_decks(
    server: ServerThread, preset: str, seats: int, suits: str
) -> None:
    """R14.6: OpenTable opens a table on each puxian preset and answers its R14 parameters
    (R14.1.6: the horse card is public from the start); R14.2.1: it seats ``max_players`` and
    no more; R14.2.3, R14.2.4: Deal deals 13 cards a seat from the N-card deck, no card more
    often than the deck holds it."""
    coins = {f"P{i}": 1000 for i in range(seats)}
    table = seated_table(server, "t", coins, ruleset=preset)
    parameters = table.ruleset_parameters
    assert table.ruleset == preset
    assert (parameters.horse_card, parameters.max_players) == ("8h", seats if seats > 4 else 0)
    assert parameters.HasField("max_players") == (seats > 4)  # R14: set where not the default
    assert parameters.extra_suits == suits
    assert list(parameters.extra_specials.ids) == ["two_fives_one_trips", "six_of_a_kind"]
    assert list(parameters.undeclarable_specials) == ["two_monsters_front_trips"]  # R14.5.4
    assert "two_monsters_front_trips" not in parameters.special_points
    assert (parameters.special_order, parameters.roll_over_counts_as_scoop) == ("points", False)
    assert get_table(server, "t").ruleset_parameters == parameters
    credit(server, "late", 1000, "start-late")
    with nothing_stored(server, tables=["t"]):
        assert_refused(
            server.tables.SitDown,
            table_pb2.SitDownRequest(table_id="t", player_id="late"),
            PRECONDITION,
            "SEAT_RULE",
            says=f"full ({seats} seats)",
        )

    dealt = deal(server, "t")
    hands = hands_of(dealt)
    assert list(hands) == list(coins) and all(len(cards) == 13 for cards in hands.values())
    counts = Counter(card for cards in hands.values() for card in cards)
    copies = {str(card): n for card, n in ALL_PRESETS[preset].copies.items()}
    assert all(counts[card] <= copies[card] for card in counts), counts  # R14.2.3


def test_r14_opentable_takes_each_variant_parameter_and_answers_it_back(
    server: ServerThread,
) -> None:
    """R13, R14: parameters override the preset one by one (a ``custom`` ruleset), each R14
    parameter round-trips through OpenTable and GetTable, and a table left on R14's defaults
    answers none of them (unset means the default, as before R14)."""
    wanted = table_pb2.RulesetParameters(
        horse_card="As",
        horse_multiplier=3,
        horse_both_holders="stack",
        max_players=5,
        extra_suits="h",
        group_kickers=False,
        flush_pairs_first=True,
        special_counting="partition",
        extra_specials=table_pb2.SpecialIds(ids=["six_of_a_kind"]),
        roll_over_counts_as_scoop=False,
        scoop_bonus=1,
        special_order="points",
        undeclarable_specials=["dragon"],
    )
    opened = open_table(server, "t", parameters=wanted)
    assert opened.ruleset == "custom"
    answered = opened.ruleset_parameters
    for field in ("horse_card", "horse_multiplier", "horse_both_holders", "max_players",
                  "extra_suits", "group_kickers", "flush_pairs_first", "special_counting",
                  "extra_specials", "roll_over_counts_as_scoop", "scoop_bonus", "special_order",
                  "undeclarable_specials"):  # fmt: skip
        assert getattr(answered, field) == getattr(wanted, field), field
    assert "dragon" not in answered.special_points
    assert get_table(server, "t").ruleset_parameters == answered

    plain = open_table(server, "s").ruleset_parameters
    variants = [f.name for f, _ in plain.ListFields() if f.number >= 14]
    assert variants == [] and not plain.undeclarable_specials


def test_r14_a_variant_parameter_out_of_range_is_refused_naming_it(server: ServerThread) -> None:
    """R14: each parameter out of its range (R14.1.1, R14.2.1, R14.2.2, R14.4.3, R14.5.2,
    R14.5.3, R14.5.4), or a deck too small for the seats (R14.2.2), refuses the table with
    INVALID_ARGUMENT, a short message (also for a value of 100,000 characters) and a BadRequest
    naming the parameter; nothing is stored."""
    bad = [
        (table_pb2.RulesetParameters(horse_card="8x"), "ruleset.horse_card"),
        (table_pb2.RulesetParameters(horse_multiplier=5), "ruleset.horse_multiplier"),
        (table_pb2.RulesetParameters(horse_both_holders="both"), "ruleset.horse_both_holders"),
        (table_pb2.RulesetParameters(max_players=7), "ruleset.max_players"),
        (table_pb2.RulesetParameters(max_players=5), "ruleset.max_players"),  # 52 cards
        (table_pb2.RulesetParameters(extra_suits="dd"), "ruleset.extra_suits"),
        (table_pb2.RulesetParameters(extra_suits="x"), "ruleset.extra_suits"),
        (table_pb2.RulesetParameters(special_counting="some"), "ruleset.special_counting"),
        (
            table_pb2.RulesetParameters(extra_specials=table_pb2.SpecialIds(ids=["dragon"])),
            "ruleset.extra_specials",
        ),
        (table_pb2.RulesetParameters(scoop_bonus=4), "ruleset.scoop_bonus"),
        (table_pb2.RulesetParameters(special_order="random"), "ruleset.special_order"),
        (table_pb2.RulesetParameters(undeclarable_specials=["nope"]), "ruleset.special_points"),
        (table_pb2.RulesetParameters(horse_card=LONG), "ruleset.horse_card"),  # hostile sizes
        (table_pb2.RulesetParameters(extra_suits=WIDE), "ruleset.extra_suits"),
        (table_pb2.RulesetParameters(special_order=EMOJI), "ruleset.special_order"),
        (
            table_pb2.RulesetParameters(extra_specials=table_pb2.SpecialIds(ids=[LONG] * 3)),
            "ruleset.extra_specials",
        ),
    ]
    with nothing_stored(server):
        for parameters, field in bad:
            request = table_pb2.OpenTableRequest(table_id="t", ruleset_parameters=parameters)
            refused = assert_refused(
                server.tables.OpenTable, request, INVALID, "INVALID_RULESET", field=field
            )
            assert len(refused.message) <= SHORT, (field, len(refused.message))
        assert_refused(
            server.tables.OpenTable,
            table_pb2.OpenTableRequest(
                table_id="t",
                ruleset="puxian6",
                ruleset_parameters=table_pb2.RulesetParameters(
                    horse_both_holders="stack", horse_multiplier=4
                ),
            ),
            INVALID,
            "INVALID_RULESET",
            field="ruleset",
            says="above the limit of 2,000",
        )


def test_r13_a_table_opened_before_the_limits_still_loads_but_deals_no_round_past_them(
    start_server: Callable[[], ServerThread],
) -> None:
    """Stored events are forever: a table whose recorded ruleset is above today's limits (as an
    earlier version could record it) loads after a restart, seats players and answers queries;
    a deal whose points could pass the limits is refused (FAILED_PRECONDITION), one with only
    harmless excesses (a long deadline) is not."""
    server = start_server()
    huge = STANDARD.with_overrides({"scoop_multiplier": INT32})
    slow = STANDARD.with_overrides({"arrange_seconds": 10**6, "home_run_min_players": 9})
    server.app.open_table("legacy", huge)  # as the earlier version stored it
    server.app.open_table("slow", slow)
    server.stop()

    server = start_server()
    assert get_table(server, "legacy").ruleset_parameters.scoop_multiplier == INT32
    for table, players in [("legacy", ["A", "B"]), ("slow", ["C", "D"])]:
        for player in players:
            credit(server, player, 1000, f"in-{player}")
            sit(server, table, player)
    with nothing_stored(server, tables=["legacy"], players=["A", "B"]):
        assert_refused(
            server.tables.Deal,
            table_pb2.DealRequest(table_id="legacy"),
            PRECONDITION,
            "LIMIT_REACHED",
            says="recorded before the limits",
        )
    dealt = deal(server, "slow")
    arrange_well(server, dealt)
    assert reveal(server, dealt.round_id).server_seed


# B. Hostile input ---------------------------------------------------------------------------


def _token(payload: str | bytes) -> str:
    raw = payload.encode() if isinstance(payload, str) else payload
    return base64.urlsafe_b64encode(raw).decode()


def _bad_tokens(scope: str) -> list[tuple[str, str]]:
    def after(value: str) -> str:
        return _token(f'{{"scope": "{scope}", "after": {value}}}')

    return [
        ("Infinity", after("Infinity")),
        ("NaN", after("NaN")),
        ("past int64", after(str(2**70))),
        ("int64 max + 1", after(str(2**63))),
        ("float", after("1.5")),
        ("string", after('"7"')),
        ("nested", _token("[" * 1500 + "]" * 1500)),
        ("not base64", "%%%%"),
        ("not ASCII", "水水水水"),
        ("not UTF-8", _token(b"\xff\xfe\xfd\xfc")),
        ("a JSON list", _token("[7]")),
        ("100 kB", LONG),
    ]


def _hostile(server: Any, open_round: str, finished_round: str) -> list[tuple[str, Any, Any]]:
    """(case, call, request) for every RPC of the protos, with hostile values."""
    w, t, r, a = server.wallets, server.tables, server.results, server.audit
    params = table_pb2.RulesetParameters
    bonuses = table_pb2.PileBonuses
    cases: list[tuple[str, Any, Any]] = [
        ("Credit 100 kB player", w.Credit, wallet_pb2.CreditRequest(player_id=LONG, amount=5)),
        (
            "Credit wide transfer",
            w.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=5, transfer_id=WIDE),
        ),
        (
            "Credit NUL player",
            w.Credit,
            wallet_pb2.CreditRequest(player_id="\x00", amount=5, transfer_id="h1"),
        ),
        (
            "Credit int64 max",
            w.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=INT64, transfer_id="h2"),
        ),
        (
            "Credit int64 min",
            w.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=-INT64 - 1, transfer_id="h3"),
        ),
        (
            "Debit emoji player",
            w.Debit,
            wallet_pb2.DebitRequest(player_id=EMOJI, amount=5, transfer_id="h4"),
        ),
        (
            "Debit int64 max",
            w.Debit,
            wallet_pb2.DebitRequest(player_id="A", amount=INT64, transfer_id="h5"),
        ),
        ("GetBalance 100 kB", w.GetBalance, wallet_pb2.GetBalanceRequest(player_id=LONG)),
        ("OpenTable 100 kB id", t.OpenTable, table_pb2.OpenTableRequest(table_id=LONG)),
        (
            "OpenTable 100 kB preset",
            t.OpenTable,
            table_pb2.OpenTableRequest(table_id="n", ruleset=LONG),
        ),
        (
            "OpenTable emoji preset",
            t.OpenTable,
            table_pb2.OpenTableRequest(table_id="n", ruleset=EMOJI),
        ),
    ]
    for name, parameters in [
        ("wheel", params(wheel=LONG)),
        ("stake_policy", params(stake_policy=WIDE)),
        ("special id", params(special_points={LONG: 1})),
        ("special points", params(special_points={"dragon": INT32})),
        ("category", params(pile_bonuses=bonuses(front={EMOJI: 1}))),
        ("pile bonus", params(pile_bonuses=bonuses(middle={"straight_flush": INT32}))),
        ("scoop", params(scoop_multiplier=INT32)),
        ("home run", params(home_run_multiplier=INT32)),
        ("home run players", params(home_run_min_players=INT32)),
        ("seat minimum", params(seat_minimum=INT64)),
        ("base stake", params(base_stake=INT64)),
        ("escape", params(escape_penalty_multiple=INT32)),
        ("arrange seconds", params(arrange_seconds=INT32)),
        ("int32 min", params(scoop_multiplier=-INT32 - 1)),
    ]:
        request = table_pb2.OpenTableRequest(table_id="n", ruleset_parameters=parameters)
        cases.append((f"OpenTable {name}", t.OpenTable, request))
    cases += [
        ("GetTable 100 kB", t.GetTable, table_pb2.GetTableRequest(table_id=LONG)),
        ("SitDown 100 kB table", t.SitDown, table_pb2.SitDownRequest(table_id=LONG, player_id="A")),
        (
            "SitDown 100 kB player",
            t.SitDown,
            table_pb2.SitDownRequest(table_id="t", player_id=LONG),
        ),
        ("StandUp wide table", t.StandUp, table_pb2.StandUpRequest(table_id=WIDE, player_id="A")),
        ("StandUp wide player", t.StandUp, table_pb2.StandUpRequest(table_id="t", player_id=WIDE)),
        ("ListRounds 100 kB table", t.ListRounds, table_pb2.ListRoundsRequest(table_id=LONG)),
        (
            "ListRounds int32 min size",
            t.ListRounds,
            table_pb2.ListRoundsRequest(table_id="t", page_size=-INT32 - 1),
        ),
        ("Deal 100 kB table", t.Deal, table_pb2.DealRequest(table_id=LONG)),
        ("Deal 100 kB client seed", t.Deal, table_pb2.DealRequest(table_id="t", client_seed=LONG)),
        ("Arrange 100 kB round", t.Arrange, table_pb2.ArrangeRequest(round_id=LONG, player_id="A")),
    ]
    hostile_arrangements: list[tuple[str, dict[str, Any]]] = [
        ("player", {"player_id": LONG, "special": "any"}),
        ("card", {"player_id": "A", "front": [LONG, "As", "Kd"]}),
        ("emoji card", {"player_id": "A", "back": [EMOJI]}),
        ("10,000 cards", {"player_id": "A", "front": ["As"] * 10_000}),
        ("special", {"player_id": "A", "special": LONG}),
        ("emoji special", {"player_id": "A", "special": EMOJI}),
        ("wide special with piles", {"player_id": "A", "special": WIDE, "front": ["As"]}),
    ]
    for name, fields in hostile_arrangements:
        hostile = table_pb2.ArrangeRequest(round_id=open_round, **fields)
        cases.append((f"Arrange 100 kB {name}", t.Arrange, hostile))
    cases += [
        ("Reveal 100 kB", t.Reveal, table_pb2.RevealRequest(round_id=LONG)),
        ("GetRound 100 kB", t.GetRound, table_pb2.GetRoundRequest(round_id=LONG)),
        (
            "WatchTable 100 kB",
            first_message(t.WatchTable),
            table_pb2.WatchTableRequest(table_id=LONG),
        ),
        (
            "GetRoundResult 100 kB",
            r.GetRoundResult,
            results_pb2.GetRoundResultRequest(round_id=LONG),
        ),
        (
            "GetRoundResult NUL",
            r.GetRoundResult,
            results_pb2.GetRoundResultRequest(round_id="\x00"),
        ),
        (
            "GetRoundResult emoji",
            r.GetRoundResult,
            results_pb2.GetRoundResultRequest(round_id=EMOJI),
        ),
        (
            "ListRoundResults 100 kB table",
            r.ListRoundResults,
            results_pb2.ListRoundResultsRequest(table_id=LONG),
        ),
        (
            "ListLedgerEntries 100 kB player",
            r.ListLedgerEntries,
            results_pb2.ListLedgerEntriesRequest(player_id=LONG),
        ),
        (
            "ListPlayerRounds 100 kB player",
            r.ListPlayerRounds,
            results_pb2.ListPlayerRoundsRequest(player_id=LONG),
        ),
        (
            "ListPlayerRounds negative page",
            r.ListPlayerRounds,
            results_pb2.ListPlayerRoundsRequest(player_id="A", page_size=-1),
        ),
        (
            "GetPlayerStats 100 kB",
            r.GetPlayerStats,
            results_pb2.GetPlayerStatsRequest(player_id=LONG),
        ),
        (
            "GetPlayerStats NUL",
            r.GetPlayerStats,
            results_pb2.GetPlayerStatsRequest(player_id="\x00"),
        ),
        ("GetLeaderboard limit", r.GetLeaderboard, results_pb2.GetLeaderboardRequest(limit=-1)),
        ("ExportRound 100 kB", a.ExportRound, audit_pb2.ExportRoundRequest(round_id=LONG)),
        ("AuditRound 100 kB", a.AuditRound, audit_pb2.AuditRoundRequest(round_id=LONG)),
        (
            "ExportRound open round",
            a.ExportRound,
            audit_pb2.ExportRoundRequest(round_id=open_round),
        ),
    ]
    for seconds, nanos in [(2**62, 0), (-(2**62), 0), (0, -1), (0, 10**9)]:
        since = results_pb2.GetLeaderboardRequest(since=Timestamp(seconds=seconds, nanos=nanos))
        cases.append((f"GetLeaderboard since {seconds}s {nanos}ns", r.GetLeaderboard, since))
    for name, bad in _bad_tokens("t:t"):
        cases.append(
            (
                f"ListRounds token {name}",
                t.ListRounds,
                table_pb2.ListRoundsRequest(table_id="t", page_token=bad),
            )
        )
    for name, bad in _bad_tokens("results:t"):
        cases.append(
            (
                f"ListRoundResults token {name}",
                r.ListRoundResults,
                results_pb2.ListRoundResultsRequest(table_id="t", page_token=bad),
            )
        )
    for name, bad in _bad_tokens("p:A"):
        cases.append(
            (
                f"ListLedgerEntries token {name}",
                r.ListLedgerEntries,
                results_pb2.ListLedgerEntriesRequest(player_id="A", page_token=bad),
            )
        )
    for name, bad in _bad_tokens("recall:A"):
        cases.append(
            (
                f"ListPlayerRounds token {name}",
                r.ListPlayerRounds,
                results_pb2.ListPlayerRoundsRequest(player_id="A", page_token=bad),
            )
        )
    return cases


def assert_refused_briefly(call: Any, request: Any) -> Refusal:
    """A refusal a client can read: a code that names the caller's mistake, rich details, and
    every text of it short."""
    try:
        reply = call(request)
    except grpc.RpcError as error:
        assert error.code() in REFUSALS, f"{error.code()}: {(error.details() or '')[:200]}"
        refused = Refusal.of(error)
        texts = [
            refused.message,
            *refused.field_violations.values(),
            *(v[2] for v in refused.precondition_violations),
        ]
        assert all(len(text) <= SHORT for text in texts), [len(text) for text in texts]
        assert all(len(field) <= 100 for field in refused.field_violations)
        return refused
    raise AssertionError(f"accepted: {str(reply)[:200]}")


def test_every_rpc_refuses_hostile_input_briefly_and_stores_nothing(
    server: ServerThread, subtests: pytest.Subtests
) -> None:
    """API contract: for malformed input on any RPC the answer is INVALID_ARGUMENT (or
    NOT_FOUND / FAILED_PRECONDITION for a well-formed id that names nothing or a wrong phase),
    with messages of at most 300 characters, and the store does not move. Before, such input
    got INTERNAL (page tokens with Infinity or nesting, timestamps out of range), UNKNOWN, or
    RESOURCE_EXHAUSTED (a refusal that echoed 100 kB of input into its trailing metadata; the
    100 kB special name still is quoted whole by domain.rules.specials, and arrives clipped by
    service.rpc.status, the last line of defence)."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    finished = deal(server, "t")
    arrange_well(server, finished)
    reveal(server, finished.round_id)
    dealt = deal(server, "t")
    mark = head(server)
    for case, call, request in _hostile(server, dealt.round_id, finished.round_id):
        with subtests.test(case=case):
            assert_refused_briefly(call, request)
    assert head(server) == mark, "a refused command stored an event"
    echo = server.diagnostics.Echo(diagnostics_pb2.EchoRequest(message=LONG))
    assert echo.message == LONG  # Echo answers whatever it is sent: it is not an error
    credit(server, "Z", 5, "after-the-storm")
    _views_follow(server, "Z", transfer_id="after-the-storm")


def test_a_page_token_of_one_listing_is_refused_by_another_of_the_same_table(
    server: ServerThread,
) -> None:
    """AIP-158: a token is valid only for the listing that gave it. ListRounds counts rounds
    and ListRoundResults keys on a round's number; both once took a "t:<table>" token, so one's
    token paged the other silently from the wrong place."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    for _ in range(3):
        dealt = deal(server, "t")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
    wait_until(
        lambda: (
            len(
                server.results.ListRoundResults(
                    results_pb2.ListRoundResultsRequest(table_id="t")
                ).rounds
            )
            == 3
        ),
        "the three rounds in the results view",
    )
    rounds_token = server.tables.ListRounds(
        table_pb2.ListRoundsRequest(table_id="t", page_size=1)
    ).next_page_token
    results_token = server.results.ListRoundResults(
        results_pb2.ListRoundResultsRequest(table_id="t", page_size=1)
    ).next_page_token
    assert rounds_token and results_token
    assert_refused(
        server.results.ListRoundResults,
        results_pb2.ListRoundResultsRequest(table_id="t", page_token=rounds_token),
        INVALID,
        "INVALID_ARGUMENT",
        field="page_token",
    )
    assert_refused(
        server.tables.ListRounds,
        table_pb2.ListRoundsRequest(table_id="t", page_token=results_token),
        INVALID,
        "INVALID_ARGUMENT",
        field="page_token",
    )


# C. Requests refused before any command runs -----------------------------------------------


def test_watch_table_refuses_an_after_no_store_can_hold(server: ServerThread) -> None:
    open_table(server, "t")
    assert_refused(
        first_message(server.tables.WatchTable),
        table_pb2.WatchTableRequest(table_id="t", after=INT64),
        INVALID,
        "INVALID_ARGUMENT",
        field="after",
    )


@pytest.mark.parametrize("rpc", ["GetRound", "WatchTable"])
def test_a_viewer_that_cannot_be_a_player_id_is_invalid_argument(
    server: ServerThread, rpc: str
) -> None:
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    if rpc == "GetRound":
        call: Any = server.tables.GetRound
        request: Any = table_pb2.GetRoundRequest(round_id=dealt.round_id, viewer=LONG)
    else:
        call = first_message(server.tables.WatchTable)
        request = table_pb2.WatchTableRequest(table_id="t", viewer=LONG)
    assert_refused(call, request, INVALID, "INVALID_ARGUMENT", field="viewer")


def test_a_request_id_longer_than_an_id_is_invalid_argument_and_stores_nothing(
    server: ServerThread,
) -> None:
    with nothing_stored(server, tables=[]):
        assert_refused(
            server.tables.OpenTable,
            table_pb2.OpenTableRequest(table_id="t", request_id=LONG),
            INVALID,
            "INVALID_ARGUMENT",
            field="request_id",
        )


def test_a_request_that_does_not_parse_is_invalid_argument(server: ServerThread) -> None:
    raw: grpc.UnaryUnaryMultiCallable[bytes, bytes]
    raw = server.channel.unary_unary("/thirteen.v1.WalletService/GetBalance")
    with pytest.raises(grpc.RpcError) as refused:
        raw(b"\x0a\x02\xff\xfe")  # GetBalanceRequest.player_id = b"\xff\xfe"
    assert refused.value.code() == INVALID
    assert isinstance(refused.value, grpc.Call)  # a synchronous call's error is its call
    status = rpc_status.from_call(refused.value)
    assert status is not None and len(status.message) <= 300


def test_a_stream_request_that_does_not_parse_is_invalid_argument(server: ServerThread) -> None:
    raw: grpc.UnaryStreamMultiCallable[bytes, bytes]
    raw = server.channel.unary_stream("/thirteen.v1.TableService/WatchTable")
    with pytest.raises(grpc.RpcError) as refused:
        next(iter(raw(b"\x0a\x02\xff\xfe")))  # WatchTableRequest.table_id = b"\xff\xfe"
    assert refused.value.code() == INVALID
