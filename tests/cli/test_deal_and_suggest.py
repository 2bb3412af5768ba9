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


def test_r12_7_deal_reproduces_the_test_vector() -> None:
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


def test_r12_2_deal_defaults_to_an_empty_client_seed_and_deals_fewer_players() -> None:
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
            "the ruleset seats 2 to 4 players (R10.1, R14.2.1)",
        ),
        (["--server-seed", "00" * 32, "--players", "4"], "--round-id"),
    ],
)
def test_deal_bad_arguments_exit_2_with_one_line(args: list[str], message: str) -> None:
    out = run(["deal", *args])
    assert out.status == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


R12_8 = [
    "4h 9s 7h Tc Jd 7d 4s 6s 6d Kh Ad Ks Jc".split(),
    "9c Js 6h Ah 8d 2s 5h 5s Kc 8h 2c 3s 4d".split(),
    "6c 8c As 2h Qd 7s 9h 7c Jh Ts 8s 5d 3c".split(),
    "Td 5c 4c Kd 3d Qh Qs Th Ac 9d 2d Qc 3h".split(),
]
R12_8_EFFECTIVE = "client|287f2050f4f2c1fed48a9f3a58dddf46c588249981197f2e37380410bcb633c3"
VECTOR = ["deal", "--server-seed", "00" * 32, "--client-seed", "client", "--round-id", "r1"]


def test_r12_8_deal_with_player_seeds_reproduces_the_test_vector() -> None:
    """R12.8: the R12.7 inputs with seeds p0 = a, p1 = b, p3 = d (seats named p0 … p3 by
    --players, as in RULES.md), given in any order."""
    seeds = ["--player-seed", "p3=d", "--player-seed", "p0=a", "--player-seed", "p1=b"]
    out = run([*VECTOR, "--players", "4", *seeds])
    assert out.status == 0, out.stderr
    assert out.lines == [
        {
            "commitment": hashlib.sha256(bytes(32)).hexdigest(),
            "player_seeds": '[["p0","a"],["p1","b"],["p3","d"]]',
            "effective_client_seed": R12_8_EFFECTIVE,
            "hands": R12_8,
        }
    ]


def test_r12_8_deal_names_seats_by_the_rounds_player_ids() -> None:
    """R12.8: with --seat-ids the seeds are keyed by the round's player ids, in seat order;
    an empty seed is none given, so p2's empty seed changes nothing."""
    seeds = ["--player-seed", "ann=a", "--player-seed", "bo=b", "--player-seed", "dee=d"]
    out = run([*VECTOR, "--seat-ids", "ann", "bo", "cy", "dee", *seeds])
    assert out.status == 0, out.stderr
    assert out.lines[0]["seats"] == ["ann", "bo", "cy", "dee"]
    assert out.lines[0]["player_seeds"] == '[["ann","a"],["bo","b"],["dee","d"]]'
    with_empty = run([*VECTOR, "--players", "4", "--player-seed", "p2=", "--player-seed", "p0=a"])
    plain = run([*VECTOR, "--players", "4", "--player-seed", "p0=a"])
    assert with_empty.lines == plain.lines


def test_r12_8_deal_without_player_seeds_is_r12_7_unchanged() -> None:
    out = run([*VECTOR, "--seat-ids", "A", "B", "C", "D"])
    assert out.status == 0, out.stderr
    assert out.lines[0]["hands"] == R12_7
    assert "effective_client_seed" not in out.lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "4", "--player-seed", "p4=x"], "'p4' is not dealt into the round"),
        (["--seat-ids", "a", "b", "--player-seed", "p0=x"], "'p0' is not dealt into the round"),
        (["--players", "2", "--player-seed", "p0=" + "x" * 65], "at most 64 characters"),
        (["--players", "2", "--player-seed", "p0=a\tb"], "printable"),
        (["--players", "2", "--player-seed", "p0=a", "--player-seed", "p0=b"], "two seeds"),
        (["--players", "2", "--player-seed", "p0"], "PLAYER=SEED"),
        (["--player-seed", "p0=a"], "--players N or --seat-ids"),
        (["--seat-ids", "a"], "2 to 4 players (R10.1, R14.2.1), got 1"),
        (["--seat-ids", "a", "a"], "names a player twice"),
        (["--players", "3", "--seat-ids", "a", "b"], "--players 3 but --seat-ids names 2"),
    ],
)
def test_r12_8_deal_bad_player_seeds_exit_2_with_one_line(args: list[str], message: str) -> None:
    out = run([*VECTOR, *args])
    assert out.status == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stdout == ""


def test_suggest_lists_specials_and_a_non_foul_arrangement() -> None:
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


def test_suggest_bad_input_exit_2() -> None:
    out = run(["suggest"], jsonl({"cards": ["As"] * 13}, {"cards": ["As", "Kd"]}))
    assert out.status == 2
    assert "card As appears twice" in out.lines[0]["error"]
    assert "needs 13 cards, got 2" in out.lines[1]["error"]


def test_unknown_command_exits_2_with_one_line() -> None:
    out = run(["shuffle"])
    assert out.status == 2
    assert len(out.stderr.strip().splitlines()) == 1
