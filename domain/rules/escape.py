"""Leaving between the deal and the showdown (R11).

>>> escape_transfers("B", ["A", "B", "C", "D"], base=1, balance_at_deal=1000,
...                  multiple=25)                      # docs/rules.md worked example 8
{'B': -25, 'C': 9, 'D': 8, 'A': 8}
"""

from __future__ import annotations

from collections.abc import Sequence


def escape_penalty(base: int, balance_at_deal: int, multiple: int) -> int:
    """R11.1: min(``escape_penalty_multiple`` × base, balance at the deal)."""
    return min(multiple * base, balance_at_deal)


def escape_transfers(
    escapee: str, active: Sequence[str], *, base: int, balance_at_deal: int, multiple: int
) -> dict[str, int]:
    """R11.1, R11.2: the escapee's penalty, shared equally by the other active players in seat
    order; coins left over go one each starting with the seat after the escapee. Sums to zero.

    ``active`` are the round's active players in seat order, the escapee among them.
    """
    if escapee not in active:
        raise ValueError(f"{escapee} is not an active player of the round")
    at = active.index(escapee)
    others = list(active[at + 1 :]) + list(active[:at])
    if not others:
        return {escapee: 0}
    penalty = escape_penalty(base, balance_at_deal, multiple)
    transfers = {escapee: -penalty}
    share, left = divmod(penalty, len(others))
    for k, player in enumerate(others):
        transfers[player] = share + (1 if k < left else 0)
    return transfers
