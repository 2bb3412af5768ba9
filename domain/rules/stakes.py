"""Seating minimums and the base stake of a round (R8).

>>> [stake_bracket(b, 48) for b in (48, 479, 480, 4799, 4800, 479999)]
[1, 1, 10, 10, 100, 1000]
"""

from __future__ import annotations

from collections.abc import Mapping

from domain.errors import StakeError
from domain.rules.ruleset import Ruleset


def stake_bracket(balance: int, seat_minimum: int) -> int:
    """R8.2: 48–479 → 1, 480–4,799 → 10, … each bracket ×10 (scaled from ``seat_minimum``)."""
    if balance < seat_minimum:
        raise StakeError(f"a balance of {balance} is below the seat minimum of {seat_minimum}")
    base = 1
    while balance >= seat_minimum * base * 10:
        base *= 10
    return base


def seat_requirement(ruleset: Ruleset) -> int:
    """R8.1, R8.3: the least balance that may sit at a table with this ruleset."""
    if ruleset.stake_policy == "fixed":
        return ruleset.seat_minimum * ruleset.base_stake
    return ruleset.seat_minimum


def check_can_sit(player_id: str, balance: int, ruleset: Ruleset) -> None:
    """R8.1: refuse a seat to a player below the requirement."""
    need = seat_requirement(ruleset)
    if balance < need:
        raise StakeError(
            f"player {player_id} has {balance} coins; this table needs at least {need} to sit down",
            field="player_id",
        )


def round_base(balances: Mapping[str, int], ruleset: Ruleset) -> int:
    """R8.3, R8.4: the base of a round about to be dealt; names every player who is short."""
    need = seat_requirement(ruleset)
    short = [f"{p} ({b})" for p, b in balances.items() if b < need]
    if short:
        raise StakeError(f"cannot deal: below the {need} coins a seat needs: {', '.join(short)}")
    if ruleset.stake_policy == "fixed":
        return ruleset.base_stake
    return stake_bracket(min(balances.values()), ruleset.seat_minimum)
