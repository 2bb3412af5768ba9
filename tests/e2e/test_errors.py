"""Every refusal of the API: its status code, its google.rpc details (ErrorInfo always;
BadRequest naming the field for INVALID_ARGUMENT; PreconditionFailure for FAILED_PRECONDITION),
and that a refused command stores nothing — no event anywhere, no change to any table, round
or wallet, and no extra event in WatchTable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from domain.ids import deal_round_id
from domain.rules.cards import DECK, format_cards
from domain.rules.specials import qualifying
from service._generated.thirteen.v1 import (
    results_pb2,
    results_pb2_grpc,
    table_pb2,
    wallet_pb2,
)
from tests.e2e.helpers import (
    arrange_well,
    assert_no_table_event_since,
    assert_refused,
    client_seed_for,
    credit,
    deal,
    first_message,
    foul_piles,
    get_round,
    good_piles,
    hands_of,
    head,
    nothing_stored,
    open_table,
    reveal,
    seated_table,
    sit,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

INVALID = grpc.StatusCode.INVALID_ARGUMENT
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
NOT_FOUND = grpc.StatusCode.NOT_FOUND
EXISTS = grpc.StatusCode.ALREADY_EXISTS


# Malformed input: INVALID_ARGUMENT --------------------------------------------------------------


def test_malformed_wallet_input_is_invalid_argument_naming_the_field(server: ServerThread) -> None:
    """R7.2: coin amounts are whole numbers (wallet.proto: above zero); ids are required."""
    credit(server, "A", 100, "c-A")
    cases: list[tuple[Callable[[Any], Any], Any, str]] = [
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=-5, transfer_id="x1"),
            "amount",
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=0, transfer_id="x2"),
            "amount",
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="", amount=5, transfer_id="x3"),
            "player_id",
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=5, transfer_id=""),
            "transfer_id",
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="N", amount=-1, transfer_id="x4"),
            "amount",
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="A" * 129, amount=5, transfer_id="x5"),
            "player_id",
        ),
        (
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="A", amount=-1, transfer_id="x6"),
            "amount",
        ),
        (
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="A", amount=5, transfer_id=""),
            "transfer_id",
        ),
        (
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="", amount=5, transfer_id="x7"),
            "player_id",
        ),
    ]
    with nothing_stored(server, players=["A", "N"]):
        for call, request, field in cases:
            assert_refused(call, request, INVALID, "INVALID_ARGUMENT", field=field)


def test_a_bad_ruleset_name_or_parameter_is_invalid_argument_and_opens_nothing(
    server: ServerThread,
) -> None:
    """R13: an unknown preset or a parameter out of range refuses the table."""
    bad = [
        ("nope", None, "ruleset"),
        ("", table_pb2.RulesetParameters(wheel="sideways"), "ruleset.wheel"),
        ("", table_pb2.RulesetParameters(scoop_multiplier=0), "ruleset.scoop_multiplier"),
        ("", table_pb2.RulesetParameters(arrange_seconds=0), "ruleset.arrange_seconds"),
        ("", table_pb2.RulesetParameters(stake_policy="whim"), "ruleset.stake_policy"),
        ("", table_pb2.RulesetParameters(seat_minimum=0), "ruleset.seat_minimum"),
        ("", table_pb2.RulesetParameters(home_run_min_players=1), "ruleset.home_run_min_players"),
        (
            "",
            table_pb2.RulesetParameters(escape_penalty_multiple=-1),
            "ruleset.escape_penalty_multiple",
        ),
        ("", table_pb2.RulesetParameters(special_points={"nonsense": 3}), "ruleset.special_points"),
        ("", table_pb2.RulesetParameters(special_points={"dragon": -1}), "ruleset.special_points"),
        (
            "",
            table_pb2.RulesetParameters(pile_bonuses=table_pb2.PileBonuses(front={"flush": 2})),
            "ruleset.pile_bonuses",
        ),
        (
            "",
            table_pb2.RulesetParameters(pile_bonuses=table_pb2.PileBonuses(back={"royal": 2})),
            "ruleset.pile_bonuses",
        ),
        (
            "",
            table_pb2.RulesetParameters(
                pile_bonuses=table_pb2.PileBonuses(back={"straight_flush": 0})
            ),
            "ruleset.pile_bonuses",
        ),
    ]
    with nothing_stored(server):
        for name, parameters, field in bad:
            request = table_pb2.OpenTableRequest(table_id="t", ruleset=name, request_id="o")
            if parameters is not None:
                request.ruleset_parameters.CopyFrom(parameters)
            assert_refused(
                server.tables.OpenTable, request, INVALID, "INVALID_RULESET", field=field
            )
    assert_refused(
        server.tables.GetTable, table_pb2.GetTableRequest(table_id="t"), NOT_FOUND, "NOT_FOUND"
    )


def test_malformed_arrangements_are_invalid_argument_and_change_nothing(
    server: ServerThread,
) -> None:
    """R1.2: unknown cards; R4.1: three, five and five cards, each the player's own, none
    twice; R5.4: an unknown special."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    hands = hands_of(dealt)
    front, middle, back = good_piles(hands["A"])
    stranger = next(c for c in format_cards(DECK) if c not in hands["A"])
    bad = [
        ((["Zz", *front[1:]], middle, back), "", "INVALID_CARD", "front"),
        ((front, [*middle[:4], "1x"], back), "", "INVALID_CARD", "middle"),
        ((front, middle, [*back[:4], ""]), "", "INVALID_CARD", "back"),
        ((front[:2], middle, back), "", "INVALID_ARRANGEMENT", "front"),
        ((front, [*middle, front[0]], back[1:]), "", "INVALID_ARRANGEMENT", "middle"),
        ((front, middle, back[:4]), "", "INVALID_ARRANGEMENT", "back"),
        (([stranger, *front[1:]], middle, back), "", "INVALID_ARRANGEMENT", "front"),
        ((front, middle, [*back[:4], middle[0]]), "", "INVALID_ARRANGEMENT", "back"),
        (([], [], []), "", "INVALID_ARRANGEMENT", "front"),
        (([], [], []), "royal_flush", "UNKNOWN_SPECIAL", "special"),
        ((front, middle, back), "not_a_special", "UNKNOWN_SPECIAL", "special"),
    ]
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        for piles, special, reason, field in bad:
            request = table_pb2.ArrangeRequest(
                round_id=dealt.round_id,
                player_id="A",
                front=piles[0],
                middle=piles[1],
                back=piles[2],
                special=special,
            )
            assert_refused(server.tables.Arrange, request, INVALID, reason, field=field)
    assert not get_round(server, dealt.round_id).players[0].submitted
    assert_no_table_event_since(server, "t", mark)


def test_r5_5_a_split_that_is_not_the_players_cards_is_invalid_argument_naming_the_piles(
    server: ServerThread,
) -> None:
    """R5.5: a declaration's split must use exactly the player's thirteen cards."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    hands = hands_of(dealt)
    front, middle, back = good_piles(hands["A"])
    stranger = next(c for c in format_cards(DECK) if c not in hands["A"])
    with nothing_stored(server, rounds=[dealt.round_id], players=["A"]):
        assert_refused(
            server.tables.Arrange,
            table_pb2.ArrangeRequest(
                round_id=dealt.round_id,
                player_id="A",
                front=[stranger, *front[1:]],
                middle=middle,
                back=back,
                special="three_flushes",
            ),
            INVALID,
            "INVALID_ARRANGEMENT",
        )
        refused = assert_refused(
            server.tables.Arrange,
            table_pb2.ArrangeRequest(
                round_id=dealt.round_id,
                player_id="A",
                front=front,
                middle=middle,
                back=back[:4],
                special="any",
            ),
            INVALID,
            "INVALID_ARRANGEMENT",
        )
    assert set(refused.field_violations) & {"front", "middle", "back"}, (
        f"the BadRequest should name a pile, names {list(refused.field_violations)}"
    )


def test_malformed_deal_list_and_watch_requests_are_invalid_argument(server: ServerThread) -> None:
    """R12.2: a client seed has at most 256 characters; page_size is not negative and
    page_token is one this table issued (AIP-158); a stream starts at a position that is not
    negative (table.proto WatchTable)."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    for _ in range(2):
        dealt = deal(server, "t")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
    token = server.tables.ListRounds(
        table_pb2.ListRoundsRequest(table_id="t", page_size=1)
    ).next_page_token
    assert token
    open_table(server, "other")
    mark = head(server)
    with nothing_stored(server, tables=["t", "other"], players=["A", "B"]):
        assert_refused(
            server.tables.Deal,
            table_pb2.DealRequest(table_id="t", client_seed="x" * 257),
            INVALID,
            "INVALID_ARGUMENT",
            field="client_seed",
        )
        for request, field in [
            (table_pb2.ListRoundsRequest(table_id="t", page_size=-1), "page_size"),
            (table_pb2.ListRoundsRequest(table_id="t", page_token="garbage"), "page_token"),
            (table_pb2.ListRoundsRequest(table_id="t", page_token=token[:-3]), "page_token"),
            (table_pb2.ListRoundsRequest(table_id="other", page_token=token), "page_token"),
        ]:
            assert_refused(
                server.tables.ListRounds, request, INVALID, "INVALID_ARGUMENT", field=field
            )
        assert_refused(
            first_message(server.tables.WatchTable),
            table_pb2.WatchTableRequest(table_id="t", after=-1),
            INVALID,
            "INVALID_ARGUMENT",
            field="after",
        )
    assert_no_table_event_since(server, "t", mark)


# Empty ids --------------------------------------------------------------------------------------

_WALLET_REQUESTS = (
    wallet_pb2.CreditRequest,
    wallet_pb2.DebitRequest,
    wallet_pb2.GetBalanceRequest,
)


def _empty_id_requests(round_id: str) -> list[tuple[str, str, object]]:
    """(rpc, field, request) with one required id left empty and the rest valid."""
    return [
        ("Credit", "player_id", wallet_pb2.CreditRequest(amount=5, transfer_id="e1")),
        ("Credit", "transfer_id", wallet_pb2.CreditRequest(player_id="A", amount=5)),
        ("Debit", "player_id", wallet_pb2.DebitRequest(amount=5, transfer_id="e2")),
        ("Debit", "transfer_id", wallet_pb2.DebitRequest(player_id="A", amount=5)),
        ("GetBalance", "player_id", wallet_pb2.GetBalanceRequest()),
        ("OpenTable", "table_id", table_pb2.OpenTableRequest(request_id="e3")),
        ("GetTable", "table_id", table_pb2.GetTableRequest()),
        ("SitDown", "table_id", table_pb2.SitDownRequest(player_id="C")),
        ("SitDown", "player_id", table_pb2.SitDownRequest(table_id="t")),
        ("StandUp", "table_id", table_pb2.StandUpRequest(player_id="A")),
        ("StandUp", "player_id", table_pb2.StandUpRequest(table_id="t")),
        ("ListRounds", "table_id", table_pb2.ListRoundsRequest()),
        ("Deal", "table_id", table_pb2.DealRequest(client_seed="s")),
        ("Arrange", "round_id", table_pb2.ArrangeRequest(player_id="A", special="any")),
        ("Arrange", "player_id", table_pb2.ArrangeRequest(round_id=round_id, special="any")),
        ("Reveal", "round_id", table_pb2.RevealRequest()),
        ("GetRound", "round_id", table_pb2.GetRoundRequest(viewer="A")),
        ("WatchTable", "table_id", table_pb2.WatchTableRequest()),
    ]


def test_an_empty_required_id_is_invalid_argument_naming_the_field_on_every_rpc(
    server: ServerThread, subtests: pytest.Subtests
) -> None:
    """API contract (no rule of RULES.md): an id left empty is malformed input, whatever the
    RPC — INVALID_ARGUMENT with a BadRequest naming the field, not a lookup of a table, round
    or player called ''."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    credit(server, "C", 1000, "start-C")
    dealt = deal(server, "t")
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B", "C"]):
        for rpc, field, request in _empty_id_requests(dealt.round_id):
            with subtests.test(rpc=rpc, field=field):
                stub = server.wallets if isinstance(request, _WALLET_REQUESTS) else server.tables
                call = getattr(stub, rpc)
                if rpc == "WatchTable":
                    call = first_message(call)
                assert_refused(call, request, INVALID, "INVALID_ARGUMENT", field=field)


# Unknown ids: NOT_FOUND -------------------------------------------------------------------------


def test_unknown_tables_rounds_and_players_are_not_found(server: ServerThread) -> None:
    """API contract (no rule of RULES.md): every lookup of an id that was never created is
    NOT_FOUND with an ErrorInfo, and stores nothing."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    cases: list[tuple[Callable[[Any], Any], Any]] = [
        (server.wallets.GetBalance, wallet_pb2.GetBalanceRequest(player_id="ghost")),
        (
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="ghost", amount=1, transfer_id="d1"),
        ),
        (server.tables.GetTable, table_pb2.GetTableRequest(table_id="nowhere")),
        (server.tables.SitDown, table_pb2.SitDownRequest(table_id="nowhere", player_id="A")),
        (server.tables.SitDown, table_pb2.SitDownRequest(table_id="t", player_id="ghost")),
        (server.tables.StandUp, table_pb2.StandUpRequest(table_id="nowhere", player_id="A")),
        (server.tables.ListRounds, table_pb2.ListRoundsRequest(table_id="nowhere")),
        (server.tables.Deal, table_pb2.DealRequest(table_id="nowhere")),
        (
            server.tables.Arrange,
            table_pb2.ArrangeRequest(round_id="no-round", player_id="A", special="any"),
        ),
        (server.tables.Reveal, table_pb2.RevealRequest(round_id="no-round")),
        (server.tables.GetRound, table_pb2.GetRoundRequest(round_id="no-round")),
        (
            results_pb2_grpc.ResultsServiceStub(server.channel).ListRoundResults,
            results_pb2.ListRoundResultsRequest(table_id="nowhere"),
        ),
    ]
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B", "ghost"]):
        for call, request in cases:
            assert_refused(call, request, NOT_FOUND, "NOT_FOUND")
        assert_refused(
            first_message(server.tables.WatchTable),
            table_pb2.WatchTableRequest(table_id="nowhere"),
            NOT_FOUND,
            "NOT_FOUND",
        )
    assert_no_table_event_since(server, "t", mark)
    listed = results_pb2_grpc.ResultsServiceStub(server.channel).ListRoundResults(
        results_pb2.ListRoundResultsRequest(table_id="t")
    )
    assert list(listed.rounds) == []  # opened, with no round over yet: found, and empty


# Wrong phase or rule: FAILED_PRECONDITION -------------------------------------------------------


def test_r10_6_a_debit_above_the_balance_or_during_a_dealt_round_is_refused(
    server: ServerThread,
) -> None:
    """R9.1: a balance never goes below zero; R10.6: no withdrawal while seated in a dealt,
    unrevealed round — and it is allowed again after the reveal."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    with nothing_stored(server, players=["A"]):
        assert_refused(
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="A", amount=1001, transfer_id="d1"),
            PRECONDITION,
            "INSUFFICIENT_FUNDS",
            says="1000",
        )
    dealt = deal(server, "t")
    assert (
        server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id="A")).round_id
        == dealt.round_id
    )
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        assert_refused(
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="A", amount=1, transfer_id="d2"),
            PRECONDITION,
            "WRONG_PHASE",
            says=dealt.round_id,
        )
    assert_no_table_event_since(server, "t", mark)

    arrange_well(server, dealt)
    result = reveal(server, dealt.round_id)
    won = next(p.coins for p in result.players if p.player_id == "A")
    after = server.wallets.Debit(wallet_pb2.DebitRequest(player_id="A", amount=1, transfer_id="d2"))
    assert after.balance == 1000 + won - 1


def test_r10_1_a_deal_needs_two_seated_players_and_no_round_in_progress(
    server: ServerThread,
) -> None:
    """R10.1: fewer than two seated, or a round already open, refuses the deal."""
    seated_table(server, "t", {"A": 1000})
    mark = head(server)
    with nothing_stored(server, tables=["t"], players=["A"]):
        assert_refused(
            server.tables.Deal,
            table_pb2.DealRequest(table_id="t"),
            PRECONDITION,
            "WRONG_PHASE",
            says="at least 2",
        )
    assert_no_table_event_since(server, "t", mark)

    credit(server, "B", 1000, "start-B")
    sit(server, "t", "B")
    dealt = deal(server, "t", request_id="first")
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        for request in [
            table_pb2.DealRequest(table_id="t"),
            table_pb2.DealRequest(table_id="t", request_id="second", client_seed="x"),
        ]:
            assert_refused(
                server.tables.Deal, request, PRECONDITION, "WRONG_PHASE", says=dealt.round_id
            )
    assert_no_table_event_since(server, "t", mark)
    refused_round = deal_round_id("t", "second")  # the round the refused deal would have made
    assert_refused(
        server.tables.GetRound,
        table_pb2.GetRoundRequest(round_id=refused_round),
        NOT_FOUND,
        "NOT_FOUND",
    )


def test_r8_4_a_deal_is_refused_naming_the_seated_player_who_fell_below_the_minimum(
    server: ServerThread,
) -> None:
    """R8.4: a player who withdrew below the seat minimum between rounds blocks the deal, and
    the refusal names them."""
    seated_table(server, "t", {"A": 100, "B": 1000})
    server.wallets.Debit(wallet_pb2.DebitRequest(player_id="A", amount=60, transfer_id="d1"))
    mark = head(server)
    with nothing_stored(server, tables=["t"], players=["A", "B"]):
        assert_refused(
            server.tables.Deal,
            table_pb2.DealRequest(table_id="t"),
            PRECONDITION,
            "INSUFFICIENT_STAKE",
            says="A (40)",
        )
    assert_no_table_event_since(server, "t", mark)


def test_r10_2_an_arrangement_after_the_deadline_is_refused(
    server: ServerThread, clock: ManualClock
) -> None:
    """R10.2: submissions after the deadline are refused, even before anyone reveals; R10.3:
    after the deadline the round can be revealed though a player never arranged."""
    server.running.sweeper.stop()  # keep the overdue round unrevealed for this test
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    arrange_well(server, dealt, ["B"])
    clock.advance(60)
    mark = head(server)
    hands = hands_of(dealt)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        for player, piles, special in [
            ("A", good_piles(hands["A"]), ""),
            ("B", foul_piles(hands["B"]), ""),
            ("A", ([], [], []), "any"),
        ]:
            assert_refused(
                server.tables.Arrange,
                table_pb2.ArrangeRequest(
                    round_id=dealt.round_id,
                    player_id=player,
                    front=piles[0],
                    middle=piles[1],
                    back=piles[2],
                    special=special,
                ),
                PRECONDITION,
                "WRONG_PHASE",
                says="deadline",
            )
    assert_no_table_event_since(server, "t", mark)
    result = reveal(server, dealt.round_id)
    assert [p.foul for p in result.players] == [True, False]


def test_r10_3_a_round_cannot_be_revealed_before_everyone_is_ready_or_the_deadline(
    server: ServerThread, clock: ManualClock
) -> None:
    """R10.3: with a player who has not arranged, a reveal before the deadline is refused and
    names who is awaited."""
    server.running.sweeper.stop()  # this test reveals at the deadline itself
    seated_table(server, "t", {"A": 1000, "B": 1000, "C": 1000})
    dealt = deal(server, "t")
    arrange_well(server, dealt, ["A"])
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B", "C"]):
        refused = assert_refused(
            server.tables.Reveal,
            table_pb2.RevealRequest(round_id=dealt.round_id),
            PRECONDITION,
            "WRONG_PHASE",
        )
        clock.advance(59)
        assert_refused(
            server.tables.Reveal,
            table_pb2.RevealRequest(round_id=dealt.round_id),
            PRECONDITION,
            "WRONG_PHASE",
        )
    assert "B" in refused.message and "C" in refused.message
    assert_no_table_event_since(server, "t", mark)
    clock.advance(1)
    assert reveal(server, dealt.round_id).server_seed


def test_r10_4_no_command_changes_a_revealed_round(server: ServerThread) -> None:
    """R10.4: after the reveal an arrangement or declaration is refused, and revealing again
    returns the recorded result without settling twice (R9.3)."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    submitted = arrange_well(server, dealt)
    first = reveal(server, dealt.round_id)
    hands = hands_of(dealt)
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        for player, piles, special in [
            ("A", submitted["A"], ""),
            ("B", foul_piles(hands["B"]), ""),
            ("A", ([], [], []), "any"),
        ]:
            assert_refused(
                server.tables.Arrange,
                table_pb2.ArrangeRequest(
                    round_id=dealt.round_id,
                    player_id=player,
                    front=piles[0],
                    middle=piles[1],
                    back=piles[2],
                    special=special,
                ),
                PRECONDITION,
                "WRONG_PHASE",
                says="R10.4",
            )
        assert reveal(server, dealt.round_id) == first
    assert_no_table_event_since(server, "t", mark)


def test_r10_1_r10_6_r8_1_seating_rules_are_failed_precondition(server: ServerThread) -> None:
    """R10.1: at most four seats; R10.6: one table at a time; R8.1: at least the seat minimum
    (R8.3: × base with a fixed stake); a player who is not seated cannot stand up."""
    seated_table(server, "t", {"A": 1000, "B": 1000, "C": 1000, "D": 1000})
    fixed = table_pb2.RulesetParameters(stake_policy="fixed", base_stake=10)
    open_table(server, "fixed", parameters=fixed)
    open_table(server, "free")
    for player, amount in [("E", 1000), ("poor", 47), ("F", 479)]:
        credit(server, player, amount, f"start-{player}")
    players = ["A", "B", "C", "D", "E", "poor", "F"]
    mark = head(server)
    with nothing_stored(server, tables=["t", "fixed", "free"], players=players):
        assert_refused(
            server.tables.SitDown,
            table_pb2.SitDownRequest(table_id="t", player_id="E"),
            PRECONDITION,
            "SEAT_RULE",
            says="full",
        )
        assert_refused(
            server.tables.SitDown,
            table_pb2.SitDownRequest(table_id="free", player_id="A"),
            PRECONDITION,
            "SEAT_RULE",
            says="already seated at table t",
        )
        assert_refused(
            server.tables.SitDown,
            table_pb2.SitDownRequest(table_id="free", player_id="poor"),
            PRECONDITION,
            "INSUFFICIENT_STAKE",
            field="player_id",
            says="48",
        )
        assert_refused(
            server.tables.SitDown,
            table_pb2.SitDownRequest(table_id="fixed", player_id="F"),
            PRECONDITION,
            "INSUFFICIENT_STAKE",
            field="player_id",
            says="480",
        )
        assert_refused(
            server.tables.StandUp,
            table_pb2.StandUpRequest(table_id="free", player_id="E"),
            PRECONDITION,
            "SEAT_RULE",
            field="player_id",
        )
    assert_no_table_event_since(server, "free", mark)
    assert_no_table_event_since(server, "fixed", mark)


def test_r5_4_a_declaration_the_cards_do_not_hold_is_refused_and_changes_nothing(
    server: ServerThread,
) -> None:
    """R5.4: declaring a special the cards do not qualify for (named, or ``any`` with none) is
    refused; the player's earlier arrangement still stands."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    plain = client_seed_for(server, "t", "r", 2, lambda hands: not qualifying(hands[0]))
    dealt = deal(server, "t", client_seed=plain, request_id="r")
    submitted = arrange_well(server, dealt)
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        for special in ["supreme_dragon", "dragon", "six_pairs", "three_flushes", "any"]:
            assert_refused(
                server.tables.Arrange,
                table_pb2.ArrangeRequest(round_id=dealt.round_id, player_id="A", special=special),
                PRECONDITION,
                "SPECIAL_NOT_HELD",
                field="special",
            )
        front, middle, back = submitted["A"]
        assert_refused(  # R5.5: the given piles are judged, and they show no three flushes
            server.tables.Arrange,
            table_pb2.ArrangeRequest(
                round_id=dealt.round_id,
                player_id="A",
                front=front,
                middle=middle,
                back=back,
                special="three_flushes",
            ),
            PRECONDITION,
            "SPECIAL_NOT_HELD",
            field="special",
        )
    assert_no_table_event_since(server, "t", mark)
    result = reveal(server, dealt.round_id)
    a = next(p for p in result.players if p.player_id == "A")
    assert (a.special, list(a.front)) == ("", submitted["A"][0])


def test_r10_1_a_player_not_dealt_into_the_round_cannot_arrange(server: ServerThread) -> None:
    """R10.1: only the active players of a round submit; a player who sat down after the deal
    waits for the next round."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    credit(server, "late", 1000, "start-late")
    sit(server, "t", "late")
    mark = head(server)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["late"]):
        assert_refused(
            server.tables.Arrange,
            table_pb2.ArrangeRequest(round_id=dealt.round_id, player_id="late", special="any"),
            PRECONDITION,
            "WRONG_PHASE",
            field="player_id",
        )
    assert_no_table_event_since(server, "t", mark)


# Duplicate ids with other content: ALREADY_EXISTS -----------------------------------------------


def test_a_transfer_id_reused_with_other_content_already_exists_and_moves_nothing(
    server: ServerThread,
) -> None:
    """R7.2: coins are never created — a transfer_id names one transfer, and another amount,
    player or direction under it is refused."""
    credit(server, "A", 100, "t1")
    credit(server, "B", 100, "t2")
    reused: list[tuple[Callable[[Any], Any], Any]] = [
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="A", amount=101, transfer_id="t1"),
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="B", amount=100, transfer_id="t1"),
        ),
        (
            server.wallets.Credit,
            wallet_pb2.CreditRequest(player_id="C", amount=100, transfer_id="t1"),
        ),
        (
            server.wallets.Debit,
            wallet_pb2.DebitRequest(player_id="A", amount=100, transfer_id="t1"),
        ),
    ]
    with nothing_stored(server, players=["A", "B", "C"]):
        for call, request in reused:
            assert_refused(call, request, EXISTS, "ALREADY_EXISTS", says="t1")


def test_a_table_id_reused_with_other_content_already_exists(server: ServerThread) -> None:
    """R13: a table's ruleset is recorded once, when it opens; OpenTable is idempotent only
    for the same request_id and ruleset."""
    open_table(server, "t", request_id="o1")
    mark = head(server)
    with nothing_stored(server, tables=["t"]):
        for request in [
            table_pb2.OpenTableRequest(table_id="t"),
            table_pb2.OpenTableRequest(table_id="t", request_id="o2"),
            table_pb2.OpenTableRequest(table_id="t", request_id="o1", ruleset="fujian"),
            table_pb2.OpenTableRequest(
                table_id="t",
                request_id="o1",
                ruleset_parameters=table_pb2.RulesetParameters(arrange_seconds=61),
            ),
        ]:
            assert_refused(server.tables.OpenTable, request, EXISTS, "ALREADY_EXISTS")
    assert_no_table_event_since(server, "t", mark)


def test_a_deal_request_id_reused_with_another_client_seed_already_exists(
    server: ServerThread,
) -> None:
    """R12.2: a deal's client seed is fixed with it; Deal is idempotent on request_id, and the
    same id with another client seed is refused, during the round and after it."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t", client_seed="mine", request_id="r1")
    mark = head(server)
    request = table_pb2.DealRequest(table_id="t", client_seed="theirs", request_id="r1")
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        assert_refused(server.tables.Deal, request, EXISTS, "ALREADY_EXISTS", says="r1")
    assert_no_table_event_since(server, "t", mark)
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        assert_refused(server.tables.Deal, request, EXISTS, "ALREADY_EXISTS", says="r1")


@pytest.mark.parametrize("kind", ["credit", "debit"])
def test_an_id_longer_than_128_characters_or_unprintable_is_invalid_argument(
    server: ServerThread, kind: str
) -> None:
    """API contract (no rule of RULES.md): ids are printable and at most 128 characters."""
    credit(server, "A", 100, "c")
    call = server.wallets.Credit if kind == "credit" else server.wallets.Debit
    request_type = wallet_pb2.CreditRequest if kind == "credit" else wallet_pb2.DebitRequest
    with nothing_stored(server, players=["A"]):
        for player, transfer, field in [
            ("A", "x" * 129, "transfer_id"),
            ("A", "bell\x07", "transfer_id"),
            ("A\n", "ok", "player_id"),
        ]:
            assert_refused(
                call,
                request_type(player_id=player, amount=1, transfer_id=transfer),
                INVALID,
                "INVALID_ARGUMENT",
                field=field,
            )
