"""Rules-engine benchmarks: evaluation speed against a naive evaluator, round scoring, and the
worst case of special detection plus suggestion."""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence

from domain.rules.cards import DECK, Card, parse_cards
from domain.rules.hands import value5
from domain.rules.play import Play
from domain.rules.ruleset import STANDARD
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


def _random_round(rng: random.Random) -> list[Seat]:
    deck = list(DECK)
    rng.shuffle(deck)
    return [
        Seat(f"P{k}", Play(suggest(deck[13 * k : 13 * k + 13], STANDARD).arrangement))
        for k in range(4)
    ]


def round_scoring(rng: random.Random, count: int = 300, repeat: int = 20) -> dict[str, float]:
    rounds = [_random_round(rng) for _ in range(count)]
    samples = []
    for seats in rounds:
        start = time.perf_counter()
        for _ in range(repeat):
            score_round(seats, STANDARD)
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


def special_and_suggestion(rng: random.Random, count: int = 300) -> dict[str, float]:
    hands = [parse_cards(text.split()) for text in ADVERSARIAL]
    hands += [tuple(rng.sample(DECK, 13)) for _ in range(count)]
    samples = []
    for hand in hands:  # the slowest hand, each timed at its best of 3 so a busy machine's
        runs = []  # pauses are not taken for the hand's own cost
        for _ in range(3):
            start = time.perf_counter()
            suggest(hand, STANDARD)  # lists the qualifying specials too
            runs.append((time.perf_counter() - start) * 1e3)
        samples.append(min(runs))
    return {"worst_ms": max(samples), "median_ms": statistics.median(samples)}


def _p99(samples: list[float]) -> float:
    return sorted(samples)[int(0.99 * (len(samples) - 1))]


def report() -> list[str]:
    rng = random.Random(13)
    ev = evaluation(rng)
    sc = round_scoring(rng)
    sp = special_and_suggestion(rng)
    return [
        "rules engine",
        f"  5-card evaluations/s   engine {ev['engine']:>12,.0f}   naive (sort+Counter) "
        f"{ev['naive']:>10,.0f}   ratio {ev['ratio']:5.1f}x   (target >= 10x)",
        f"  score a 4-player round median {sc['median_us']:7.1f} us   p99 {sc['p99_us']:7.1f} us"
        "   (target median <= 100 us)",
        f"  specials + suggestion  worst {sp['worst_ms']:7.2f} ms   "
        f"median {sp['median_ms']:6.2f} ms   over {len(ADVERSARIAL)} adversarial + 300 random "
        "hands (target worst <= 20 ms)",
    ]
