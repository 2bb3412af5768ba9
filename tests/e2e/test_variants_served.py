"""R14 through a real server: tables on the puxian presets seat five or six, deal decks with
copies of a card, publish the undealt cards at the reveal and score the horse (R14.1, R14.2,
R14.6), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from domain.fairness.shuffle import deal as shuffle_deal
from domain.fairness.shuffle import undealt
from domain.ids import deal_round_id
from domain.rules.cards import Card, format_cards, parse_cards
from domain.rules.ruleset import ALL_PRESETS, Ruleset
from domain.rules.suggest import suggest
from service._generated.thirteen.v1 import audit_pb2, results_pb2, table_pb2
from tests.e2e.helpers import (
    Piles,
    arrange,
    deal,
    events,
    get_round,
    hands_of,
    of_type,
    reveal,
    seated_table,
    wait_until,
)
from tests.support.server import ServerThread

SCRIPT = Path(sys.executable).parent / "thirteen"


def piles_for(cards: Sequence[str], ruleset: Ruleset) -> Piles:
    """A non-foul arrangement of a hand that may hold two copies of a card (R4.2, R14.2.3)."""
    hand = parse_cards(cards, copies=ruleset.copies)
    arrangement = suggest(hand, ruleset).arrangement
    return (
        format_cards(arrangement.front),
        format_cards(arrangement.middle),
        format_cards(arrangement.back),
    )


def play_round(server: ServerThread, table_id: str, ruleset: Ruleset) -> tuple[str, list[str]]:
    """Deal, every player arranges as suggested; returns the round id and its players."""
    dealt = deal(server, table_id)
    for player, cards in hands_of(dealt).items():
        reply = arrange(server, dealt.round_id, player, piles_for(cards, ruleset))
        assert not reply.foul, reply.foul_reason
    return dealt.round_id, [p.player_id for p in dealt.players]


def test_r14_2_4_the_undealt_cards_are_published_at_the_reveal_and_not_before(
    server: ServerThread,
) -> None:
    """R14.2.4: four players at a puxian6 table leave 26 of the 78 cards undealt. Before the
    reveal nobody learns them (R12.1: they follow from the secret seed): not the players, not an
    observer, not the dealing game server, not a watcher. The reveal publishes them in deck
    order, the same in GetRound, WatchTable and ListRounds; with the hands they make up the deck,
    and they are what the shuffle leaves from the revealed seed."""
    rules = ALL_PRESETS["puxian6"]
    players = ["A", "B", "C", "D"]
    seated_table(server, "t", dict.fromkeys(players, 1000), ruleset="puxian6")
    dealt = deal(server, "t", client_seed="lucky")
    assert list(dealt.undealt_cards) == []
    for viewer in ["", "A", "Z"]:
        assert list(get_round(server, dealt.round_id, viewer).undealt_cards) == []
    hands = hands_of(dealt)
    for player in players:
        arrange(server, dealt.round_id, player, piles_for(hands[player], rules))
        assert list(get_round(server, dealt.round_id, player).undealt_cards) == []
    for viewer in ["", "A"]:
        seen = events(server, "t", of_type("HandSubmitted", "D"), viewer=viewer)
        assert [m for m in seen if m.round.undealt_cards] == []

    listing = wait_until(
        lambda: [
            r
            for r in server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
            if all(p.submitted for p in r.players)
        ],
        "the listing to show every submission",
    )
    assert list(listing[0].undealt_cards) == []

    revealed = reveal(server, dealt.round_id)
    rest = list(get_round(server, dealt.round_id).undealt_cards)
    assert len(rest) == 78 - 4 * 13
    expected = undealt(
        bytes.fromhex(revealed.server_seed), "lucky", dealt.round_id, 4, rules.deck, 6
    )
    assert rest == format_cards(expected)
    for viewer in ["", "A", "Z"]:
        assert list(get_round(server, dealt.round_id, viewer).undealt_cards) == rest
    shown = events(server, "t", of_type("RoundRevealed"))[-1]
    assert list(shown.round.undealt_cards) == rest
    whole = Counter(rest) + Counter(c for cards in hands.values() for c in cards)
    assert whole == Counter(format_cards(rules.deck))  # R14.2.3: every copy, once
    listed = wait_until(
        lambda: [
            r
            for r in server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
            if r.phase == table_pb2.ROUND_PHASE_REVEALED
        ],
        "the listing to show the reveal",
    )
    assert list(listed[0].undealt_cards) == rest  # ListRounds shows what GetRound shows


def test_r14_2_4_a_ruleset_of_r13_alone_publishes_no_undealt_cards(server: ServerThread) -> None:
    """R14's defaults leave R1–R13 as they are: a three-player standard round leaves 13 cards
    undealt, and its reveal publishes none of them, as before R14."""
    rules = ALL_PRESETS["standard"]
    seated_table(server, "t", dict.fromkeys(["A", "B", "C"], 1000))
    round_id, _ = play_round(server, "t", rules)
    reveal(server, round_id)
    for viewer in ["", "A"]:
        assert list(get_round(server, round_id, viewer).undealt_cards) == []


def _five_of_a_kind(hands: tuple[tuple[Card, ...], ...]) -> bool:
    return any(max(Counter(c.rank for c in hand).values()) >= 5 for hand in hands)


def _recall(server: ServerThread, request: results_pb2.ListPlayerRoundsRequest) -> Any:
    return server.results.ListPlayerRounds(request).rounds


def _any(hands: tuple[tuple[Card, ...], ...]) -> bool:
    return True


@pytest.mark.parametrize(("preset", "seats"), [("puxian", 4), ("puxian5", 5), ("puxian6", 6)])
def test_r14_6_a_real_server_plays_a_round_of_each_puxian_preset(
    server: ServerThread, tmp_path: Path, preset: str, seats: int
) -> None:
    """R14.6 through gRPC: a full table of each preset is dealt (with five or six seats, a
    five of a kind in a hand where the deck has copies, R14.3.1), everyone arranges, the reveal
    scores the horse 8h's holder ×2 against each opponent (R14.1.3) and the totals sum to zero
    (R7.2); AuditRound and the offline audit of ExportRound's document pass it, and the views
    (ListRoundResults, ListPlayerRounds) list it with every seat."""
    rules = ALL_PRESETS[preset]
    players = [f"P{i}" for i in range(seats)]
    seated_table(server, "t", dict.fromkeys(players, 10_000), ruleset=preset)
    seed = server.app.table("t").committed_seed(server.app.seed_keys)
    round_id = deal_round_id("t", "r1")
    wanted = _five_of_a_kind if rules.extra_suits else _any
    client_seed = next(
        f"pick-{k}"
        for k in range(5000)
        if wanted(shuffle_deal(seed, f"pick-{k}", round_id, seats, None, rules.deck, seats))
    )  # a game server that knew the seed could pick this; the test reads it to show a 五同
    dealt = server.tables.Deal(
        table_pb2.DealRequest(table_id="t", client_seed=client_seed, request_id="r1")
    )
    hands = hands_of(dealt)
    assert len(hands) == seats
    for player, cards in hands.items():
        reply = arrange(server, dealt.round_id, player, piles_for(cards, rules))
        assert not reply.foul, reply.foul_reason
    revealed = reveal(server, dealt.round_id)

    assert sum(p.points for p in revealed.players) == 0  # R7.2
    assert sum(p.coins for p in revealed.players) == 0
    assert len(revealed.pairs) == seats * (seats - 1) // 2  # 6, 10 or 15 pairs
    holders = [p for p, cards in hands.items() if "8h" in cards]
    assert len(holders) == 1  # the deck holds one 8h: hearts are never an extra suit here
    holder = holders[0]
    for pair in revealed.pairs:
        if holder in (pair.a, pair.b):  # R14.1.3: ×2 against each opponent
            assert f"{holder} holds the horse 8h: ×2." in pair.explanation, pair.explanation
            assert pair.points % 2 == 0
        else:
            assert "horse" not in pair.explanation, pair.explanation
    if rules.extra_suits:
        assert any("five of a kind" in pair.explanation for pair in revealed.pairs)

    watched = events(server, "t", of_type("RoundRevealed"))[-1].round
    assert hands_of(watched) == hands and len(watched.result.pairs) == len(revealed.pairs)

    report = server.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=dealt.round_id))
    assert report.ok, [f.message for f in report.findings if not f.ok]
    assert {"R14.2.3", "R14.1.6", "R12", "R6", "R9"} <= {f.rule for f in report.findings}
    document = server.audit.ExportRound(
        audit_pb2.ExportRoundRequest(round_id=dealt.round_id)
    ).document
    export = tmp_path / "round.json"
    export.write_text(document)
    done = subprocess.run(
        [str(SCRIPT), "audit", "--file", str(export), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True

    results = wait_until(
        lambda: (
            server.results.ListRoundResults(
                results_pb2.ListRoundResultsRequest(table_id="t")
            ).rounds
        ),
        "the results view to show the round",
    )
    assert [p.player_id for p in results[0].result.players] == players
    assert results[0].result.players == revealed.players
    for result in revealed.players:  # the statistics fold counts every seat (R6, R9)
        stats = server.results.GetPlayerStats(
            results_pb2.GetPlayerStatsRequest(player_id=result.player_id)
        )
        assert (stats.rounds_played, stats.points, stats.net_coins) == (
            1,
            result.points,
            result.coins,
        )
    for seat, player in enumerate(players):
        request = results_pb2.ListPlayerRoundsRequest(player_id=player)
        recalled = wait_until(partial(_recall, server, request), f"{player}'s recall")
        assert (recalled[0].round_id, recalled[0].seat) == (dealt.round_id, seat)
        assert list(recalled[0].cards) == hands[player]
