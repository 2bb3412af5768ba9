"""``thirteen demo`` through the real console script: bots playing over the real gRPC API."""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from service._generated.thirteen.v1 import wallet_pb2
from service.tools.demo_fairness import fairness_problems, own_hand_problem
from tests.support.cli import SCRIPT
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

SUITS = "♠♥♦♣"
PAIRS_PER_ROUND = 6  # four players (R6)


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    if SCRIPT is None:
        pytest.fail("the thirteen console script is not installed: run make setup")
    return subprocess.run(
        [SCRIPT, "demo", *args], capture_output=True, text=True, timeout=60, check=False
    )


def rounds_of(stdout: str) -> list[str]:
    """The text of each round, from its heading to the next."""
    return re.split(r"^Round \d+ of \d+$", stdout, flags=re.MULTILINE)[1:]


def balances(stdout: str) -> dict[str, int]:
    """The last settlement table's balance per player."""
    rows = re.findall(r"^ {4}(\w+-\w+) +(?:[+-]?\d+) +(?:[+-]?\d+) +(\d+)$", stdout, re.MULTILINE)
    return {player: int(balance) for player, balance in rows}


@pytest.fixture(scope="module")
def played() -> subprocess.CompletedProcess[str]:
    return demo("--rounds", "2", "--seed", "7")


def test_demo_plays_two_rounds_against_a_server_of_its_own(
    played: subprocess.CompletedProcess[str],
) -> None:
    assert played.returncode == 0, played.stderr
    assert played.stderr == ""
    assert len(rounds_of(played.stdout)) == 2


def test_demo_shows_the_ruleset_and_the_commitment_before_the_deal(
    played: subprocess.CompletedProcess[str],
) -> None:
    assert "ruleset standard" in played.stdout
    for text in rounds_of(played.stdout):
        assert text.index("commitment published before the deal") < text.index("hands:")


def test_demo_shows_cards_with_suit_symbols_highest_first(
    played: subprocess.CompletedProcess[str],
) -> None:
    hands = re.findall(r"^ {4}\w+-\w+ +((?:[2-9TJQKA][♠♥♦♣] ?){13})$", played.stdout, re.MULTILINE)
    assert len(hands) == 2 * 4
    order = "AKQJT98765432"
    for hand in hands:
        ranks = [order.index(card[0]) for card in hand.split()]
        assert ranks == sorted(ranks)
    assert any(suit in played.stdout for suit in SUITS)


def test_demo_explains_every_pair_of_every_round_in_words(
    played: subprocess.CompletedProcess[str],
) -> None:
    for text in rounds_of(played.stdout):
        pairs = text.split("pairs:")[1].split("settlement at base")[0]
        headers = re.findall(r"^ {4}\S+ vs \S+$", pairs, re.MULTILINE)
        assert len(headers) == PAIRS_PER_ROUND
        assert re.search(r"beats|ties|both|outranks|foul", pairs)


def test_demo_prints_points_coins_and_balances_after_settlement(
    played: subprocess.CompletedProcess[str],
) -> None:
    for text in rounds_of(played.stdout):
        assert re.search(r"player +points +coins +balance", text)
        assert len(balances(text)) == 4
        assert sum(balances(text).values()) == 4 * 1000  # R7.2: play moves coins, never makes them


def test_r4_3_demo_shows_a_foul_draft_being_corrected(
    played: subprocess.CompletedProcess[str],
) -> None:
    second = rounds_of(played.stdout)[1]
    assert "submits a foul draft: " in second
    assert "corrects it before the reveal" in second


def test_r12_6_demo_verifies_every_deal(played: subprocess.CompletedProcess[str]) -> None:
    assert played.stdout.count("fairness: verified") == 2
    assert "FAILED" not in played.stdout


R12_7 = [
    "Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd",
    "8d Ac 2d 5c Jc 7s As 6h 5s 7c Jh 4s 9c",
    "6d Js Ah Tc Qs Kh 3h Qc Ad Kc Th 3s 8h",
    "6c 9h 7d 9d Ts 5h 9s Qh 7h Ks 2c 8c 4h",
]
R12_8 = [
    "4h 9s 7h Tc Jd 7d 4s 6s 6d Kh Ad Ks Jc",
    "9c Js 6h Ah 8d 2s 5h 5s Kc 8h 2c 3s 4d",
    "6c 8c As 2h Qd 7s 9h 7c Jh Ts 8s 5d 3c",
    "Td 5c 4c Kd 3d Qh Qs Th Ac 9d 2d Qc 3h",
]
R12_8_SEEDS = {"p0": "a", "p1": "b", "p3": "d"}


def vector_round(
    commitment: str,
    hands: list[str] = R12_7,
    seeds: dict[str, str] | None = None,
    names: str | list[str] = "ABCD",
) -> SimpleNamespace:
    """A test vector (R12.7, or R12.8 with ``seeds``) as a Deal or GetRound answer."""
    seeds = seeds or {}
    return SimpleNamespace(
        round_id="r1",
        client_seed="client",
        commitment=commitment,
        server_seed="00" * 32,
        players=[
            SimpleNamespace(player_id=p, seat=i, player_seed=seeds.get(p, ""))
            for i, p in enumerate(names)
        ],
        hands=[
            SimpleNamespace(player_id=p, cards=h.split()) for p, h in zip(names, hands, strict=True)
        ],
    )


def r12_7_round(commitment: str) -> SimpleNamespace:
    """The R12.7 test vector as a dealt round."""
    return vector_round(commitment)


def test_r12_6_fairness_check_passes_the_test_vector_and_catches_tampering() -> None:
    commitment = hashlib.sha256(bytes(32)).hexdigest()
    assert fairness_problems(commitment, r12_7_round(commitment), "00" * 32) == []
    assert fairness_problems(commitment, r12_7_round(commitment), "01" * 32)  # another seed
    swapped = r12_7_round(commitment)
    a, b = swapped.hands[:2]
    a.cards, b.cards = b.cards, a.cards
    assert len(fairness_problems(commitment, swapped, "00" * 32)) == 2  # A's and B's hands


def test_r12_8_fairness_check_recomputes_the_deal_with_the_player_seeds() -> None:
    """R12.8: the demo's table-wide check mixes the recorded player seeds into the client seed;
    the same hands without them, or with a seed altered, fail it."""
    commitment = hashlib.sha256(bytes(32)).hexdigest()
    seats = ["p0", "p1", "p2", "p3"]
    dealt = vector_round(commitment, R12_8, R12_8_SEEDS, seats)
    assert fairness_problems(commitment, dealt, "00" * 32) == []
    unseeded = vector_round(commitment, R12_8, None, seats)
    assert len(fairness_problems(commitment, unseeded, "00" * 32)) == 4
    altered = vector_round(commitment, R12_8, {**R12_8_SEEDS, "p1": "B"}, seats)
    assert len(fairness_problems(commitment, altered, "00" * 32)) == 4


def test_r12_8_a_bot_checks_its_own_hand_and_that_its_seed_was_used() -> None:
    """R12.8: one player, knowing only its own hand and seed, checks the revealed round."""
    commitment = hashlib.sha256(bytes(32)).hexdigest()
    seats = ["p0", "p1", "p2", "p3"]
    shown = vector_round(commitment, R12_8, R12_8_SEEDS, seats)
    assert own_hand_problem(commitment, shown, "p3", "d", R12_8[3].split()) == ""
    assert own_hand_problem(commitment, shown, "p2", "", R12_8[2].split()) == ""
    assert "records the seed 'd', not 'e'" in own_hand_problem(
        commitment, shown, "p3", "e", R12_8[3].split()
    )
    assert "do not give the hand" in own_hand_problem(
        commitment, shown, "p3", "d", R12_8[2].split()
    )
    other = hashlib.sha256(b"another").hexdigest()
    assert "not the commitment" in own_hand_problem(other, shown, "p3", "d", R12_8[3].split())


def test_r12_8_demo_bots_each_give_a_seed_and_verify_their_own_hand(
    played: subprocess.CompletedProcess[str],
) -> None:
    """R12.8: every round each bot shows the seed it gives with the deal, the deal mixes them
    in, and after the reveal each bot says its seed is in the round and its hand checks out."""
    for text in rounds_of(played.stdout):
        given = text.split("each bot's own seed")[1].split("dealt round")[0]
        seeds = dict(re.findall(r"^ {4}(\w+-\w+) +([0-9a-f]{8})$", given, re.MULTILINE))
        assert len(seeds) == 4
        assert "with every bot's seed mixed in (R12.8)" in text
        checks = text.split("each bot checks its own hand (R12.8):")[1]
        for player, seed in seeds.items():
            assert re.search(
                rf"^ {{4}}{player} +its seed {seed} is in the round, .*: verified$",
                checks,
                re.MULTILINE,
            ), checks
        assert text.index("each bot's own seed") < text.index("dealt round")


def test_demo_without_a_server_at_the_address_fails_in_one_line() -> None:
    done = demo("--address", "127.0.0.1:1", "--rounds", "1")
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "cannot reach a thirteen server at 127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    "args", [["--address", "nowhere"], ["--rounds", "0"], ["--rounds", "three"]]
)
def test_demo_refuses_bad_arguments_with_status_2(args: list[str]) -> None:
    done = demo(*args)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "data", {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    yield running
    running.stop()


def test_demo_plays_against_a_given_server_again_and_again(server: ServerThread) -> None:
    for _ in range(2):  # fresh players each run, so a server hosts any number of demos
        done = demo("--address", server.address, "--rounds", "1")
        assert done.returncode == 0, done.stderr
        assert done.stdout.count("fairness: verified") == 1
        shown = balances(done.stdout)
        for player, balance in shown.items():
            stored = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player))
            assert stored.balance == balance
            assert stored.table_id == ""  # the bots stood up at the end
