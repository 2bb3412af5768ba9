"""Upper bounds on every amount, balance, multiplier and sum, and why each one is safe.

Coins, points and positions leave the service as int64 (gRPC) and are stored in BIGINT columns
(the views); a JavaScript client reads them as doubles, exact below 2**53. Python's integers
never overflow, so without bounds a command could store a number that no view, response or
client can hold, and every later read of it would fail. A command above a bound is refused
before anything is stored: malformed input with INVALID_ARGUMENT, a deal that stored state
blocks with FAILED_PRECONDITION (``LimitReached``).

Coins. A transfer moves 1 … ``MAX_TRANSFER`` (10**12) coins. A credit may not take a balance
above ``MAX_BALANCE`` (10**15), and a deal is refused while any seated player holds more
(``domain.dealing.deal_record``). Winnings and escape shares come out of what the other players held
at the deal (R9.1, R11.1), at most 5 × MAX_BALANCE (six seats, R14.2.1), so every balance stays at
most 6 × MAX_BALANCE = 6 × 10**15 < 2**53: exact as a double and 1,500 times below 2**63.

Points and coins computed before the caps. A round's base stake is at most MAX_BALANCE: the
bracket of R8.2 and the fixed base of R8.3 both need base × seat_minimum ≤ the lowest balance
at the deal (R8.4), which is at most MAX_BALANCE. A player wins or loses at most
``MAX_ROUND_POINTS`` (2,000) points in a round: the ruleset is checked for it
(``Ruleset.max_round_points``: up to five opponents × the larger of a special hand's points and
the three piles' best worths × scoop (+ scoop bonus) × home run, both × the horse, R14). So a
gross result (R7.1) is at most 2,000 × 10**15 = 2 × 10**18 < 2**63 / 4, and an escape penalty
before its cap (R11.1) at most ``MAX_ESCAPE_MULTIPLE`` × 10**15 = 10**18. The standard and fujian
presets reach 324 points (a supreme dragon against three players), puxian 624 and puxian6 1,320
(R14.6).

Sums in the views. A player's ledger balance is a balance (≤ 6 × 10**15). The external
account is minus the coins in circulation, and each credit moves it at most 10**12 further from
zero: it takes more than 9.2 million credits of the maximum, none withdrawn, to pass 2**63.
What a player won in play (GetPlayerStats, GetLeaderboard) others lost, and no one loses more
than they were credited (play creates no coins, R7.2; no balance goes below zero, R9.1), so
that running sum is at most all coins ever credited: again more than 9.2 million maximum
credits. SQLite's SUM fails on an intermediate overflow, but it sums those legs in ledger order
(the (account, txn_id) index), so its partial sums are such running sums. Summed points grow by
at most 2,000 a round: over 4 × 10**15 rounds. Store positions and page keys stay below
``MAX_POSITION`` (2**62): at 10,000 events a second a store gets there in 14 million years.

A table opened before these limits keeps its recorded ruleset (stored events are forever); it
deals no round that could score past them (``domain.dealing.deal_record``).

"""

from __future__ import annotations

from typing import Protocol

from domain.errors import RuleError

MAX_TRANSFER = 10**12
"""Coins one credit or debit may move."""

MAX_BALANCE = 10**15
"""Coins a credit may take a wallet to, and the most a player may hold when a round is dealt."""

MAX_PLAYERS = 6
"""R14.2.1: ``max_players`` is at most six (R10.1 allowed four)."""

MAX_OPPONENTS = MAX_PLAYERS - 1
"""The most opponents a player meets in a round."""

MAX_SETTLED_BALANCE = (1 + MAX_OPPONENTS) * MAX_BALANCE
"""The most any balance reaches: MAX_BALANCE at the deal plus what five others held."""

MAX_ROUND_POINTS = 2_000
"""Points one player may win or lose in one round (R6.8), for any ruleset a table opens with."""

MAX_MULTIPLIER = 4
"""``scoop_multiplier`` and ``home_run_multiplier`` (R6.2, R6.7; their range, R14.5.5)."""

MAX_HORSE_MULTIPLIER = 4
"""``horse_multiplier`` (R14.1.1); squared when both hold the horse under ``stack``."""

MAX_SCOOP_BONUS = 3
"""``scoop_bonus`` (R14.5.2)."""

MAX_PILE_WORTH = 100
"""A pile bonus (R6.1); three piles at 100 with every multiplier at 1 stay within a round's
points against one opponent, and the round check above catches larger combinations."""

MAX_SPECIAL_POINTS = 200
"""A special hand's points (R14.5.4: 1–200)."""

MAX_ESCAPE_MULTIPLE = 1_000
"""``escape_penalty_multiple`` (R11.1): × a base of at most 10**15 stays at 10**18."""

MAX_ARRANGE_SECONDS = 86_400
"""``arrange_seconds`` (R10.2): a day. A dealt round locks its players' wallets (R10.6)."""

MAX_HOME_RUN_MIN_PLAYERS = MAX_PLAYERS
"""``home_run_min_players`` (R6.7, R14.5.5): above ``max_players`` no home run happens."""

MAX_RULESET_NAME = 64
"""Characters of a ruleset's name."""

MAX_ROUND_NUMBER = 2**31 - 1
"""Rounds per table: round numbers are int32 in table.proto."""

MAX_POSITION = 2**62
"""Store positions and page keys (BIGINT): far beyond any store."""


class LimitReached(RuleError):
    """Stored state above a limit blocks a command: a seated player holds more than
    ``MAX_BALANCE``, or a table's ruleset, recorded before the limits, exceeds them."""


class Bounded(Protocol):
    """What ``check_deal`` reads of a ruleset (``domain.rules.ruleset.Ruleset``)."""

    @property
    def max_round_points(self) -> int: ...

    @property
    def escape_penalty_multiple(self) -> int: ...


def check_deal(table_id: str, number: int, balances: dict[str, int], ruleset: Bounded) -> None:
    """The limits at a deal (``domain.dealing.deal_record``). A seated player holds at most
    ``MAX_BALANCE``, so that what the round settles (at most what the others hold, R9.1) keeps every
    balance at most 6 × MAX_BALANCE (``MAX_SETTLED_BALANCE``, six seats). A ruleset recorded
    before the limits still loads, but deals no round that could score more than they allow."""
    rich = [f"{p} ({b:,})" for p, b in balances.items() if b > MAX_BALANCE]
    if rich:
        raise LimitReached(
            f"cannot deal: {', '.join(rich)} {'holds' if len(rich) == 1 else 'hold'} more "
            f"than the {MAX_BALANCE:,} coins a seated player may hold when a round is dealt; "
            "withdraw the excess first"
        )
    problem = ""
    if ruleset.max_round_points > MAX_ROUND_POINTS:
        problem = (
            f"lets a player win or lose {ruleset.max_round_points:,} points in a round, above "
            f"the limit of {MAX_ROUND_POINTS:,}"
        )
    elif ruleset.escape_penalty_multiple > MAX_ESCAPE_MULTIPLE:
        problem = (
            f"has an escape_penalty_multiple of {ruleset.escape_penalty_multiple:,}, above the "
            f"limit of {MAX_ESCAPE_MULTIPLE:,}"
        )
    if problem:
        raise LimitReached(
            f"cannot deal at table {table_id}: its ruleset was recorded before the limits and "
            f"{problem}; open a new table"
        )
    if number > MAX_ROUND_NUMBER:
        raise LimitReached(
            f"cannot deal: table {table_id} has dealt the {MAX_ROUND_NUMBER:,} rounds a table "
            "may deal; open a new table"
        )
