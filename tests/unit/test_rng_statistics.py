"""The RNG kit's statistics (``domain.fairness.statistics``) on the words and deals of R12.3–R12.5:
the distributions are right, a fair generator passes, and each test fails a generator with the
defect it is there to catch. Every sample comes from fixed seeds, so each run is the same."""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Callable, Iterator
from math import exp, fsum, lgamma, log
from statistics import fmean

import pytest

from domain.fairness import shuffle
from domain.fairness.distributions import (
    ALPHA,
    chi_square_critical,
    chi_square_sf,
    runs_distribution,
    wald_wolfowitz,
)
from domain.fairness.shuffle import deal, words
from domain.fairness.statistics import (
    Histogram,
    Outcome,
    Table,
    card_position,
    dealt_runs,
    dealt_serial,
    deck_tests,
    word_frequency,
    word_runs,
    word_serial,
    word_tests,
)

DEALS = 1_000


def _q_even(x: float, df: int) -> float:
    """Chi-square's upper tail for even df in closed form: a Poisson sum."""
    y = x / 2
    return fsum(exp(i * log(y) - y - lgamma(i + 1)) for i in range(df // 2))


@pytest.mark.parametrize("df", [2, 10, 256, 2600])
@pytest.mark.parametrize("share", [0.5, 0.9, 1.0, 1.1, 1.3])
def test_chi_square_tail_matches_the_closed_form(df: int, share: float) -> None:
    x = df * share
    assert chi_square_sf(x, df) == pytest.approx(_q_even(x, df), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize(
    ("df", "quantile"),
    [(1, 6.634897), (2, 9.210340), (10, 23.209251), (51, 77.385962), (100, 135.806723)],
)
def test_chi_square_critical_values_match_published_tables(df: int, quantile: float) -> None:
    assert chi_square_critical(df) == pytest.approx(quantile, rel=1e-6)
    assert chi_square_sf(chi_square_critical(df), df) == pytest.approx(ALPHA, rel=1e-8)


def _permutations(rng: random.Random, size: int, count: int) -> list[list[int]]:
    decks = []
    for _ in range(count):
        deck = list(range(size))
        rng.shuffle(deck)
        decks.append(deck)
    return decks


def test_card_position_statistic_has_its_chi_square_mean_for_uniform_permutations() -> None:
    """Both margins fixed: X² · (n − 1)/n has mean (n − 1)², where X² alone has n(n − 1)."""
    rng = random.Random(7)
    size = 6
    statistics = [card_position(_permutations(rng, size, 60), size).statistic for _ in range(400)]
    assert fmean(statistics) == pytest.approx((size - 1) ** 2, abs=1.5)


def _production_deals(count: int, salt: bytes = b"") -> tuple[list[list[int]], list[int]]:
    """``count`` deals through ``domain.fairness.shuffle.deal`` from fixed seeds, and their
    words."""
    decks: list[list[int]] = []  # a Card is its deck position, an int
    drawn: list[int] = []
    for i in range(count):
        seed = hashlib.sha256(salt + i.to_bytes(8, "big")).digest()
        hands = deal(seed, f"lab-{i}", f"round-{i}", 4, drawn)
        decks.append([card for hand in hands for card in hand])
    return decks, drawn


def _failed(outcomes: list[Outcome]) -> set[str]:
    return {outcome.name for outcome in outcomes if not outcome.passed}


def test_r12_4_production_deals_pass_every_test() -> None:
    decks, drawn = _production_deals(DEALS)
    outcomes = deck_tests(decks) + word_tests(drawn)
    assert len(outcomes) == 6
    assert _failed(outcomes) == set(), [(o.name, o.p_value) for o in outcomes]


def test_r12_4_drawn_records_every_word_the_shuffle_draws_in_order() -> None:
    seed = bytes(range(32))
    drawn: list[int] = []
    assert deal(seed, "c", "r", 4, drawn) == deal(seed, "c", "r", 4)
    stream = words(seed, "c", "r")
    assert drawn == [next(stream) for _ in range(51)]  # one per swap: nothing rejected here


def test_r12_4_drawn_includes_the_words_rejection_sampling_discards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2^32 mod 52 = 4, so the first swap (n = 52) rejects any word from 2^32 − 4 up
    fair = words(bytes(32), "c", "r")
    monkeypatch.setattr(shuffle, "words", lambda *_: itertools.chain([2**32 - 1], fair))
    drawn: list[int] = []
    deck = shuffle.shuffled_deck(bytes(32), "c", "r", drawn)
    assert len(drawn) == 52 and drawn[0] == 2**32 - 1
    assert sorted(deck) == list(range(52))


def _biased_words(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[Iterator[int]], Iterator[int]]
) -> None:
    """Give the production shuffle a defective stream in place of R12.3's."""
    fair = shuffle.words
    monkeypatch.setattr(shuffle, "words", lambda *seeds: change(fair(*seeds)))


def test_a_stuck_low_bit_fails_the_card_position_frequency(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With bit 0 stuck at 1, j = word mod n is odd for every even n."""
    _biased_words(monkeypatch, lambda stream: (word | 1 for word in stream))
    decks, _ = _production_deals(DEALS)
    assert "frequency: card × position" in _failed(deck_tests(decks))


def test_a_modulo_bias_fails_the_card_position_frequency(monkeypatch: pytest.MonkeyPatch) -> None:
    """8-bit words slip under R12.4's rejection limit, which assumes 32-bit ones, so j = word
    mod n is biased (256 mod 52 = 48: j < 48 is 5/4 as likely as j ≥ 48). A subtle bias: 1,000
    deals show it at p ≈ 0.04, 3,000 at p < 1e-6 (the full run deals about 20,000)."""
    _biased_words(monkeypatch, lambda stream: (word >> 24 for word in stream))
    decks, _ = _production_deals(3 * DEALS)
    assert "frequency: card × position" in _failed(deck_tests(decks))


def test_a_stuck_top_bit_fails_the_frequency_of_raw_words() -> None:
    _, drawn = _production_deals(DEALS)
    stuck = [word & 0x7FFF_FFFF for word in drawn]
    assert not word_frequency(stuck).passed
    assert word_frequency(drawn).passed


def test_correlated_words_fail_the_runs_and_serial_correlation_of_raw_words() -> None:
    """Each word the previous plus a step below 2^28: they drift, so they clump and correlate."""
    rng = random.Random(3)
    walk, word = [], 0
    for _ in range(50_000):
        word = (word + rng.getrandbits(28)) % 2**32
        walk.append(word)
    assert _failed(word_tests(walk)) >= {
        "runs: raw words above and below the median",
        "serial correlation: raw words, lag 1",
    }


def test_alternating_words_fail_the_runs_test() -> None:
    rng = random.Random(4)
    alternating = [rng.getrandbits(31) + (2**31 if i % 2 else 0) for i in range(50_000)]
    outcome = word_runs(alternating)
    assert not outcome.passed and outcome.statistic > 0  # too many runs
    assert word_serial(alternating).statistic < 0


def _sattolo(rng: random.Random) -> list[int]:
    """Fisher–Yates with j drawn below i instead of up to i: no card stays put."""
    deck = list(range(52))
    for i in range(51, 0, -1):
        j = rng.randrange(i)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def _pairs_kept(rng: random.Random) -> list[int]:
    """Shuffles the 26 pairs of the canonical deck, each pair staying together (2c 2d, 2h 2s…)."""
    pairs = [[2 * k, 2 * k + 1] for k in range(26)]
    rng.shuffle(pairs)
    return [card for pair in pairs for card in pair]


def test_sattolos_shuffle_fails_the_card_position_frequency() -> None:
    rng = random.Random(5)
    assert not card_position([_sattolo(rng) for _ in range(DEALS)]).passed


def test_cards_dealt_in_pairs_fail_the_runs_and_serial_correlation_of_dealt_cards() -> None:
    rng = random.Random(6)
    decks = [_pairs_kept(rng) for _ in range(DEALS)]
    runs, serial = dealt_runs(decks), dealt_serial(decks)
    assert not runs.passed and runs.statistic < 0  # too few runs: pairs are both low or high
    assert not serial.passed and serial.statistic > 0


def test_too_few_deals_or_words_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 260 deals"):
        card_position(_permutations(random.Random(1), 52, 259))
    with pytest.raises(ValueError, match="at least 1280"):
        word_frequency(list(range(1279)))


def test_a_generator_that_never_varies_fails_every_test_instead_of_crashing() -> None:
    """Found by the issue 12 attack: one deal repeated, or one word repeated, divided by zero
    (a traceback) in the very tests meant to catch such a generator."""
    one_deal = list(range(52))
    assert not dealt_serial([one_deal] * 300).passed
    constant = [7] * 5_000
    assert not word_runs(constant).passed
    assert not word_serial(constant).passed


@pytest.mark.parametrize(("low", "high"), [(1, 1), (2, 5), (26, 26), (7, 3)])
def test_the_exact_runs_distribution_has_wald_and_wolfowitz_mean_and_variance(
    low: int, high: int
) -> None:
    odds = runs_distribution(low, high)
    mean, variance = wald_wolfowitz(low, high)
    assert fsum(odds.values()) == pytest.approx(1, abs=1e-12)
    assert fsum(r * p for r, p in odds.items()) == pytest.approx(mean, rel=1e-12)
    assert fsum((r - mean) ** 2 * p for r, p in odds.items()) == pytest.approx(variance, rel=1e-9)


def test_r12_4_the_card_position_table_is_what_was_dealt() -> None:
    decks = _permutations(random.Random(11), 52, 300)
    table = card_position(decks).figure
    assert isinstance(table, Table) and table.expected == 300 / 52
    assert table.counts[13 * 52 + decks[0][13]] >= 1  # position 13 held deal 0's 14th card
    for k in range(52):  # one card per position and one position per card, every deal
        assert sum(table.counts[k * 52 : (k + 1) * 52]) == 300
        assert sum(table.counts[k::52]) == 300


def test_the_runs_histograms_count_the_runs_the_tests_judged() -> None:
    decks = _permutations(random.Random(12), 52, 400)
    runs = dealt_runs(decks)
    figure = runs.figure
    assert isinstance(figure, Histogram) and sum(figure.observed) == 400
    total = sum(r * count for r, count in zip(figure.values, figure.observed, strict=True))
    assert runs.details.startswith(f"{total:,} runs")
    assert sum(figure.expected) == pytest.approx(400)
    rng = random.Random(13)
    raw = [rng.getrandbits(32) for _ in range(3_000)]
    lengths = word_runs(raw).figure
    assert isinstance(lengths, Histogram) and lengths.values[0] == 1
    counted = sum(lengths.observed)
    assert word_runs(raw).details.startswith(f"{counted:,} runs")
    assert sum(k * c for k, c in zip(lengths.values, lengths.observed, strict=True)) == 2_999
