"""Attacks from outside on R14 as served (issue 25): hostile rulesets at OpenTable, seven
players racing for a six-seat table, arrangements and declarations that smuggle a copy of a
card the player was not dealt (R14.2.3), against a real server on SQLite and PostgreSQL."""

from __future__ import annotations

import functools
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest

from domain.fairness.shuffle import deal as shuffle_deal
from domain.ids import deal_round_id
from domain.rules.cards import Card, parse_cards
from domain.rules.play import strongest_first
from domain.rules.ruleset import ALL_PRESETS
from domain.rules.specials import qualifying
from service._generated.thirteen.v1 import (
    audit_pb2,
    audit_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from tests.e2e.helpers import (
    PHASE,
    Refusal,
    arrange,
    assert_refused,
    balance,
    credit,
    deal,
    events,
    get_round,
    get_table,
    hands_of,
    head,
    of_type,
    open_table,
    seated_table,
    wait_until,
)
from tests.e2e.test_replicas import Replica
from tests.e2e.test_tamper import _audit_document
from tests.e2e.test_tamper_variants import Stores, stores  # noqa: F401 (a fixture)
from tests.e2e.test_variants_served import piles_for
from tests.support.serve_process import ServeProcess
from tests.support.server import ServerThread
from tests.support.stores import store_environ

P = table_pb2.RulesetParameters
PUXIAN6 = ALL_PRESETS["puxian6"]

HOSTILE: list[tuple[str, P, str]] = [
    ("puxian6", P(max_players=7), "ruleset.max_players"),
    ("puxian6", P(max_players=0), "ruleset.max_players"),
    ("puxian6", P(max_players=-1), "ruleset.max_players"),
    ("puxian6", P(max_players=2**31 - 1), "ruleset.max_players"),
    ("", P(max_players=6, extra_suits="d"), "ruleset.max_players"),
    ("", P(max_players=5), "ruleset.max_players"),
    ("", P(extra_suits="dd"), "ruleset.extra_suits"),
    ("", P(extra_suits="D"), "ruleset.extra_suits"),
    ("", P(extra_suits="ｄ"), "ruleset.extra_suits"),  # fullwidth d
    ("", P(extra_suits="x"), "ruleset.extra_suits"),
    ("", P(extra_suits="dch"), "ruleset.extra_suits"),
    ("", P(extra_suits="d\x00"), "ruleset.extra_suits"),
    ("", P(horse_card="1x"), "ruleset.horse_card"),
    ("", P(horse_card=""), "ruleset.horse_card"),
    ("", P(horse_card="8x"), "ruleset.horse_card"),
    ("", P(horse_card="８h"), "ruleset.horse_card"),
    ("", P(horse_card="8h8h"), "ruleset.horse_card"),
    ("", P(horse_card="z" * 100_000), "ruleset.horse_card"),
    ("", P(horse_multiplier=1), "ruleset.horse_multiplier"),
    ("", P(horse_multiplier=5), "ruleset.horse_multiplier"),
    ("", P(horse_both_holders="STACK"), "ruleset.horse_both_holders"),
    ("", P(scoop_bonus=4), "ruleset.scoop_bonus"),
    ("", P(scoop_bonus=-1), "ruleset.scoop_bonus"),
    ("", P(home_run_min_players=7), "ruleset.home_run_min_players"),
    ("", P(home_run_min_players=2), "ruleset.home_run_min_players"),
    ("", P(special_counting="Partition"), "ruleset.special_counting"),
    ("", P(special_order=""), "ruleset.special_order"),
    ("", P(special_points={"six_pairs": 0}), "ruleset.special_points"),
    ("", P(special_points={"six_pairs": 201}), "ruleset.special_points"),
    ("", P(special_points={"six_pairs": -3}), "ruleset.special_points"),
    ("", P(special_points={"six_pairs": 2**31 - 1}), "ruleset.special_points"),
    ("", P(special_points={"SIX_PAIRS": 3}), "ruleset.special_points"),
    ("", P(special_points={"": 3}), "ruleset.special_points"),
    ("", P(undeclarable_specials=["no_such_special"]), "ruleset.special_points"),
    (
        "",
        P(extra_specials=table_pb2.SpecialIds(ids=["six_of_a_kind", "dragon"])),
        "ruleset.extra_specials",
    ),
    (
        "puxian6",
        P(horse_multiplier=4, horse_both_holders="stack", scoop_multiplier=4),
        "ruleset",
    ),
]


@pytest.mark.parametrize(("preset", "parameters", "field"), HOSTILE)
def test_r14_hostile_rulesets_are_refused_naming_the_parameter_and_store_nothing(
    server: ServerThread, preset: str, parameters: P, field: str
) -> None:
    """R14: a value out of its range is refused when the table opens, naming the parameter
    (INVALID_ARGUMENT, a one-line message of bounded length), and no event is stored."""
    before = head(server)
    request = table_pb2.OpenTableRequest(table_id="t", ruleset=preset)
    request.ruleset_parameters.CopyFrom(parameters)
    refused = assert_refused(
        server.tables.OpenTable,
        request,
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_RULESET",
        field=field,
    )
    assert "\n" not in refused.message and len(refused.message) <= 600, refused.message
    assert head(server) == before


def test_r14_edge_rulesets_that_are_valid_open_and_answer_as_recorded(
    server: ServerThread,
) -> None:
    """R14.5.5: home_run_min_players above max_players is valid (no home run happens);
    undeclarable_specials wins over special_points for the same special (R14.5.4); the
    table answers every parameter as it recorded it."""
    params = P(
        max_players=5,
        extra_suits="d",
        home_run_min_players=6,
        special_points={"six_pairs": 200, "dragon": 1},
        undeclarable_specials=["six_pairs"],
        horse_card="Ad",
        horse_multiplier=2,
        horse_both_holders="stack",
    )
    opened = open_table(server, "t", parameters=params)
    got = get_table(server, "t").ruleset_parameters
    assert got == opened.ruleset_parameters
    assert got.max_players == 5 and got.extra_suits == "d" and got.home_run_min_players == 6
    assert "six_pairs" in got.undeclarable_specials and "six_pairs" not in got.special_points
    assert got.special_points["dragon"] == 1
    assert got.horse_card == "Ad" and got.horse_both_holders == "stack"


def _together(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait(timeout=10)
        try:
            return call()
        except grpc.RpcError as error:
            return error

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_r14_2_1_seven_players_racing_for_a_six_seat_table_seat_six(
    server: ServerThread,
) -> None:
    """R10.1, R14.2.1: seven SitDowns released at once on a puxian6 table: exactly six are
    seated (six distinct players in seats 0–5), the seventh refused as the table is full."""
    players = [f"p{i}" for i in range(7)]
    for player in players:
        credit(server, player, 10_000, f"start-{player}")
    open_table(server, "t", ruleset="puxian6")
    results = _together(
        [
            functools.partial(
                server.tables.SitDown, table_pb2.SitDownRequest(table_id="t", player_id=p)
            )
            for p in players
        ]
    )
    failures = [Refusal.of(r) for r in results if isinstance(r, grpc.RpcError)]
    assert len(failures) == 1, failures
    assert failures[0].code == grpc.StatusCode.FAILED_PRECONDITION, failures[0]
    assert "full" in failures[0].message
    seats = get_table(server, "t").seats
    assert sorted(s.seat for s in seats) == list(range(6))
    assert len({s.player_id for s in seats}) == 6


def test_r14_2_3_an_arrangement_cannot_place_a_copy_the_player_was_not_dealt(
    server: ServerThread,
) -> None:
    """R4.1, R14.2.3: on a puxian5 table (two copies of each diamond in the deck) a player
    placing a diamond twice that they were dealt once, or a card of another player, is refused;
    nothing is stored."""
    players = ["A", "B", "C", "D", "E"]
    seated_table(server, "t", dict.fromkeys(players, 10_000), ruleset="puxian5")
    dealt = deal(server, "t", client_seed="smuggle")
    hands = hands_of(dealt)
    held = Counter(hands["A"])
    once = next(c for c, n in held.items() if n == 1 and c.endswith("d"))
    others = [c for c in hands["A"] if c != once]
    # the diamond twice, one other card dropped
    smuggled = [once, once, *others[:-1]]
    piles = (smuggled[:3], smuggled[3:8], smuggled[8:13])
    before = head(server)
    request = table_pb2.ArrangeRequest(
        round_id=dealt.round_id, player_id="A", front=piles[0], middle=piles[1], back=piles[2]
    )
    assert_refused(
        server.tables.Arrange, request, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARRANGEMENT"
    )
    stranger = next(c for c in hands["B"] if c not in held)
    swapped = [stranger, *hands["A"][1:]]
    request = table_pb2.ArrangeRequest(
        round_id=dealt.round_id,
        player_id="A",
        front=swapped[:3],
        middle=swapped[3:8],
        back=swapped[8:13],
    )
    assert_refused(
        server.tables.Arrange, request, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARRANGEMENT"
    )
    assert head(server) == before
    arrange(server, dealt.round_id, "A", (hands["A"][:3], hands["A"][3:8], hands["A"][8:]))


@pytest.mark.parametrize("special", ["two_fives_one_trips", "six_of_a_kind"])
def test_r14_5_4_an_extra_special_named_undeclarable_is_refused_not_dropped(
    server: ServerThread, special: str
) -> None:
    """R14.4.3, R14.5.4: on puxian6 (both extra specials enabled, two_fives_one_trips worth 26)
    ``undeclarable_specials`` naming an extra special was silently dropped: the table opened,
    the special stayed declarable, two_fives_one_trips fell back to 20 points and GetTable did
    not list it as undeclarable. It is refused, naming the parameter, and nothing is stored."""
    before = head(server)
    request = table_pb2.OpenTableRequest(table_id="t", ruleset="puxian6")
    request.ruleset_parameters.undeclarable_specials.append(special)
    refused = assert_refused(
        server.tables.OpenTable,
        request,
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_RULESET",
        field="ruleset.special_points",
        says=special,
    )
    assert "extra_specials" in refused.message, refused.message
    assert head(server) == before


def test_r14_a_puxian6_round_killed_mid_round_is_revealed_after_a_restart_and_audits(
    tmp_path: Path, store: dict[str, str]
) -> None:
    """R10.3, R14.2.4: ``thirteen serve`` killed (SIGKILL) while a four-player round of a
    puxian6 table (78 cards, 26 undealt) is open, two players arranged: the restarted server's
    sweeper reveals it at its deadline (the others foul, R4.3), the totals sum to zero, the 26
    undealt cards are published then and not before, and AuditRound passes it with R14's
    checks (R14.2.3, R14.1.6)."""
    data = tmp_path / "data"
    players = ["A", "B", "C", "D"]
    first = ServeProcess(data, environ=store)
    try:
        for player in players:
            credit(first, player, 10_000, f"start-{player}")
        open_table(first, "t", ruleset="puxian6", parameters=P(arrange_seconds=2))
        for player in players:
            first.tables.SitDown(table_pb2.SitDownRequest(table_id="t", player_id=player))
        dealt = deal(first, "t", client_seed="killed")
        hands = hands_of(dealt)
        for player in ["A", "B"]:
            arrange(first, dealt.round_id, player, piles_for(hands[player], PUXIAN6))
        assert list(get_round(first, dealt.round_id).undealt_cards) == []
    finally:
        first.kill()
    second = ServeProcess(data, environ=store)
    try:
        revealed = wait_until(
            lambda: (
                r
                if (r := get_round(second, dealt.round_id)).phase == PHASE.ROUND_PHASE_REVEALED
                else None
            ),
            "the sweeper to reveal the killed round",
        )
        results = {p.player_id: p for p in revealed.result.players}
        assert [results[p].foul for p in players] == [False, False, True, True]
        assert sum(p.points for p in revealed.result.players) == 0
        undealt = list(revealed.undealt_cards)
        assert len(undealt) == 26
        dealt_cards = Counter(c for h in hands.values() for c in h) + Counter(undealt)
        assert dealt_cards == Counter(str(c) for c in PUXIAN6.deck)
        report = second.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=dealt.round_id))
        assert report.ok, [f.message for f in report.findings if not f.ok]
        assert {"R14.2.3", "R14.1.6"} <= {f.rule for f in report.findings}
    finally:
        second.stop()


def test_r14_sit_down_and_stand_up_racing_a_deal_on_a_six_seat_table_stay_consistent(
    server: ServerThread,
) -> None:
    """R10.1, R11, R14.2: on a puxian6 table of five, a Deal, a sixth player's SitDown and a
    seated player's StandUp released together, ten times: each round deals exactly the players
    seated when it was dealt (13 cards each, no card beyond the deck's copies), a player who
    stood up after the deal escaped it (R11) and one who stood up before is not in it; the
    sixth player is in the round only if seated before the deal."""
    players = [f"p{i}" for i in range(6)]
    for player in players:
        credit(server, player, 10_000, f"start-{player}")
    open_table(server, "t", ruleset="puxian6")
    for player in players[:5]:
        server.tables.SitDown(table_pb2.SitDownRequest(table_id="t", player_id=player))
    leaving = "p0"
    for attempt in range(10):
        for player in players:  # an escape (R11.1) may have cost a player all they held
            credit(server, player, 10_000, f"top-{attempt}-{player}")
        seated = {s.player_id for s in get_table(server, "t").seats}
        joining = next(p for p in players if p not in seated)
        if len(seated) < 5:
            server.tables.SitDown(table_pb2.SitDownRequest(table_id="t", player_id=joining))
            seated.add(joining)
            joining = next(p for p in players if p not in seated)
        leaving = sorted(seated)[attempt % len(seated)]
        dealt, sat, stood = _together(
            [
                functools.partial(
                    server.tables.Deal,
                    table_pb2.DealRequest(table_id="t", client_seed=f"race{attempt}"),
                ),
                functools.partial(
                    server.tables.SitDown,
                    table_pb2.SitDownRequest(table_id="t", player_id=joining),
                ),
                functools.partial(
                    server.tables.StandUp,
                    table_pb2.StandUpRequest(table_id="t", player_id=leaving),
                ),
            ]
        )
        assert not isinstance(sat, grpc.RpcError), sat
        assert not isinstance(stood, grpc.RpcError), stood
        if isinstance(dealt, grpc.RpcError):  # e.g. fewer than two seated: not here
            raise AssertionError(Refusal.of(dealt))
        round_ = get_round(server, dealt.round_id)
        in_round = [p.player_id for p in round_.players]
        assert 4 <= len(in_round) <= 6 and len(set(in_round)) == len(in_round)
        escaped = {p.player_id for p in round_.players if p.escaped}
        if leaving in in_round:
            assert stood.escaped and leaving in escaped, (attempt, stood, round_.players)
        else:
            assert not stood.escaped
        assert escaped <= {leaving}
        after = {s.player_id for s in get_table(server, "t").seats}
        assert leaving not in after and joining in after
        assert set(in_round) <= seated | {joining}
        # every active player arranges; the round reveals with totals summing to zero
        hands = hands_of(get_round(server, dealt.round_id, ""))
        assert hands == {}
        for player in in_round:
            if player in escaped:
                continue
            mine = hands_of(get_round(server, dealt.round_id, player))[player]
            assert len(mine) == 13
            arrange(server, dealt.round_id, player, piles_for(mine, PUXIAN6))
        revealed = server.tables.Reveal(table_pb2.RevealRequest(round_id=dealt.round_id))
        assert sum(p.points for p in revealed.players) == 0
        everything = Counter(c for p in revealed.players for c in p.cards)
        assert not everything - Counter(str(c) for c in PUXIAN6.deck)


def _told_otherwise(hand: Sequence[Card]) -> bool:
    """Whether R5.1's counting (the table's quad rule alone) and puxian6's (R14.4.1 partition,
    R14.4.3's extra specials, R14.5.4's map) find different specials in a hand: a quick look
    at the ranks first (groups that only copies or partition make), then both lists."""
    counts = Counter(c.rank for c in hand).values()
    pairs, trips = sum(n // 2 for n in counts), sum(n // 3 for n in counts)
    if pairs < 6 and trips < 4 and max(counts) < 5:
        return False
    base = qualifying(hand, quad_counts_as_two_pairs=True)
    told = qualifying(hand, counting=PUXIAN6.counting, specials=PUXIAN6.specials)
    return [q.special for q in base] != [q.special for q in told]


def test_r5_6_the_specials_a_puxian6_hand_is_told_it_qualifies_for_follow_the_table_ruleset(
    server: ServerThread,
) -> None:
    """R5.6 with R14.4.1, R14.4.3, R14.5.4: GetRound tells a player the specials their hand
    qualifies for under the table's ruleset. On puxian6 (special_counting partition, the extra
    specials enabled, two_monsters_front_trips undeclarable) it counted as R5.1 does instead, so
    a hand was told specials it cannot declare, or not told one it can (a six_of_a_kind was
    told nothing). The list is what ``qualifying`` gives under the ruleset, in GetRound and
    WatchTable alike, and the first one in it is accepted as declared."""
    players = [f"p{i}" for i in range(6)]
    seated_table(server, "t", dict.fromkeys(players, 10_000), ruleset="puxian6")
    seed = server.app.table("t").committed_seed(server.app.seed_keys)
    round_id = deal_round_id("t", "q")
    client_seed, seat = next(
        (f"pick-{k}", seat)
        for k in range(20_000)
        for seat, hand in enumerate(
            shuffle_deal(seed, f"pick-{k}", round_id, 6, deck=PUXIAN6.deck, max_players=6)
        )
        if _told_otherwise(hand)
    )
    dealt = deal(server, "t", client_seed=client_seed, request_id="q")
    player = dealt.players[seat].player_id
    (hand,) = get_round(server, dealt.round_id, player).hands
    cards = parse_cards(hand.cards, copies=PUXIAN6.copies)
    found = qualifying(cards, counting=PUXIAN6.counting, specials=PUXIAN6.specials)
    expected = [q.special.id for q in strongest_first(found, PUXIAN6)]  # R14.5.3
    assert list(hand.qualifying_specials) == expected
    watched = events(server, "t", of_type("RoundDealt"), viewer=player)[-1].round
    assert [list(h.qualifying_specials) for h in watched.hands] == [expected]
    for told in expected:  # each one told is accepted as declared (R5.4)
        reply = arrange(server, dealt.round_id, player, special=told)
        assert reply.special == told and not reply.foul


def test_r14_a_replica_pair_plays_puxian6_with_calls_alternating_between_them(
    tmp_path: Path,
) -> None:
    """R14 on two replicas of one PostgreSQL store: a puxian6 table opened on one, five players
    seated and a round dealt, arranged and revealed with each call on the other replica in
    turn. Both answer the same round, table and ruleset; the reveal publishes the 13 undealt
    cards on both (and in the views' ListRounds once projected), and AuditRound passes."""
    with store_environ("postgres", tmp_path) as environ:
        replicas = [Replica(environ, tmp_path / "a"), Replica(environ, tmp_path / "b")]
        try:
            stubs = [table_pb2_grpc.TableServiceStub(r.channel) for r in replicas]
            wallets = [wallet_pb2_grpc.WalletServiceStub(r.channel) for r in replicas]
            players = [f"p{i}" for i in range(5)]
            for k, player in enumerate(players):
                wallets[k % 2].Credit(
                    wallet_pb2.CreditRequest(player_id=player, amount=10_000, transfer_id=player)
                )
            stubs[0].OpenTable(table_pb2.OpenTableRequest(table_id="t", ruleset="puxian6"))
            for k, player in enumerate(players):
                stubs[(k + 1) % 2].SitDown(table_pb2.SitDownRequest(table_id="t", player_id=player))
            dealt = stubs[1].Deal(table_pb2.DealRequest(table_id="t", client_seed="pair"))
            hands = hands_of(dealt)
            for k, player in enumerate(players):
                front, middle, back = piles_for(hands[player], PUXIAN6)
                reply = stubs[k % 2].Arrange(
                    table_pb2.ArrangeRequest(
                        round_id=dealt.round_id,
                        player_id=player,
                        front=front,
                        middle=middle,
                        back=back,
                    )
                )
                assert not reply.foul, reply.foul_reason
            revealed = stubs[0].Reveal(table_pb2.RevealRequest(round_id=dealt.round_id))
            assert sum(p.points for p in revealed.players) == 0
            seen = [s.GetRound(table_pb2.GetRoundRequest(round_id=dealt.round_id)) for s in stubs]
            assert seen[0] == seen[1]
            assert len(seen[0].undealt_cards) == 13
            assert Counter(seen[0].undealt_cards) + Counter(
                c for h in hands.values() for c in h
            ) == Counter(str(c) for c in PUXIAN6.deck)
            tables = [s.GetTable(table_pb2.GetTableRequest(table_id="t")) for s in stubs]
            assert tables[0] == tables[1] and tables[0].ruleset_parameters.max_players == 6
            assert len(tables[0].seats) == 5

            def listed() -> Any:
                rounds = stubs[1].ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
                return rounds if rounds and rounds[-1].undealt_cards else None

            rounds = wait_until(listed, "the views to list the revealed round")
            assert list(rounds[-1].undealt_cards) == list(seen[0].undealt_cards)
            audit = audit_pb2_grpc.AuditServiceStub(replicas[1].channel)
            report = audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=dealt.round_id))
            assert report.ok, [f.message for f in report.findings if not f.ok]
        finally:
            for replica in replicas:
                replica.stop()


def test_r14_a_puxian6_round_abandoned_by_escapes_publishes_its_undealt_cards_and_audits(
    server: ServerThread,
) -> None:
    """R11, R10.4, R14.2.4: four players at a puxian6 table; three stand up mid-round (they
    escape, R11.1), so the round is abandoned and over: its seed and its 26 undealt cards are
    published (GetRound, ListRounds once projected), coins are conserved and AuditRound passes
    it with R14's checks."""
    players = ["A", "B", "C", "D"]
    seated_table(server, "t", dict.fromkeys(players, 10_000), ruleset="puxian6")
    dealt = deal(server, "t", client_seed="run")
    for player in ["B", "C", "D"]:
        assert server.tables.StandUp(
            table_pb2.StandUpRequest(table_id="t", player_id=player)
        ).escaped
    round_ = get_round(server, dealt.round_id)
    assert round_.phase == PHASE.ROUND_PHASE_ABANDONED, round_.phase
    assert len(round_.undealt_cards) == 26
    everything = Counter(round_.undealt_cards) + Counter(
        c for h in hands_of(dealt).values() for c in h
    )
    assert everything == Counter(str(c) for c in PUXIAN6.deck)
    assert sum(balance(server, p) for p in players) == 4 * 10_000

    def listed() -> Any:
        rounds = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
        return rounds if rounds and rounds[-1].phase == PHASE.ROUND_PHASE_ABANDONED else None

    rounds = wait_until(listed, "the views to list the abandoned round")
    assert list(rounds[-1].undealt_cards) == list(round_.undealt_cards)
    report = server.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=dealt.round_id))
    assert report.ok, [f.message for f in report.findings if not f.ok]
    assert {"R14.2.3", "R14.1.6"} <= {f.rule for f in report.findings}


HOSTILE_DEAL_RULESETS: list[tuple[str, Any]] = [
    ("max_players", 99),
    ("max_players", 2),
    ("extra_suits", ["d", "d", "d"]),
    ("extra_suits", ["x"]),
    ("extra_suits", "dc" * 50_000),
    ("horse_card", "1x"),
    ("horse_card", ["8h"]),
    ("horse_multiplier", 10**30),
    ("special_points", {"no_such": 5}),
    ("special_points", {"six_of_a_kind": None}),
    ("extra_specials", ["six_of_a_kind", 5]),
    ("special_counting", None),
    ("pile_bonuses", {"middle": {"five_of_a_kind": -5}}),
]


@pytest.mark.parametrize(("key", "value"), HOSTILE_DEAL_RULESETS)
def test_r14_an_export_whose_deal_records_a_hostile_ruleset_is_reported_not_crashed(
    request: pytest.FixtureRequest, tmp_path: Path, key: str, value: Any
) -> None:
    """``thirteen audit --file`` on an exported puxian6 round whose deal's recorded ruleset was
    edited to a value no table could open with: the audit reports failing findings (exit 1,
    JSON on stdout, no traceback), whatever the value."""
    played: Stores = request.getfixturevalue("stores")  # test_tamper_variants' puxian6 round
    document = json.loads(played.played.document)
    dealt = next(e for e in document["round_events"] if e["version"] == 1)["state"]
    dealt["ruleset"][key] = value
    audit = _audit_document(tmp_path, document)
    assert audit.status == 1, (audit.status, audit.stderr[-2000:])
    assert audit.failed(), audit.report
