"""What R14's variants add to the dispute report's words (``words``): the cards with the horse
card marked (R14.1.2), the variant parameters of a ruleset, each pair's horse factor (R14.1.3)
and the grid of every pair's points with five or six players (R14.2.6). Nothing here is said of
a round under ``standard`` or ``fujian``, whose reports stay as they were.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.rules.cards import parse_card
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Special
from service.report.dispute import PairView, Report
from service.report.figures import signed


def symbols(cards: Sequence[str], horse: str | None = None) -> str:
    """``A♠ K♥``: the cards for people, in the given order, each copy of a card shown
    (R14.2.3); the ``horse`` card, when given, in brackets (R14.1.2).

    >>> symbols(["Kd", "Kd", "8h"], horse="8h")
    'K♦ K♦ [8♥]'
    """
    shown = []
    for text in cards:
        card = parse_card(text)
        shown.append(
            f"[{card.symbol()}]" if horse is not None and str(card) == horse else card.symbol()
        )
    return " ".join(shown)


def special_name(special: Special) -> str:
    """``six_of_a_kind 六六大顺``: a special hand's id and its Chinese name (R5.1, R14.4.3)."""
    return f"{special.id} {special.chinese}"


def variant_lines(ruleset: Ruleset) -> list[str]:
    """The R14 parameters a ruleset changes, in words; none for ``standard`` and ``fujian``."""
    changed = ruleset.variants()
    if not changed:
        return []
    lines = []
    if ruleset.horse_card is not None:
        both = (
            "both holders cancel"
            if ruleset.horse_both_holders == "cancel"
            else f"both holders ×{ruleset.horse_multiplier**2}"
        )
        lines.append(
            f"horse card 马牌 {ruleset.horse_card.symbol()}: its holder's pairs ×"
            f"{ruleset.horse_multiplier}, {both} (R14.1)"
        )
    if ruleset.extra_suits or ruleset.max_players != 4:
        suits = " ".join(ruleset.extra_suits) or "none"
        lines.append(
            f"up to {ruleset.max_players} players; extra suits {suits}: a deck of "
            f"{len(ruleset.deck)} cards, copies of a card are one card (R14.2)"
        )
    scoring = []
    if not ruleset.roll_over_counts_as_scoop:
        scoring.append("a scoop needs all three piles won (R14.5.1)")
    if ruleset.scoop_bonus:
        scoring.append(f"a scoop +{ruleset.scoop_bonus} (R14.5.2)")
    if ruleset.special_order == "points":
        scoring.append("between specials the one worth more wins (R14.5.3)")
    if ruleset.special_counting != "exact":
        scoring.append(f"special counting {ruleset.special_counting} (R14.4.1)")
    if not ruleset.group_kickers:
        scoring.append("groups compare without kickers (R14.3.3)")
    if ruleset.flush_pairs_first:
        scoring.append("flushes with pairs first (R14.3.4)")
    if scoring:
        lines.append("; ".join(scoring))
    extra = [s for s in ruleset.specials if s.id in {"two_fives_one_trips", "six_of_a_kind"}]
    if extra:
        lines.append(
            "extra specials: "
            + ", ".join(f"{special_name(s)} {ruleset.points_of(s)} points" for s in extra)
            + " (R14.4.3)"
        )
    return lines


def horse_words(pair: PairView) -> str:
    """The pair's horse factor and who holds the horse (R14.1.3); empty when neither does."""
    if not pair.horse_holders:
        return ""
    if len(pair.horse_holders) == 2:
        return f"horse 马 ×{pair.horse}: both hold it (R14.1.3)"
    return f"horse 马 ×{pair.horse}: {pair.horse_holders[0]} holds it (R14.1.4)"


def glance_lines(report: Report) -> list[str]:
    """With five or six players (10 or 15 pairs, R14.2.6), every pair's points in one grid:
    the row's player against the column's, and the row's total."""
    if len(report.players) <= 4 or not report.pairs:
        return []
    at_showdown = {x.a for x in report.pairs} | {x.b for x in report.pairs}
    ids = [p.player_id for p in report.players if p.player_id in at_showdown]
    points = {(x.a, x.b): x.points for x in report.pairs}
    points |= {(x.b, x.a): -x.points for x in report.pairs}
    width = max(6, *(len(i) for i in ids))
    lines = [" " * width + "".join(f"  {i:>{width}}" for i in ids) + f"  {'total':>{width}}"]
    for row in ids:
        cells = "".join(
            f"  {'·' if row == col else signed(points[(row, col)]):>{width}}" for col in ids
        )
        total = sum(points[(row, col)] for col in ids if col != row)
        lines.append(f"{row:<{width}}{cells}  {signed(total):>{width}}")
    return lines
