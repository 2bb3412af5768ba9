"""Rules-engine benchmarks: evaluation speed against a naive evaluator, round scoring, and the
worst case of special detection plus suggestion; a six-seat ``puxian6`` round (R14) beside a
four-seat ``standard`` one."""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence

from domain.rules.cards import DECK, Card, parse_cards
from domain.rules.hands import value5
from domain.rules.play import Play
from domain.rules.ruleset import PUXIAN6, STANDARD, Ruleset
from domain.rules.scoring import Seat, score_round
from domain.rules.suggest import suggest


def naive_value(cards: Sequence[Card]) -> tuple[int, ...]:
    """The textbook evaluator: sort the ranks, count them, test flush and straight."""
    ranks = sorted((c.rank for c in cards), reverse=True)
    counts = Counter(ranks)
    flush = len({c.suit for c in cards}) == 1
    distinct = sorted(counts, reverse=True)
    straight_top = None
    if len(distinct) == 5:
        if distinct[0] - distinct[4] == 4:
            straight_top = distinct[0]
        elif distinct == [12, 3, 2, 1, 0]:
            straight_top = 3
    if straight_top is not None:
        return (8 if flush else 4, straight_top)
    grouped = sorted(counts.items(), key=lambda rc: (rc[1], rc[0]), reverse=True)
    shape = tuple(c for _, c in grouped)
    order = tuple(r for r, _ in grouped)
    if flush:
        return (5, *order)
    category = {(4, 1): 7, (3, 2): 6, (3, 1, 1): 3, (2, 2, 1): 2, (2, 1, 1, 1): 1}.get(shape, 0)
    return (category, *order)


def _rate(evaluate: Callable[[Sequence[Card]], object], hands: list[tuple[Card, ...]]) -> float:
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for hand in hands:
            evaluate(hand)
        best = max(best, len(hands) / (time.perf_counter() - start))
    return best


def evaluation(rng: random.Random, count: int = 200_000) -> dict[str, float]:
    hands = [tuple(rng.sample(DECK, 5)) for _ in range(count)]
    engine = _rate(value5, hands)
    naive = _rate(naive_value, hands)
    return {"engine": engine, "naive": naive, "ratio": engine / naive}


def _random_round(rng: random.Random, ruleset: Ruleset = STANDARD, players: int = 4) -> list[Seat]:
    deck = list(ruleset.deck)
    rng.shuffle(deck)
    hands = [tuple(deck[13 * k : 13 * k + 13]) for k in range(players)]
    return [
        Seat(f"P{k}", Play(suggest(hand, ruleset).arrangement), hand)
        for k, hand in enumerate(hands)
    ]


def round_scoring(
    rng: random.Random,
    count: int = 300,
    repeat: int = 20,
    ruleset: Ruleset = STANDARD,
    players: int = 4,
) -> dict[str, float]:
    rounds = [_random_round(rng, ruleset, players) for _ in range(count)]
    samples = []
    for seats in rounds:
        start = time.perf_counter()
        for _ in range(repeat):
            score_round(seats, ruleset)
        samples.append((time.perf_counter() - start) / repeat * 1e6)
    return {"median_us": statistics.median(samples), "p99_us": _p99(samples)}


ADVERSARIAL = [
    "2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks As",  # every pattern of one suit
    "2s 3s 4s 5s 6s 7s 8s 9s Ts Js 2h 3d 4c",  # 252 flushes, no three-flush split
    "2c 2d 2h 3c 3d 3h 4c 4d 4h 5c 5d 6h 6s",  # many overlapping straights
    "2c 2d 3h 3s 4c 4d 5h 5s 6c 6d 7h 7s 8c",  # straights and pairs everywhere
    "Ac Ad Ah As Kc Kd Kh Ks Qc Qd Qh Qs Jc",  # quads
    "2h 3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kh 2c",
]


ADVERSARIAL_COPIES = [  # R14: copies of cards under puxian6's two extra suits
    "4c 4c 4d 4d 4h 4s 9c 9c 9d 9d 9h 9s 2s",  # two six of a kinds
    "2d 2d 3d 3d 4d 4d 5d 5d 6d 6d 7d 7d 8d",  # one suit, every card twice
    "2c 2c 2d 3c 3c 3d 4c 4c 4d 5c 5c 5d 6h",  # straights, flushes and trips over copies
]


def special_and_suggestion(
    rng: random.Random, count: int = 300, ruleset: Ruleset = STANDARD
) -> dict[str, float]:
    adversarial = ADVERSARIAL if ruleset is STANDARD else ADVERSARIAL_COPIES
    hands = [parse_cards(text.split(), copies=ruleset.copies) for text in adversarial]
    hands += [tuple(rng.sample(ruleset.deck, 13)) for _ in range(count)]
    samples = []
    for hand in hands:  # the slowest hand, each timed at its best of 3 so a busy machine's
        runs = []  # pauses are not taken for the hand's own cost
        for _ in range(3):
            start = time.perf_counter()
            suggest(hand, ruleset)  # lists the qualifying specials too
            runs.append((time.perf_counter() - start) * 1e3)
        samples.append(min(runs))
    return {"worst_ms": max(samples), "median_ms": statistics.median(samples)}


def round_suggestion(
    rng: random.Random, count: int = 60, ruleset: Ruleset = STANDARD, players: int = 4
) -> dict[str, float]:
    """Specials and a suggestion for every seat of a dealt round: what a table of ``players``
    costs the helper per deal (each round at its best of 3)."""
    samples = []
    for _ in range(count):
        deck = list(ruleset.deck)
        rng.shuffle(deck)
        hands = [tuple(deck[13 * k : 13 * k + 13]) for k in range(players)]
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            for hand in hands:
                suggest(hand, ruleset)
            runs.append((time.perf_counter() - start) * 1e3)
        samples.append(min(runs))
    return {"median_ms": statistics.median(samples), "p99_ms": _p99(samples)}


def _p99(samples: list[float]) -> float:
    return sorted(samples)[int(0.99 * (len(samples) - 1))]


def report() -> list[str]:
    rng = random.Random(13)
    ev = evaluation(rng)
    sc = round_scoring(rng)
    sp = special_and_suggestion(rng)
    six = round_scoring(rng, count=100, ruleset=PUXIAN6, players=6)
    six_sp = special_and_suggestion(rng, count=100, ruleset=PUXIAN6)
    four_deal = round_suggestion(rng)
    six_deal = round_suggestion(rng, ruleset=PUXIAN6, players=6)
    return [
        "rules engine",
        f"  5-card evaluations/s   engine {ev['engine']:>12,.0f}   naive (sort+Counter) "
        f"{ev['naive']:>10,.0f}   ratio {ev['ratio']:5.1f}x   (target >= 10x)",
        f"  score a 4-player round median {sc['median_us']:7.1f} us   p99 {sc['p99_us']:7.1f} us"
        "   (target median <= 100 us)",
        f"  specials + suggestion  worst {sp['worst_ms']:7.2f} ms   "
        f"median {sp['median_ms']:6.2f} ms   over {len(ADVERSARIAL)} adversarial + 300 random "
        "hands (target worst <= 20 ms)",
        "  a 6-seat puxian6 round (R14: 78 cards, 15 pairs) beside a 4-seat standard one (6 pairs)",
        f"    {'':<38}{'4 standard':>12}{'6 puxian6':>12}{'ratio':>8}",
        _side("score the round, median us", sc["median_us"], six["median_us"], "target <= 4x"),
        _side("score the round, p99 us", sc["p99_us"], six["p99_us"]),
        _side(
            "suggest for every seat, median ms",
            four_deal["median_ms"],
            six_deal["median_ms"],
            "target <= 4x",
        ),
        _side("suggest for every seat, p99 ms", four_deal["p99_ms"], six_deal["p99_ms"]),
        _side("suggest one hand, median ms", sp["median_ms"], six_sp["median_ms"]),
        _side(
            "suggest one hand, worst ms",
            sp["worst_ms"],
            six_sp["worst_ms"],
            f"adversarial {len(ADVERSARIAL)} / {len(ADVERSARIAL_COPIES)} + random",
        ),
    ]


def _side(what: str, four: float, six: float, note: str = "") -> str:
    """One cost, the 4-seat standard round's beside the 6-seat puxian6 one's, and their
    ratio."""
    ratio = six / four if four else float("inf")
    return f"    {what:<38}{four:>12.2f}{six:>12.2f}{ratio:>7.1f}x   {note}".rstrip()
