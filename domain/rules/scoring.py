r"""The showdown: every pair compared once, with scoops, home runs, fouls and specials (R6), and
R14's variants in R14.5.6's order: piles and pile bonuses, then the scoop (R14.5.1, R14.5.2) or
the foul or special (R14.5.3), then the horse (R14.1), then the home run.

>>> from domain.rules.cards import parse_cards
>>> from domain.rules.arrangement import Arrangement
>>> from domain.rules.ruleset import STANDARD
>>> def hand(text):
...     front, middle, back = (parse_cards(p.split()) for p in text.split("|"))
...     return Play(Arrangement.of(front, middle, back))
>>> score = score_round([
...     Seat("A", hand("Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As")),
...     Seat("B", hand("Kh 7d 4c | Td Tc 6h 6c 2h | 3d 4d 5c 6d 7h"))], STANDARD)
>>> [p.points for p in score.players]
[1, -1]
>>> print(score.pairs[0].explanation.replace("; ", ";\n"))
A's front (pair, Qs) beats B's front (high card, K-high);
B's middle (two pair, Ts and 6s) beats A's middle (two pair, 9s and 5s);
A's back (flush, A-high) beats B's back (straight, 7-high). A +1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from domain.rules.arrangement import PILE_NAMES, foul_reason
from domain.rules.cards import Card
from domain.rules.hands import PileOrder, category_of, describe, describe_both
from domain.rules.play import Play
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Special

FOUL = "foul"
"""How a pile of a foul side is worded: it is not compared (R6.3, R6.4)."""


@dataclass(frozen=True)
class Seat:
    """An active player (R10.1) in seat order with what they bring to the showdown, and the 13
    cards dealt to them: who holds the horse (R14.1.2) is read from these, or, when they are not
    given, from the cards the play places."""

    player_id: str
    play: Play
    cards: tuple[Card, ...] | None = None

    def dealt(self) -> tuple[Card, ...] | None:
        if self.cards is not None:
            return self.cards
        if self.play.arrangement is not None:
            return self.play.arrangement.cards
        if self.play.split is not None:
            return self.play.split.cards
        return None


class PileScore(NamedTuple):
    """One pile of a pair, for ``a`` (R6.1): won (+1), lost (−1) or tied (0); ``worth`` is what
    the winning pile earns (0 for a tie, R6.1 pile bonuses included); each side's pile in
    words, ``"foul"`` for a foul side (R6.3, R6.4)."""

    result: int
    worth: int
    a_words: str
    b_words: str


@dataclass(frozen=True)
class PairScore:
    """One pairwise comparison (R6). ``points`` are for ``a``; ``pile_scores`` front, middle,
    back for ``a`` (empty when a special hand decided the pair); ``scoop`` and ``home_run``
    hold whichever side earned them."""

    a: str
    b: str
    points: int
    pile_scores: tuple[PileScore, ...]
    scoop: bool
    home_run: bool
    explanation: str

    @property
    def piles(self) -> tuple[int, ...]:
        """+1/−1/0 for ``a`` per pile."""
        return tuple(p.result for p in self.pile_scores)


@dataclass(frozen=True)
class PlayerScore:
    """R6.8: a player's round total, with whether they fouled (R4.3) or played a special."""

    player_id: str
    points: int
    foul: bool
    special: Special | None
    foul_reason: str | None = None


@dataclass(frozen=True)
class RoundScore:
    players: tuple[PlayerScore, ...]
    pairs: tuple[PairScore, ...]

    @property
    def points(self) -> list[int]:
        return [p.points for p in self.players]


@dataclass(frozen=True)
class _Entry:
    name: str
    play: Play
    values: tuple[int, int, int] | None  # None for a special or a missing arrangement
    foul: str | None  # why the player is foul, or None
    horse: bool = False  # holds the horse card (R14.1.2)


@dataclass
class _Pair:
    i: int
    j: int
    points: int  # for i, before any home-run multiplier
    piles: tuple[PileScore, ...]
    scooper: int | None  # the seat that scooped the other, if any
    sentences: list[str]


def _entry(seat: Seat, order: PileOrder, ruleset: Ruleset) -> _Entry:
    play = seat.play
    horse = False
    if ruleset.horse_card is not None:  # R14.1.2: from the dealt cards, whatever the play
        cards = seat.dealt()
        if cards is None:
            raise ValueError(
                f"R14.1.2: {seat.player_id}'s dealt cards are needed to know who holds the horse"
            )
        horse = ruleset.holds_horse(cards)
    if play.special is not None:
        return _Entry(seat.player_id, play, None, None, horse)
    if play.arrangement is None:
        return _Entry(seat.player_id, play, None, "no arrangement", horse)  # R4.3
    values = play.arrangement.values(order)
    return _Entry(seat.player_id, play, values, foul_reason(*values), horse)


def _special_pair(x: _Entry, y: _Entry, ruleset: Ruleset) -> tuple[int, str]:
    """R6.5, R6.6: points for x when at least one side plays a special hand; R14.5.3: under
    ``special_order = points`` the special worth more wins, equal points tie."""
    sx, sy = x.play.special, y.play.special
    if sx is not None and sy is not None:
        if sx is sy:
            return 0, f"{x.name} and {y.name} both hold {sx.id} ({sx.chinese}): a tie."
        if ruleset.special_order == "points":
            px, py = ruleset.points_of(sx), ruleset.points_of(sy)
            if px == py:
                return 0, (
                    f"{x.name}'s {sx.id} ({sx.chinese}) and {y.name}'s {sy.id} ({sy.chinese}) "
                    f"are worth the same {px} points: a tie."
                )
            x_wins = px > py
        else:
            x_wins = sx.beats(sy)
        if x_wins:
            return ruleset.points_of(sx), (
                f"{x.name}'s {sx.id} ({sx.chinese}) outranks {y.name}'s {sy.id} ({sy.chinese})."
            )
        return -ruleset.points_of(sy), (
            f"{y.name}'s {sy.id} ({sy.chinese}) outranks {x.name}'s {sx.id} ({sx.chinese})."
        )
    if sx is not None:
        return ruleset.points_of(sx), (
            f"{x.name}'s special hand {sx.id} ({sx.chinese}) beats "
            f"{y.name}'s {'foul ' if y.foul else ''}hand."
        )
    assert sy is not None
    return -ruleset.points_of(sy), (
        f"{y.name}'s special hand {sy.id} ({sy.chinese}) beats "
        f"{x.name}'s {'foul ' if x.foul else ''}hand."
    )


def _compare(i: int, j: int, x: _Entry, y: _Entry, ruleset: Ruleset) -> _Pair:
    """One pair before the home-run multiplier: piles compared (R6.1), scoop and roll-over (R6.2;
    R14.5.1–2), one side foul (R6.3) or both (R6.4), a special (R6.5, R6.6: ``_special_pair``)."""
    if x.play.is_special or y.play.is_special:
        points, sentence = _special_pair(x, y, ruleset)
        return _Pair(i, j, points, (), None, [sentence])
    if x.foul and y.foul:  # R6.4
        neither = (PileScore(0, 0, FOUL, FOUL),) * 3
        return _Pair(i, j, 0, neither, None, [f"{x.name} and {y.name} both fouled: no points."])
    if x.foul or y.foul:  # R6.3
        winner, loser, sign = (y, x, -1) if x.foul else (x, y, 1)
        assert winner.values is not None
        worths = [ruleset.pile_worth(k, category_of(v)) for k, v in enumerate(winner.values)]
        points = sum(worths) * ruleset.scoop_multiplier + ruleset.scoop_bonus  # R14.5.2
        sentence = (
            f"{loser.name} is foul ({loser.foul}), so {winner.name} wins all three "
            f"piles ({'+'.join(map(str, worths))}) and scoops "
            f"×{ruleset.scoop_multiplier}{_bonus(ruleset)}."
        )
        scores = tuple(
            PileScore(sign, worth, *((describe(v), FOUL) if sign > 0 else (FOUL, describe(v))))
            for worth, v in zip(worths, winner.values, strict=True)
        )
        return _Pair(i, j, sign * points, scores, i if sign > 0 else j, [sentence])
    assert x.values is not None and y.values is not None
    piles: list[PileScore] = []
    won, lost, sentences = 0, 0, []
    for k, (vx, vy) in enumerate(zip(x.values, y.values, strict=True)):  # R6.1
        pile = PILE_NAMES[k]
        words = describe_both(vx, vy, front=pile == "front")
        if vx > vy:
            worth = ruleset.pile_worth(k, category_of(vx))
            won += worth
            piles.append(PileScore(1, worth, *words))
            sentences.append(_beats(x.name, y.name, pile, words, worth))
        elif vy > vx:
            worth = ruleset.pile_worth(k, category_of(vy))
            lost += worth
            piles.append(PileScore(-1, worth, *words))
            sentences.append(_beats(y.name, x.name, pile, words[::-1], worth))
        else:
            piles.append(PileScore(0, 0, *words))
            sentences.append(f"{x.name}'s {pile} ties {y.name}'s ({words[0]})")
    points, scooper = won - lost, None
    results = [p.result for p in piles]
    wins, losses = results.count(1), results.count(-1)
    # R6.2: won some and lost none, roll-over included; R14.5.1: or all three won only
    scoop = bool(wins) != bool(losses)
    if not ruleset.roll_over_counts_as_scoop:
        scoop = 3 in (wins, losses)
    if scoop:
        points = points * ruleset.scoop_multiplier + (
            ruleset.scoop_bonus if wins else -ruleset.scoop_bonus
        )
        scooper = i if wins else j
    text = "; ".join(sentences) + "."
    if scooper is not None:
        scooping, scooped = (x.name, y.name) if scooper == i else (y.name, x.name)
        text += f" {scooping} scoops {scooped} ×{ruleset.scoop_multiplier}{_bonus(ruleset)}."
    return _Pair(i, j, points, tuple(piles), scooper, [text])


def _bonus(ruleset: Ruleset) -> str:
    return f" +{ruleset.scoop_bonus}" if ruleset.scoop_bonus else ""


def _horse(pair: _Pair, x: _Entry, y: _Entry, ruleset: Ruleset) -> None:
    """R14.1.3, R14.1.4: the pair's points × its horse factor; the scoop stays (R14.1.5)."""
    factor = ruleset.horse_factor(x.horse, y.horse)
    if factor == 1 and not (x.horse and y.horse):
        return
    pair.points *= factor
    holders = " and ".join(e.name for e in (x, y) if e.horse)
    holds = "hold" if x.horse and y.horse else "holds"
    horse = f"{holders} {holds} the horse {ruleset.horse_card}"
    if factor == 1:
        pair.sentences.append(f"{horse}: they cancel.")
    else:
        pair.sentences.append(f"{horse}: ×{factor}.")


def _beats(winner: str, loser: str, pile: str, words: tuple[str, str], worth: int) -> str:
    """``words``: the winner's pile, then the loser's, each described against the other."""
    bonus = f" (worth {worth})" if worth != 1 else ""
    return f"{winner}'s {pile} ({words[0]}) beats {loser}'s {pile} ({words[1]}){bonus}"


def _home_runners(entries: Sequence[_Entry], pairs: Sequence[_Pair], ruleset: Ruleset) -> set[int]:
    """R6.7: seats that scooped every other active player, with enough players at the table."""
    if len(entries) < ruleset.home_run_min_players:
        return set()
    runners = set()
    for seat in range(len(entries)):
        mine = [p for p in pairs if seat in (p.i, p.j)]
        if all(
            p.scooper == seat
            and (ruleset.foul_counts_for_home_run or not entries[p.j if p.i == seat else p.i].foul)
            for p in mine
        ):
            runners.add(seat)
    return runners


def score_round(seats: Sequence[Seat], ruleset: Ruleset) -> RoundScore:
    """R6: compare every pair of active players once (R14.2.6: 10 or 15 pairs with five or
    six); totals sum to zero (R6.8, R14.1.4)."""
    order = ruleset.pile_order
    entries = [_entry(seat, order, ruleset) for seat in seats]
    pairs = [
        _compare(i, j, entries[i], entries[j], ruleset)
        for i in range(len(entries))
        for j in range(i + 1, len(entries))
    ]
    for pair in pairs:
        _horse(pair, entries[pair.i], entries[pair.j], ruleset)
    runners = _home_runners(entries, pairs, ruleset)
    totals = [0] * len(entries)
    results = []
    for pair in pairs:
        home_run = pair.scooper in runners
        if home_run:
            pair.points *= ruleset.home_run_multiplier
            runner = entries[pair.scooper].name  # type: ignore[index]
            pair.sentences.append(f"{runner}'s home run ×{ruleset.home_run_multiplier}.")
        totals[pair.i] += pair.points
        totals[pair.j] -= pair.points
        x, y = entries[pair.i].name, entries[pair.j].name
        if pair.points:
            leader, points = (x, pair.points) if pair.points > 0 else (y, -pair.points)
            pair.sentences.append(f"{leader} +{points}.")
        results.append(
            PairScore(
                x,
                y,
                pair.points,
                pair.piles,
                pair.scooper is not None,
                home_run,
                " ".join(pair.sentences),
            )
        )
    players = tuple(
        PlayerScore(e.name, totals[k], e.foul is not None, e.play.special, e.foul)
        for k, e in enumerate(entries)
    )
    return RoundScore(players, tuple(results))
