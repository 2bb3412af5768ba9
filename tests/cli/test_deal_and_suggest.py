"""``thirteen deal`` and ``thirteen suggest`` through the real console script."""

import hashlib

import pytest

from .conftest import jsonl, run

R12_7 = [
    "Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd".split(),
    "8d Ac 2d 5c Jc 7s As 6h 5s 7c Jh 4s 9c".split(),
    "6d Js Ah Tc Qs Kh 3h Qc Ad Kc Th 3s 8h".split(),
    "6c 9h 7d 9d Ts 5h 9s Qh 7h Ks 2c 8c 4h".split(),
]


def test_r12_7_deal_reproduces_the_test_vector():
    out = run(
        [
            "deal",
            "--server-seed",
            "00" * 32,
            "--client-seed",
            "client",
            "--round-id",
            "r1",
            "--players",
            "4",
        ]
    )
    assert out.status == 0, out.stderr
    assert out.lines == [{"commitment": hashlib.sha256(bytes(32)).hexdigest(), "hands": R12_7}]


def test_r12_2_deal_defaults_to_an_empty_client_seed_and_deals_fewer_players():
    out = run(["deal", "--server-seed", "ab" * 32, "--round-id", "r", "--players", "2"])
    assert out.status == 0
    assert [len(h) for h in out.lines[0]["hands"]] == [13, 13]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--server-seed", "zz", "--round-id", "r", "--players", "4"], "is not hex"),
        (
            ["--server-seed", "00" * 31, "--round-id", "r", "--players", "4"],
            "must be 32 bytes (64 hex digits), got 31",
        ),
        (
            ["--server-seed", "00" * 32, "--round-id", "r", "--players", "5"],
            "players must be 2, 3 or 4",
        ),
        (["--server-seed", "00" * 32, "--players", "4"], "--round-id"),
    ],
)
def test_deal_bad_arguments_exit_2_with_one_line(args, message):
    out = run(["deal", *args])
    assert out.status == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_suggest_lists_specials_and_a_non_foul_arrangement():
    out = run(
        ["suggest"],
        jsonl(
            {"cards": "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As".split()},
            {"cards": R12_7[0], "ruleset": "fujian"},
        ),
    )
    assert out.status == 0, out.stderr
    assert out.lines[0]["specials"] == ["six_pairs", "three_flushes"]
    assert out.lines[1]["specials"] == []
    assert out.lines[1]["arrangement"]["back"] == ["Kd", "Qd", "Jd", "Td", "5d"]
    assert sorted(c for pile in out.lines[1]["arrangement"].values() for c in pile) == sorted(
        R12_7[0]
    )


def test_suggest_bad_input_exit_2():
    out = run(["suggest"], jsonl({"cards": ["As"] * 13}, {"cards": ["As", "Kd"]}))
    assert out.status == 2
    assert "card As appears twice" in out.lines[0]["error"]
    assert "needs 13 cards, got 2" in out.lines[1]["error"]


def test_unknown_command_exits_2_with_one_line():
    out = run(["shuffle"])
    assert out.status == 2
    assert len(out.stderr.strip().splitlines()) == 1
