"""The dispute report as data (``Report``): what an observer may see of a round's players, the
recorded verdict on every pair, pile by pile, and the fairness proof (R12). ``explain`` builds it
from the round's events; ``words`` and ``html`` word it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from domain.errors import RuleError
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Special

CLAUSE = re.compile(r"; |(?<=\.) ")  # between piles, and between sentences


def clauses(explanation: str) -> list[str]:
    """A pair's recorded explanation in parts, one pile or one sentence each.

    >>> clauses("a's front beats b's; a's back beats b's. a +2.")
    ["a's front beats b's", "a's back beats b's.", 'a +2.']
    """
    return CLAUSE.split(explanation)


class UnknownPlayer(RuleError):
    """``--player`` names someone who was not dealt into the round."""


@dataclass(frozen=True)
class Pile:
    name: str  # front, middle, back
    cards: tuple[str, ...]  # two-letter cards (R1.2), grouped for reading
    words: str  # "flush, A-high"; empty for the split of a special hand


@dataclass(frozen=True)
class PlayerView:
    player_id: str
    seat: int
    balance_at_deal: int
    submitted: bool
    escaped: bool
    escape_coins: int  # net coins of every escape in the round (R11)
    cards: tuple[str, ...] | None  # None while the round is in progress
    piles: tuple[Pile, ...] = ()
    foul_reason: str = ""  # foul at the showdown, or a foul draft of an abandoned round
    special: Special | None = None
    special_points: int = 0
    declared: str = ""
    points: int | None = None
    gross: int | None = None
    coins: int | None = None
    horse: bool = False  # holds the horse card among the cards dealt (R14.1.2), once shown

    @property
    def balance_after(self) -> int:
        return self.balance_at_deal + self.escape_coins + (self.coins or 0)

    @property
    def status(self) -> str:
        if self.escaped:
            return "escaped"
        if self.cards is None:
            return "submitted" if self.submitted else "not submitted yet"
        if self.special is not None:
            return f"special hand {self.special.id} ({self.special.chinese})"
        if self.foul_reason:
            return f"foul: {self.foul_reason}"
        return "arranged" if self.piles else "no arrangement"


@dataclass(frozen=True)
class PileOutcome:
    """One pile of a pair, for ``a``: won (+1), lost (−1) or tied (0), worth ``worth`` (R6.1)."""

    name: str
    result: int
    worth: int
    a_words: str
    b_words: str


@dataclass(frozen=True)
class PairView:
    a: str
    b: str
    points: int  # for a (R6)
    kind: str  # normal, foul, both_foul, special
    piles: tuple[PileOutcome, ...]
    scoop: int | None  # the multiplier applied (R6.2, R6.3), or None
    home_run: int | None  # the further multiplier (R6.7), or None
    scooper: str
    explanation: str
    horse: int = 1  # the horse factor (R14.1.3), applied after the scoop (R14.5.6)
    horse_holders: tuple[str, ...] = ()  # who of the two holds the horse card (R14.1.2)
    scoop_bonus: int = 0  # added to a scoop for the scooper (R14.5.2)

    @property
    def base(self) -> int:
        """The sum of the pile results before any multiplier (R6.1)."""
        return sum(p.result * p.worth for p in self.piles)

    @property
    def expected(self) -> int:
        """What the piles and multipliers give ``a``, in R14.5.6's order: the piles, the scoop
        with its bonus, the horse, the home run."""
        points = self.base
        if self.scoop:
            bonus = self.scoop_bonus if self.scooper == self.a else -self.scoop_bonus
            points = points * self.scoop + bonus
        return points * self.horse * (self.home_run or 1)

    @property
    def clauses(self) -> list[str]:
        return clauses(self.explanation)

    def other(self, player: str) -> str:
        return self.b if player == self.a else self.a

    def points_for(self, player: str) -> int:
        return self.points if player == self.a else -self.points


@dataclass(frozen=True)
class Proof:
    """R12: what was committed, what was revealed, and whether they agree. With players'
    seeds (R12.8, in seat order, those given) the deal used ``effective_client_seed``."""

    commitment: str
    published: str  # when and where the commitment was published before the deal
    client_seed: str
    server_seed: str | None
    seed_ok: bool | None
    deal_ok: bool | None
    players: int
    player_seeds: tuple[tuple[str, str], ...] = ()
    effective_client_seed: str = ""


@dataclass(frozen=True)
class Report:
    round_id: str
    table_id: str
    number: int
    phase: str  # dealt (in progress), revealed, abandoned
    dealt_at: datetime
    deadline: datetime
    ended_at: datetime | None
    base_stake: int
    ruleset: Ruleset
    players: tuple[PlayerView, ...]
    pairs: tuple[PairView, ...]
    proof: Proof
    notes: tuple[str, ...] = ()
    callers: tuple[tuple[str, str], ...] = ()  # (what was stored, the identity that called)
    undealt: tuple[str, ...] = ()  # the cards dealt to no one, once public (R14.2.4)

    @property
    def over(self) -> bool:
        return self.phase != "dealt"

    def player(self, player_id: str) -> PlayerView:
        for view in self.players:
            if view.player_id == player_id:
                return view
        known = ", ".join(p.player_id for p in self.players)
        raise UnknownPlayer(
            f"player {player_id!r} was not dealt into round {self.round_id}; its players: {known}",
            field="player",
        )

    def pairs_for(self, player: str | None) -> list[PairView]:
        """Every pair, the player's own first (in seat order of the other side)."""
        if player is None:
            return list(self.pairs)
        mine = [p for p in self.pairs if player in (p.a, p.b)]
        return mine + [p for p in self.pairs if p not in mine]
