"""``thirteen demo --ruleset`` through the real console script against a real server: the bots
open a table on R14.6's presets, five and six of them where the ruleset seats them, and play
rounds with copies of a card and the horse, every deal verified fair."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.cli.test_demo import balances, demo, rounds_of
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

HAND = r"^ {4}(\w+-\w+) +((?:[2-9TJQKA][♠♥♦♣] ?){13})$"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "data", {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    yield running
    running.stop()


@pytest.mark.parametrize(
    ("preset", "bots", "word"), [("puxian5", 5, "five"), ("puxian6", 6, "six")]
)
def test_r14_6_demo_plays_rounds_of_a_variant_preset_with_a_bot_in_every_seat(
    server: ServerThread, preset: str, bots: int, word: str
) -> None:
    """R14.2.1, R14.6: the table opens on the preset and seats ``bots`` bots; each round deals
    them 13 cards each from the bigger deck (R14.2.3: a card may come twice), explains every
    one of the bots × (bots − 1) / 2 pairs, marks the horse 8h's holder (R14.1.3), settles to
    zero and verifies the deal from the seeds (R12.6, R14.2.4); the balances shown are the
    server's."""
    done = demo("--address", server.address, "--rounds", "2", "--seed", "7", "--ruleset", preset)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert f"thirteen demo: {word} bots play 2 rounds" in done.stdout
    assert f"ruleset {preset}:" in done.stdout
    assert "horse card 8h (R14.1)" in done.stdout
    rounds = rounds_of(done.stdout)
    assert len(rounds) == 2
    for text in rounds:
        hands = re.findall(HAND, text, re.MULTILINE)
        assert len(hands) == bots
        pairs = text.split("pairs:")[1].split("settlement at base")[0]
        assert len(re.findall(r"^ {4}\S+ vs \S+$", pairs, re.MULTILINE)) == bots * (bots - 1) // 2
        assert "holds the horse 8h: ×2." in pairs
        points = re.findall(r"^ {4}\w+-\w+ +([+-]?\d+) +[+-]?\d+ +\d+$", text, re.MULTILINE)
        assert len(points) == bots and sum(map(int, points)) == 0  # R7.2
        assert f"round id, {bots}) reproduces every hand from the" in text
    assert done.stdout.count("fairness: verified") == 2
    assert "FAILED" not in done.stdout
    shown = balances(done.stdout)
    assert len(shown) == bots
    for player, balance in shown.items():
        stored = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player))
        assert stored.balance == balance
    table_id = re.findall(r"opened table (\S+), ruleset", done.stdout)[0]
    table = server.tables.GetTable(table_pb2.GetTableRequest(table_id=table_id))
    assert (table.ruleset, table.ruleset_parameters.max_players) == (preset, bots)
    assert table.round_count == 2


def test_demo_refuses_an_unknown_ruleset_with_status_2() -> None:
    done = demo("--ruleset", "poker", "--rounds", "1")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "poker" in done.stderr and "puxian5" in done.stderr
    assert "Traceback" not in done.stderr
