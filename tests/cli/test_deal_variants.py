"""``thirteen deal --ruleset`` through the real console script: the deck of N cards, up to
``max_players`` seats and the undealt cards (R14.2), with R14.2.5's test vectors."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from domain.rules.ruleset import PUXIAN6

from .conftest import run

VECTOR = ["deal", "--server-seed", "00" * 32, "--client-seed", "client", "--round-id", "r1"]
FIVE_SEATS = json.dumps({"max_players": 5, "extra_suits": ["d"]})


def test_r14_2_5_five_players_with_an_extra_suit_of_diamonds() -> None:
    """N = 65: seats 0, 1 and 4 as the rule book gives them; every card dealt, none left."""
    out = run([*VECTOR, "--players", "5", "--ruleset", FIVE_SEATS])
    assert out.status == 0, out.stderr
    [line] = out.lines
    hands = line["hands"]
    assert len(hands) == 5
    assert hands[0] == "Qh 7d Jc 9d Jh 4c 8s 7d 3d 3c 9c Jd 6d".split()
    assert hands[1] == "2d Ah 3d Th Kd Js Kd 9h Ks 7h 5s 8h 2d".split()
    assert hands[4] == "As Tc 9s 3h 7c Ad Td Qs 5h 4h Ad 5d Qd".split()
    assert "undealt" not in line  # 5 × 13 = 65: no card is left over


def test_r14_2_5_six_players_under_puxian6_and_four_from_the_same_deck() -> None:
    """N = 78 (extra suits d, c): seats 0 and 5; four players leave 26 cards undealt, the
    first six ``Kh 4c Th 5c 3h 6d``, and hands plus undealt are the deck exactly (R14.2.3)."""
    six = run([*VECTOR, "--players", "6", "--ruleset", "puxian6"])
    assert six.status == 0, six.stderr
    hands = six.lines[0]["hands"]
    assert hands[0] == "3c Tc Kd 6d Td 7s 4c 7c 4d Qc 7d Kd 5d".split()
    assert hands[5] == "Ac Qd Ks 7c 9d 6c Js 5c Ac 2h Tc 7h 4h".split()
    four = run([*VECTOR, "--players", "4", "--ruleset", "puxian6"])
    assert four.status == 0, four.stderr
    line = four.lines[0]
    assert line["hands"] == hands[:4]  # the same shuffle, dealt to fewer seats (R14.2.4)
    assert len(line["undealt"]) == 26
    assert line["undealt"][:6] == "Kh 4c Th 5c 3h 6d".split()
    assert line["undealt"] == [c for h in hands[4:] for c in h]
    dealt = Counter(c for h in line["hands"] for c in h) + Counter(line["undealt"])
    assert dealt == Counter(str(c) for c in PUXIAN6.deck)


def test_r14_2_4_a_standard_deal_to_two_players_lists_the_26_cards_left() -> None:
    out = run([*VECTOR, "--players", "2"])
    assert out.status == 0, out.stderr
    line = out.lines[0]
    assert len(line["undealt"]) == 26
    assert len(set(line["undealt"]) | {c for h in line["hands"] for c in h}) == 52


def test_r14_2_1_seat_ids_up_to_the_ruleset_s_max_players() -> None:
    ids = ["ann", "bob", "cy", "dee", "eve"]
    out = run([*VECTOR, "--seat-ids", *ids, "--ruleset", "puxian5"])
    assert out.status == 0, out.stderr
    assert out.lines[0]["seats"] == ids
    assert out.lines[0]["hands"][0] == "Qh 7d Jc 9d Jh 4c 8s 7d 3d 3c 9c Jd 6d".split()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "5"], "the ruleset seats 2 to 4 players (R10.1, R14.2.1)"),
        (["--players", "6", "--ruleset", "puxian5"], "seats 2 to 5 players"),
        (["--players", "7", "--ruleset", "puxian6"], "players must be 2 to 6"),
        (
            ["--seat-ids", "a", "b", "c", "d", "e", "f", "--ruleset", "puxian5"],
            "--seat-ids must name 2 to 5 players",
        ),
        (["--players", "4", "--ruleset", "nope"], "unknown ruleset 'nope'"),
        (["--players", "4", "--ruleset", "{"], "--ruleset: malformed JSON"),
        (["--players", "4", "--ruleset", '{"max_players": 5}'], "max_players"),
        (["--players", "4", "--ruleset", '{"extra_suits": ["x"]}'], "extra_suits"),
    ],
)
def test_r14_2_deal_refuses_a_bad_ruleset_or_too_many_seats(args: list[str], message: str) -> None:
    out = run([*VECTOR, *args])
    assert out.status == 2, out.stdout
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr
