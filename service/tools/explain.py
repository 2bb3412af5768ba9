"""``thirteen explain``: a round's dispute report for people ("my hand was better").

Everything comes from the round's own events, rebuilt as the service rebuilds them, and from the
domain's own judgement: the result and every pile of every pair as the reveal recorded them
(``Round.revealed_outcome``), the fairness proof (``domain.fairness``) and what an observer may
see (``domain.visibility``). This module words them; it does not score again (only the audit
does, and compares). Until a round is over (R10.4) the report holds only what is public — who
sits where, who has submitted, escapes and the commitment — and never a card.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain import visibility
from domain.arrangement import PILE_NAMES
from domain.cards import by_strength, format_cards, parse_cards
from domain.errors import RuleError
from domain.fairness import prove
from domain.hands import describe, value3, value5
from domain.ids import table_uuid
from domain.results import PlayerResult, round_result
from domain.round import Round
from domain.ruleset import Ruleset
from domain.scoring import PairScore
from domain.settlement import gross
from domain.specials import Special
from domain.table import Table
from service.application import Thirteen
from service.evidence import Decoder, record_of
from service.tools.replay import fold, phase, round_events

CLAUSE = re.compile(r"; |(?<=\.) ")
"""Where the domain's pair explanation divides: between piles, and between sentences."""


class UnknownPlayer(RuleError):
    """``--player`` names someone who was not dealt into the round."""


# --- the report as data -----------------------------------------------------------------------


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

    @property
    def base(self) -> int:
        """The sum of the pile results before any multiplier (R6.1)."""
        return sum(p.result * p.worth for p in self.piles)

    @property
    def clauses(self) -> list[str]:
        return CLAUSE.split(self.explanation)

    def other(self, player: str) -> str:
        return self.b if player == self.a else self.a

    def points_for(self, player: str) -> int:
        return self.points if player == self.a else -self.points


@dataclass(frozen=True)
class Proof:
    """R12: what was committed, what was revealed, and whether they agree."""

    commitment: str
    published: str  # when and where the commitment was published before the deal
    client_seed: str
    server_seed: str | None
    seed_ok: bool | None
    deal_ok: bool | None
    players: int


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


# --- building it from the store ---------------------------------------------------------------


def load(app: Thirteen, round_id: str) -> Report:
    """The report of a stored round; raises ``NotFound`` for an unknown round."""
    events = [event for _, event in round_events(app, round_id)]
    round_ = fold(events)
    return build(round_, _publication(app, round_))


def _publication(app: Thirteen, round_: Round) -> str:
    """Where the table published the round's commitment, before the deal (R12.1). The table's
    events also hold its unrevealed next seed: only the commitment and time are read here."""
    decoder = Decoder()
    for stored in app.recorder.select_events(table_uuid(round_.table_id)):
        event = decoder.event(record_of(0, stored))
        if getattr(event, "commitment", None) != round_.commitment:
            continue
        when = "when the table opened"
        if isinstance(event, Table.RoundEnded):
            when = f"when round {event.round_id} ended"
        before = "before" if event.at <= round_.dealt_at else "AFTER"
        return (
            f"published {event.at.isoformat()} {when}, {before} the deal at "
            f"{round_.dealt_at.isoformat()}"
        )
    return "NOT FOUND among the table's published commitments"


def _grouped(cards: Sequence[str]) -> tuple[str, ...]:
    """A pile for reading: sets first (trips, pairs), then high to low."""
    parsed = parse_cards(cards)
    counts = Counter(c.rank for c in parsed)
    ordered = sorted(parsed, key=lambda c: (counts[c.rank], c.rank, c.suit), reverse=True)
    return tuple(format_cards(ordered))


def _piles(
    front: Sequence[str], middle: Sequence[str], back: Sequence[str], wheel: str, words: bool
) -> tuple[Pile, ...]:
    if not front:
        return ()
    values = (
        value3(parse_cards(front)),
        value5(parse_cards(middle), wheel),
        value5(parse_cards(back), wheel),
    )
    return tuple(
        Pile(name, _grouped(cards), describe(value) if words else "")
        for name, cards, value in zip(PILE_NAMES, (front, middle, back), values, strict=True)
    )


def _hand(round_: Round, player: str) -> tuple[str, ...]:
    return tuple(format_cards(by_strength(round_.hand(player))))


def _player(
    round_: Round, seat: int, player: str, result: PlayerResult | None, shown: bool
) -> PlayerView:
    """A player as an observer sees them: cards and submission only when ``shown``."""
    ruleset = round_.ruleset
    common: dict[str, Any] = {
        "player_id": player,
        "seat": seat,
        "balance_at_deal": round_.balances[player],
        "submitted": player in round_.submissions,
        "escaped": player in round_.escaped,
        "escape_coins": sum(t.get(player, 0) for t in round_.escaped.values()),
    }
    if not shown:
        return PlayerView(cards=None, **common)
    cards = _hand(round_, player)
    if result is not None:  # a player at the showdown
        special = Special.from_id(result.special) if result.special else None
        return PlayerView(
            cards=cards,
            piles=_piles(result.front, result.middle, result.back, ruleset.wheel, not special),
            foul_reason=result.foul_reason,
            special=special,
            special_points=ruleset.points_of(special) if special else 0,
            declared=str(round_.submissions.get(player, {}).get("declared", "")),
            points=round_.points.get(player, result.points),
            gross=gross([round_.points.get(player, result.points)], round_.base_stake)[0],
            coins=round_.coins.get(player, result.coins),
            **common,
        )
    submission = round_.submissions.get(player, {})  # an escapee, or an abandoned round
    special_id = submission.get("special")
    return PlayerView(
        cards=cards,
        piles=_piles(
            submission.get("front", ()),
            submission.get("middle", ()),
            submission.get("back", ()),
            ruleset.wheel,
            not special_id,
        ),
        foul_reason=str(submission.get("foul_reason") or ""),
        special=Special.from_id(special_id) if special_id else None,
        special_points=ruleset.points_of(Special.from_id(special_id)) if special_id else 0,
        declared=str(submission.get("declared", "")),
        **common,
    )


def _pair(round_: Round, pair: PairScore, views: dict[str, PlayerView]) -> PairView:
    """The recorded verdict on one pair, with each pile's result, worth (R6.1) and words as
    the scorer gave them, and the multipliers."""
    ruleset = round_.ruleset
    a, b = views[pair.a], views[pair.b]
    scooper = ""
    if pair.scoop:
        scooper = pair.a if pair.points > 0 else pair.b
    common: dict[str, Any] = {
        "a": pair.a,
        "b": pair.b,
        "points": pair.points,
        "scoop": ruleset.scoop_multiplier if pair.scoop else None,
        "home_run": ruleset.home_run_multiplier if pair.home_run else None,
        "scooper": scooper,
        "explanation": pair.explanation,
    }
    if a.special or b.special:
        return PairView(kind="special", piles=(), **common)
    if a.foul_reason and b.foul_reason:
        return PairView(kind="both_foul", piles=(), **common)
    piles = tuple(
        PileOutcome(name, pile.result, pile.worth, pile.a_words, pile.b_words)
        for name, pile in zip(PILE_NAMES, pair.pile_scores, strict=True)
    )
    return PairView(
        kind="foul" if a.foul_reason or b.foul_reason else "normal", piles=piles, **common
    )


def build(round_: Round, published: str = "") -> Report:
    """The report of a round as it stands (in progress, revealed or abandoned)."""
    shown = visibility.is_public(round_)  # the report is an observer's
    results: dict[str, PlayerResult] = {}
    pairs: tuple[PairScore, ...] = ()
    notes: list[str] = []
    outcome = round_.revealed_outcome()
    if outcome is not None:
        results = {p.player_id: p for p in round_result(round_, outcome).players}
        pairs = outcome.score.pairs
    views = {
        p: _player(round_, seat, p, results.get(p), shown) for seat, p in enumerate(round_.players)
    }
    pair_views = tuple(_pair(round_, p, views) for p in pairs)
    for view in pair_views:
        if view.kind in ("normal", "foul"):
            expected = view.base * (view.scoop or 1) * (view.home_run or 1)
            if expected != view.points:
                notes.append(
                    f"{view.a} vs {view.b}: the piles and multipliers give {expected:+d}, "
                    f"the showdown {view.points:+d}"
                )
    seed = round_.server_seed
    seed_ok = deal_ok = None
    if seed is not None:
        hands = [round_.hands[p] for p in round_.players]
        fair = prove(seed, round_.commitment, round_.client_seed, round_.round_id, hands)
        seed_ok, deal_ok = fair.seed_matches, fair.hands_match
    proof = Proof(
        round_.commitment,
        published,
        round_.client_seed,
        seed,
        seed_ok,
        deal_ok,
        len(round_.players),
    )
    return Report(
        round_id=round_.round_id,
        table_id=round_.table_id,
        number=round_.number,
        phase=phase(round_),
        dealt_at=round_.dealt_at,
        deadline=round_.deadline,
        ended_at=round_.ended_at,
        base_stake=round_.base_stake,
        ruleset=round_.ruleset,
        players=tuple(views.values()),
        pairs=pair_views,
        proof=proof,
        notes=tuple(notes),
    )


# --- words shared by the text and the HTML ----------------------------------------------------


def signed(value: int) -> str:
    return f"{value:+d}" if value else "0"


def symbols(cards: Sequence[str]) -> str:
    """``A♠ K♥``: the cards for people, in the given order."""
    return " ".join(c.symbol() for c in parse_cards(cards))


def ruleset_lines(ruleset: Ruleset) -> list[str]:
    """The R13 parameters that shape a showdown and its settlement, in words."""
    bonuses = (
        "; ".join(
            f"{pile} " + ", ".join(f"{c.words} {w}" for c, w in table)
            for pile, table in ruleset.pile_bonuses
        )
        or "none (every pile is worth 1)"
    )
    foul = "counts" if ruleset.foul_counts_for_home_run else "does not count"
    return [
        f"scoop ×{ruleset.scoop_multiplier} (R6.2); home run ×{ruleset.home_run_multiplier} more "
        f"at {ruleset.home_run_min_players}+ active players, scooping a foul {foul} (R6.7)",
        f"pile bonuses (R6.1): {bonuses}",
        f"A-2-3-4-5 ranks {ruleset.wheel} among straights (R2.3); escape penalty "
        f"{ruleset.escape_penalty_multiple} × base (R11.1); {ruleset.arrange_seconds} s to arrange",
    ]


def phase_words(report: Report) -> str:
    if report.phase == "revealed":
        return f"revealed {report.ended_at.isoformat() if report.ended_at else ''}"
    if report.phase == "abandoned":
        return (
            f"ended {report.ended_at.isoformat() if report.ended_at else ''} without a "
            "showdown: fewer than two players remained (R11.3)"
        )
    return (
        "NOT REVEALED YET: the round is in progress, so only what is public is shown; "
        "no player's cards are shown before the round is over"
    )


def multiplier_words(pair: PairView) -> str:
    """``(+1 +1 +1) = +3, scoop ×2, home run ×2 = +12`` for ``a``; specials take none."""
    if pair.kind == "special":
        return "none: a special hand scores its fixed points (R6.5, R6.6)"
    if pair.kind == "both_foul":
        return "both foul: 0 (R6.4)"
    terms = " ".join(f"{p.result * p.worth:+d}" for p in pair.piles)
    text = f"({terms}) = {signed(pair.base)}"
    if pair.scoop:
        text += f", scoop ×{pair.scoop} by {pair.scooper} (R6.2)"
    if pair.home_run:
        text += f", home run ×{pair.home_run} by {pair.scooper} (R6.7)"
    if pair.scoop or pair.home_run:
        text += f" = {signed(pair.points)}"
    return text


def settlement_note(view: PlayerView) -> str:
    """Why settled coins differ from the gross result (R9.1 cap, R9.2 scaling)."""
    if view.gross is None or view.coins is None or view.gross == view.coins:
        return ""
    if view.gross < 0:
        return f"capped at the balance at the deal, {view.balance_at_deal} (R9.1)"
    return "scaled down: the losers could not pay in full (R9.2)"


def _pile_sentence(pair: PairView, pile: PileOutcome, me: str) -> str:
    other = pair.other(me)
    result = pile.result if me == pair.a else -pile.result
    mine, theirs = (pile.a_words, pile.b_words) if me == pair.a else (pile.b_words, pile.a_words)
    points = signed(result * pile.worth)
    if pair.kind == "foul":
        if result > 0:
            return f"Your {pile.name} ({mine}) wins against {other}'s foul hand: {points}"
        return f"{other}'s {pile.name} ({theirs}) wins against your foul hand: {points}"
    if result > 0:
        return f"Your {pile.name} ({mine}) beat {other}'s {pile.name} ({theirs}): {points}"
    if result < 0:
        return f"Your {pile.name} ({mine}) lost to {other}'s {pile.name} ({theirs}): {points}"
    return f"Your {pile.name} ({mine}) tied {other}'s {pile.name} ({theirs}): 0"


def _special_sentence(report: Report, pair: PairView, me: str) -> str:
    other = pair.other(me)
    mine, theirs = report.player(me), report.player(other)
    points = signed(pair.points_for(me))
    if mine.special and theirs.special:
        if mine.special is theirs.special:
            return f"You and {other} both hold {mine.special.id}: a tie, 0 (R6.6)"
        if pair.points_for(me) > 0:
            return (
                f"Your {mine.special.id} ({mine.special.chinese}) outranks {other}'s "
                f"{theirs.special.id}: you score your special's points, {points} (R6.6)"
            )
        return (
            f"{other}'s {theirs.special.id} ({theirs.special.chinese}) outranks your "
            f"{mine.special.id}: {other} scores its points, {points} (R6.6)"
        )
    if mine.special:
        return (
            f"Your special hand {mine.special.id} ({mine.special.chinese}) beats {other}'s "
            f"hand for its fixed {mine.special_points} points, no multiplier: {points} (R6.5)"
        )
    assert theirs.special is not None
    return (
        f"{other}'s special hand {theirs.special.id} ({theirs.special.chinese}) beats any "
        f"arranged hand for its fixed {theirs.special_points} points, no multiplier: "
        f"{points} (R6.5)"
    )


def pair_sentences(report: Report, pair: PairView, me: str) -> list[str]:
    """The pair told to ``me``: a sentence per pile, the multipliers, the points."""
    other = pair.other(me)
    points = pair.points_for(me)
    if pair.kind == "special":
        return [_special_sentence(report, pair, me)]
    if pair.kind == "both_foul":
        return [f"You and {other} are both foul: no points (R6.4)"]
    lines = []
    if pair.kind == "foul":
        if points > 0:
            reason = report.player(other).foul_reason
            lines.append(f"{other} is foul ({reason}), so you win all three piles (R6.3)")
        else:
            reason = report.player(me).foul_reason
            lines.append(f"You are foul ({reason}), so {other} wins all three piles (R6.3)")
    lines += [_pile_sentence(pair, pile, me) for pile in pair.piles]
    base = pair.base if me == pair.a else -pair.base
    total = f"Result against {other}: {signed(points)} = piles {signed(base)}"
    if pair.scoop:
        who = f"you scoop {other}" if pair.scooper == me else f"{other} scoops you"
        total += f" × {pair.scoop} ({who}, R6.2)"
    if pair.home_run:
        who = "your" if pair.scooper == me else f"{other}'s"
        total += f" × {pair.home_run} ({who} home run, R6.7)"
    lines.append(total)
    return lines


def _reason(report: Report, pair: PairView, me: str) -> str:
    other = pair.other(me)
    if pair.kind == "special":
        if pair.points == 0:
            return "the same special hand"
        winner = me if pair.points_for(me) > 0 else other  # always the stronger special
        special = report.player(winner).special
        assert special is not None
        return f"{'your' if winner == me else other + chr(39) + 's'} special hand {special.id}"
    if pair.kind == "both_foul":
        return "both foul"
    if pair.kind == "foul":
        return f"{'you' if pair.points_for(me) < 0 else other} fouled, scoop ×{pair.scoop}"
    won = sum(1 for p in pair.piles if (p.result if me == pair.a else -p.result) > 0)
    lost = sum(1 for p in pair.piles if (p.result if me == pair.a else -p.result) < 0)
    text = f"{won} pile(s) won, {lost} lost, {3 - won - lost} tied"
    if pair.scoop:
        text += f", {'you scoop' if pair.scooper == me else 'scooped'} ×{pair.scoop}"
    if pair.home_run:
        text += f", home run ×{pair.home_run}"
    return text


def overall_sentence(report: Report, me: str) -> str:
    """Why ``me`` won or lost the round, pair by pair."""
    view = report.player(me)
    if view.escaped:
        paid = -view.escape_coins
        return (
            f"You escaped between the deal and the showdown and paid {paid} coins "
            "(R11.1); you took no part in the showdown."
        )
    if not report.over:
        return "The round is not over yet: there is nothing to explain before the showdown."
    if view.points is None:
        return "The round ended without a showdown (R11.3): no points were scored."
    parts = []
    for pair in report.pairs_for(me):
        if me not in (pair.a, pair.b):
            continue
        points = pair.points_for(me)
        direction = "from" if points >= 0 else "to"
        parts.append(f"{signed(points)} {direction} {pair.other(me)} ({_reason(report, pair, me)})")
    verdict = "won" if view.points > 0 else "lost" if view.points < 0 else "broke even with"
    coins = f"{signed(view.coins or 0)} coins after settlement"
    return f"You {verdict} {abs(view.points)} points ({coins}): " + "; ".join(parts) + "."


# --- text -------------------------------------------------------------------------------------


def _player_lines(view: PlayerView, width: int) -> list[str]:
    name = view.player_id.ljust(width)
    pad = " " * (width + 2)
    lines = [f"  {name}  seat {view.seat}, balance at the deal {view.balance_at_deal}: "]
    lines[0] += view.status
    if view.cards is None:
        return lines
    lines.append(f"  {pad}dealt   {symbols(view.cards)}")
    pile_width = max((len(symbols(p.cards)) for p in view.piles), default=0)
    for pile in view.piles:
        words = f"  {pile.words}" if pile.words else ""
        lines.append(f"  {pad}{pile.name:<7} {symbols(pile.cards):<{pile_width}}{words}")
    if view.special is not None:
        how = "the split that shows it (R5.5)" if view.piles else "no split needed"
        lines.append(
            f"  {pad}declared {view.declared!r}: {view.special.id} ({view.special.chinese}), "
            f"{view.special_points} points; {how}"
        )
    if view.escaped:
        lines.append(f"  {pad}took no part in the showdown (R11.3)")
    return [line.rstrip() for line in lines]


def _pair_lines(pair: PairView) -> list[str]:
    lead = (
        f"{pair.a} {signed(pair.points)}"
        if pair.points > 0
        else f"{pair.b} {signed(-pair.points)}"
        if pair.points < 0
        else "even"
    )
    lines = [f"  {pair.a} vs {pair.b}: {lead}"]
    lines += [f"      {clause}" for clause in pair.clauses]
    if pair.piles:
        lines.append(
            f"    piles for {pair.a}: "
            + ", ".join(f"{p.name} {signed(p.result * p.worth)}" for p in pair.piles)
        )
    lines.append(f"    multipliers: {multiplier_words(pair)}")
    lines.append(f"    points: {pair.a} {signed(pair.points)}, {pair.b} {signed(-pair.points)}")
    return lines


def _coin_lines(report: Report) -> list[str]:
    width = max(6, *(len(p.player_id) for p in report.players))
    head = (
        f"  {'player':<{width}}  {'points':>6}  {'gross':>7}  {'at deal':>8}  "
        f"{'settled':>7}  {'escape':>6}  {'after':>7}"
    )
    lines = [head]
    notes = []
    for view in report.players:
        points = signed(view.points) if view.points is not None else "-"
        gross_ = signed(view.gross) if view.gross is not None else "-"
        settled = signed(view.coins) if view.coins is not None else "-"
        lines.append(
            f"  {view.player_id:<{width}}  {points:>6}  {gross_:>7}  {view.balance_at_deal:>8}  "
            f"{settled:>7}  {signed(view.escape_coins):>6}  {view.balance_after:>7}"
        )
        note = settlement_note(view)
        if note:
            notes.append(f"  {view.player_id}: gross {view.gross}, settled {view.coins}: {note}")
    return lines + notes


def proof_lines(report: Report) -> list[str]:
    proof = report.proof
    lines = [
        f"commitment published before the deal: {proof.commitment}",
        f"  {proof.published}",
        f"client seed {proof.client_seed!r}, round id {report.round_id}",
    ]
    if proof.server_seed is None:
        lines.append(
            "server seed: not revealed yet; it is published when the round ends (R12.6), "
            "and then anyone can check it against the commitment"
        )
        return lines
    verdict = "yes, verified" if proof.seed_ok else "NO: the seed does not match"
    lines.append(f"server seed revealed {proof.server_seed}")
    lines.append(f"SHA-256(server seed) equals the commitment: {verdict}")
    dealt = "yes, verified" if proof.deal_ok else "NO: the recorded hands differ"
    lines.append(
        f"the deal recomputed from the seeds (R12.3–R12.5, {proof.players} players) "
        f"equals the recorded hands: {dealt}"
    )
    return lines


def render_text(report: Report, player: str | None = None) -> str:
    """The dispute report for people; from ``player``'s point of view when given."""
    out = [f"Dispute report for round {report.round_id}"]
    out.append(
        f"  table {report.table_id}, round {report.number} of the table, dealt "
        f"{report.dealt_at.isoformat()}, deadline {report.deadline.isoformat()}"
    )
    out.append(f"  {phase_words(report)}")
    out.append(f"  base stake {report.base_stake} coin(s) per point (R8.3)")
    out.append(f"  ruleset {report.ruleset.name}:")
    out += [f"    {line}" for line in ruleset_lines(report.ruleset)]
    out += [f"  NOTE: {note}" for note in report.notes]
    if player is not None:
        out.append("")
        out.append(f"From {player}'s point of view")
        out.append(f"  {overall_sentence(report, player)}")
        for pair in report.pairs_for(player):
            if player not in (pair.a, pair.b):
                continue
            out.append(f"  against {pair.other(player)}:")
            out += [f"    {line}" for line in pair_sentences(report, pair, player)]
    out.append("")
    out.append("Players (front | middle | back)" if report.over else "Players")
    width = max(len(p.player_id) for p in report.players)
    for view in report.players:
        out += _player_lines(view, width)
    escapes = [p for p in report.players if p.escaped]
    if escapes:
        out.append("")
        out.append("Escapes (R11)")
        for view in escapes:
            shares = ", ".join(
                f"{p.player_id} {signed(p.escape_coins)}" for p in report.players if p.escape_coins
            )
            out.append(f"  {view.player_id} left between the deal and the showdown: {shares}")
    if report.pairs:
        out.append("")
        out.append("Comparisons (R6)")
        for pair in report.pairs_for(player):
            out += _pair_lines(pair)
    if report.over:
        out.append("")
        out.append(
            f"Coins (R7, R9): gross = points × base {report.base_stake}; settled against the "
            "balances at the deal"
        )
        out += _coin_lines(report)
    out.append("")
    out.append("Fairness proof (R12)")
    out += [f"  {line}" for line in proof_lines(report)]
    return "\n".join(out) + "\n"
