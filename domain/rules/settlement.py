"""Coins: gross results and the capped, zero-sum settlement (R7, R9).

>>> settle(gross([12, -6, -6], 10), [500, 30, 100])   # docs/rules.md worked example 6
[90, -30, -60]
>>> settle(gross([5, 4, -9], 10), [1000, 1000, 50])   # worked example 7
[28, 22, -50]
"""

from __future__ import annotations

from collections.abc import Sequence


def gross(points: Sequence[int], base: int) -> list[int]:
    """R7.1: total points × the round's base stake."""
    return [p * base for p in points]


def settle(gross_coins: Sequence[int], balances: Sequence[int]) -> list[int]:
    """R9: each loser pays min(loss, balance at the deal); if the losers pay less than the
    winners are owed, winners get floor(gross × paid ÷ owed) and the coins left over go one
    each to the largest remainders, ties to the earlier seat (R9.2). Sums to zero (R7.2)."""
    if len(gross_coins) != len(balances):
        raise ValueError("one balance per player is needed")
    paid_by = [min(-g, b) if g < 0 else 0 for g, b in zip(gross_coins, balances, strict=True)]
    paid = sum(paid_by)
    owed = sum(g for g in gross_coins if g > 0)
    if paid == owed:
        return [g if g > 0 else -p for g, p in zip(gross_coins, paid_by, strict=True)]
    shares = [g * paid // owed if g > 0 else 0 for g in gross_coins]
    left = paid - sum(shares)
    by_remainder = sorted(
        (i for i, g in enumerate(gross_coins) if g > 0),
        key=lambda i: (-(gross_coins[i] * paid % owed), i),
    )
    for i in by_remainder[:left]:
        shares[i] += 1
    return [s if g > 0 else -p for s, g, p in zip(shares, gross_coins, paid_by, strict=True)]
