"""``thirteen rng collect`` and ``thirteen rng test`` (the RNG kit) through the real console
script: a short run of the tests, the collectors' formats read back and checked against the
production shuffle, exit statuses."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from pathlib import Path
from uuid import NAMESPACE_URL, uuid5

import pytest

from domain.fairness.seeds import NONCE_BYTES, derive_seed
from domain.fairness.shuffle import deal, words
from domain.rules.cards import Card, format_cards
from tests.support.cli import thirteen

KEY = "5a" * 32
SHORT = "50000"  # cards: 962 deals, a fraction of a second


def fixed_inputs(number: int) -> tuple[bytes, str, str]:
    """What ``--fixed-seed KEY`` deals as deal ``number``, as its help and the report say."""
    seed = derive_seed(bytes.fromhex(KEY), "rng-lab", number, bytes(NONCE_BYTES))
    return seed, f"lab-{number}", str(uuid5(NAMESPACE_URL, f"thirteen-rng/rng-lab/{number}"))


def verdicts(report: str) -> list[str]:
    return [
        line.rsplit(" ", 1)[1] for line in report.splitlines() if line.endswith(("PASS", "FAIL"))
    ]


def test_r12_a_short_run_with_a_fixed_seed_passes_every_test_and_says_what_it_tested(
    tmp_path: Path,
) -> None:
    out = thirteen("rng", "test", "--cards", SHORT, "--fixed-seed", KEY, "--out", tmp_path / "r")
    assert out.returncode == 0, out.stdout + out.stderr
    assert verdicts(out.stdout) == ["PASS"] * 6
    for expected in (
        "frequency: card × position",
        "runs: dealt cards, low and high",
        "serial correlation: dealt cards, lag 1",
        "frequency: raw words",
        "runs: raw words above and below the median",
        "serial correlation: raw words, lag 1",
        "962 deals (50,024 cards)",
        "with 2601 degrees of freedom",
        "2,771.72",  # chi-square's 0.99 quantile at 2601 df
        "|z| > 2.576 fails",
        "99% confidence",
        "fixed by --fixed-seed",
        "git commit",
        "RESULT: PASS, 6 of 6",
    ):
        assert expected in out.stdout
    assert (tmp_path / "r").read_text(encoding="utf-8") == out.stdout


def test_r12_a_short_run_with_fresh_seeds_reports_where_they_came_from() -> None:
    out = thirteen("rng", "test", "--cards", SHORT)
    assert out.returncode in (0, 1), out.stderr  # a fair deal fails one of six ~6% of runs
    assert "fresh, drawn as production draws them" in out.stdout
    assert len(verdicts(out.stdout)) == 6
    assert out.returncode == (1 if "FAIL" in verdicts(out.stdout) else 0)


def test_r12_3_raw_words_are_the_words_the_production_shuffle_drew(tmp_path: Path) -> None:
    text, binary = tmp_path / "words.txt", tmp_path / "words.bin"
    assert (
        thirteen("rng", "collect", "--raw", "60", "--fixed-seed", KEY, "--out", text).returncode
        == 0
    )
    assert (
        thirteen(
            "rng", "collect", "--raw", "60", "--binary", "--fixed-seed", KEY, "--out", binary
        ).returncode
        == 0
    )
    lines = text.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and "type: d" in lines and "count: 60" in lines
    collected = [int(line) for line in lines[lines.index("numbit: 32") + 1 :]]
    first, second = words(*fixed_inputs(1)), words(*fixed_inputs(2))
    expected = [next(first) for _ in range(51)] + [next(second) for _ in range(9)]
    assert collected == expected  # deal 1's 51 words, then deal 2's
    assert struct.unpack(">60I", binary.read_bytes()) == tuple(expected)


def test_r12_5_collected_deals_recompute_from_their_seeds() -> None:
    out = thirteen("rng", "collect", "--deals", "3", "--fixed-seed", KEY)
    assert out.returncode == 0, out.stderr
    assert "3 deals" in out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines() if not line.startswith("#")]
    assert len(rows) == 3
    for number, row in enumerate(rows, start=1):
        seed, client_seed, round_id = fixed_inputs(number)
        assert row[:3] == [seed.hex(), client_seed, round_id]
        assert [hand.split() for hand in row[3:]] == [
            format_cards(hand) for hand in deal(seed, client_seed, round_id, 4)
        ]


def test_fresh_collections_differ_and_say_so() -> None:
    first = thirteen("rng", "collect", "--deals", "2")
    second = thirteen("rng", "collect", "--deals", "2")
    assert first.stdout.splitlines()[-1] != second.stdout.splitlines()[-1]
    assert "secrets.token_bytes(32)" in first.stdout and "fresh" in first.stderr


def test_r12_collected_files_are_tested_again(tmp_path: Path) -> None:
    dealt, raw = tmp_path / "deals.txt", tmp_path / "raw.txt"
    assert (
        thirteen("rng", "collect", "--deals", "300", "--fixed-seed", KEY, "--out", dealt).returncode
        == 0
    )
    assert (
        thirteen("rng", "collect", "--raw", "2000", "--fixed-seed", KEY, "--out", raw).returncode
        == 0
    )
    out = thirteen("rng", "test", "--file", dealt)
    assert out.returncode == 0, out.stdout + out.stderr
    assert verdicts(out.stdout) == ["PASS"] * 3 and "300 deals" in out.stdout
    assert "file says" in out.stdout and "fixed by --fixed-seed" in out.stdout
    out = thirteen("rng", "test", "--file", raw)
    assert out.returncode == 0, out.stdout + out.stderr
    assert verdicts(out.stdout) == ["PASS"] * 3 and "raw words: 2,000" in out.stdout


def _write_deals(path: Path, decks: Sequence[Sequence[int]]) -> None:
    lines = [
        "\t".join(" ".join(format_cards(map(Card, deck[k : k + 13]))) for k in range(0, 52, 13))
        for deck in decks
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_biased_deal_fails_with_exit_status_1(tmp_path: Path) -> None:
    """Cards dealt in the pairs of the canonical deck (2c 2d, 2h 2s, …): FAIL."""
    rng = random.Random(8)
    decks = []
    for _ in range(300):
        pairs = [[2 * k, 2 * k + 1] for k in range(26)]
        rng.shuffle(pairs)
        decks.append([card for pair in pairs for card in pair])
    _write_deals(tmp_path / "biased.txt", decks)
    out = thirteen("rng", "test", "--file", tmp_path / "biased.txt")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL" in verdicts(out.stdout) and "RESULT: FAIL" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["test", "--cards", "1000"], "--cards must be from 13,520"),
        (["test", "--cards", "many"], "expected a positive whole number"),
        (["test", "--cards", "²"], "expected a positive whole number"),
        (["test", "--file", "/nonexistent/deals.txt"], "cannot read"),
        (["test", "--fixed-seed", "abc"], "64 hex digits"),
        (["test", "--file", "x", "--cards", "52000"], "not allowed with"),
        (["collect", "--deals", "2", "--binary"], "--binary is for --raw"),
        (["collect"], "one of the arguments --raw --deals is required"),
        (["collect", "--raw", "5", "--out", "/nonexistent/dir/words"], "cannot write"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(args: list[str], message: str) -> None:
    out = thirteen("rng", *args)
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("2c 2d\t3c\n", "line 1: a deal is 4 tab-separated hands"),
        ("12\n³\n", "line 2: '³' is not a 32-bit word"),
        ("type: d\ncount: 3\nnumbit: 32\n1\n2\n", "count 3, it holds 2"),
        ("12\nx\n", "line 2: 'x' is not a 32-bit word"),
        ("# only a comment\n", "holds no words or deals"),
        ("1\n2\n", "at least 1280 words"),
    ],
)
def test_a_file_that_is_not_a_collection_is_refused(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    out = thirteen("rng", "test", "--file", path)
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_a_binary_file_is_refused_with_what_to_give_instead(tmp_path: Path) -> None:
    path = tmp_path / "words.bin"
    path.write_bytes(bytes(range(256)) * 8)
    out = thirteen("rng", "test", "--file", path)
    assert out.returncode == 2 and "reads the text formats" in out.stderr
