"""``thirteen explain``: a round's dispute report for people ("my hand was better").

Everything comes from the round's own events, rebuilt as the service rebuilds them, and from the
domain's own judgement: the result and every pile of every pair as the reveal recorded them
(``Round.revealed_outcome``), the fairness proof (``domain.fairness.proof``) and what an observer
may see (``domain.visibility``). This module builds the report (``dispute`` holds it as data);
``words`` and ``html`` word it. Nothing here scores again (only the audit does, and compares).
Until a round is over (R10.4) the report holds only what is public — who sits where, who has
submitted, escapes and the commitment — and never a card.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from domain import visibility
from domain.fairness.proof import prove
from domain.fairness.shuffle import effective_client_seed
from domain.ids import table_uuid
from domain.results import PlayerResult, round_result
from domain.round import Round
from domain.rules.arrangement import PILE_NAMES
from domain.rules.cards import by_strength, format_cards, parse_cards
from domain.rules.hands import Wheel, describe, value3, value5
from domain.rules.ruleset import Ruleset
from domain.rules.scoring import PairScore
from domain.rules.settlement import gross
from domain.rules.specials import Special
from domain.table import Table
from service.application import Thirteen
from service.caller import UNKNOWN, recorded
from service.evidence import Decoder, record_of
from service.report.dispute import PairView, Pile, PileOutcome, PlayerView, Proof, Report
from service.report.replay import fold, round_events, undealt_cards


def load(app: Thirteen, round_id: str) -> Report:
    """The report of a stored round; raises ``NotFound`` for an unknown round."""
    events = [event for _, event in round_events(app, round_id)]
    round_ = fold(events)
    return with_callers(build(round_, _publication(app, round_)), events)


def with_callers(report: Report, events: Sequence[Any]) -> Report:
    """``report`` with who caused each of the round's ``events`` (decoded, in order); unchanged
    for a round stored before callers were recorded."""
    callers = tuple((_deed(e), recorded(e)) for e in events)
    if all(who == UNKNOWN for _, who in callers):
        return report
    return replace(report, callers=callers)


def _deed(event: Any) -> str:
    """What an event of the round records, in words (``callers``)."""
    kind = type(event).__name__
    player = getattr(event, "player_id", None)
    words = {
        "Dealt": "dealt",
        "Arranged": f"arranged for {player}",
        "SpecialDeclared": f"declared a special for {player}",
        "PlayerEscaped": f"{player} escaped",
        "Revealed": "revealed",
        "Abandoned": "abandoned",
    }
    return words.get(kind, kind)


def _publication(app: Thirteen, round_: Round) -> str:
    """Where the table published the round's commitment, before the deal (R12.1). The table's
    events of a table opened by the first versions also hold its unrevealed next seed in clear:
    only the commitment and time are read here."""
    decoder = Decoder()
    stored = app.recorder.select_events(table_uuid(round_.table_id))
    found = published_in((decoder.event(record_of(0, s)) for s in stored), round_)
    return found or "NOT FOUND among the table's published commitments"


def published_in(table_events: Iterable[Any], round_: Round) -> str | None:
    """When and where one of the table's ``table_events`` (decoded) published the round's
    commitment, and whether that was before the deal (R12.1); None when none of them did."""
    for event in table_events:
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
    return None


def _grouped(cards: Sequence[str], ruleset: Ruleset) -> tuple[str, ...]:
    """A pile for reading: sets first (trips, pairs), then high to low; copies of a card
    (R14.2.3) each shown."""
    parsed = parse_cards(cards, copies=ruleset.copies)
    counts = Counter(c.rank for c in parsed)
    ordered = sorted(parsed, key=lambda c: (counts[c.rank], c.rank, c.suit), reverse=True)
    return tuple(format_cards(ordered))


def _piles(
    front: Sequence[str],
    middle: Sequence[str],
    back: Sequence[str],
    ruleset: Ruleset,
    words: bool,
) -> tuple[Pile, ...]:
    if not front:
        return ()
    wheel: Wheel = ruleset.pile_order
    copies = ruleset.copies  # R14.2.3: a pile may hold two copies of a card
    values = (
        value3(parse_cards(front, copies=copies)),
        value5(parse_cards(middle, copies=copies), wheel),
        value5(parse_cards(back, copies=copies), wheel),
    )
    return tuple(
        Pile(name, _grouped(cards, ruleset), describe(value) if words else "")
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
    common["horse"] = ruleset.holds_horse(round_.hand(player))  # R14.1.2
    if result is not None:  # a player at the showdown
        special = Special.from_id(result.special) if result.special else None
        return PlayerView(
            cards=cards,
            piles=_piles(result.front, result.middle, result.back, ruleset, not special),
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
            ruleset,
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
        "horse": ruleset.horse_factor(a.horse, b.horse),  # R14.1.3
        "horse_holders": tuple(v.player_id for v in (a, b) if v.horse),
        "scoop_bonus": ruleset.scoop_bonus,
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
    outcome = round_.revealed_outcome()
    if outcome is not None:
        results = {p.player_id: p for p in round_result(round_, outcome).players}
        pairs = outcome.score.pairs
    views = {
        p: _player(round_, seat, p, results.get(p), shown) for seat, p in enumerate(round_.players)
    }
    pair_views = tuple(_pair(round_, p, views) for p in pairs)
    return Report(
        round_id=round_.round_id,
        table_id=round_.table_id,
        number=round_.number,
        phase=round_.phase,
        dealt_at=round_.dealt_at,
        deadline=round_.deadline,
        ended_at=round_.ended_at,
        base_stake=round_.base_stake,
        ruleset=round_.ruleset,
        players=tuple(views.values()),
        pairs=pair_views,
        proof=_proof(round_, published),
        notes=_notes(pair_views),
        undealt=undealt_cards(round_) if visibility.shows_undealt(round_) else (),
    )


def _notes(pairs: Iterable[PairView]) -> tuple[str, ...]:
    """Where a pair's piles and multipliers do not give the points its showdown recorded."""
    notes = []
    for view in pairs:
        if view.kind in ("normal", "foul"):
            expected = view.expected
            if expected != view.points:
                notes.append(
                    f"{view.a} vs {view.b}: the piles and multipliers give {expected:+d}, "
                    f"the showdown {view.points:+d}"
                )
    return tuple(notes)


def _proof(round_: Round, published: str) -> Proof:
    """R12: the commitment and seeds, and once the seed is revealed whether it matches the
    commitment and deals the recorded hands (``domain.fairness.proof`` judges)."""
    seed = round_.server_seed
    seed_ok = deal_ok = None
    seats = round_.seat_seeds  # R12.8
    if seed is not None:
        hands = [round_.hands[p] for p in round_.players]
        ruleset = round_.ruleset  # R14.2.4: the deck of N cards, up to max_players
        fair = prove(
            seed,
            round_.commitment,
            round_.client_seed,
            round_.round_id,
            hands,
            seats,
            ruleset.deck,
            ruleset.max_players,
        )
        seed_ok, deal_ok = fair.seed_matches, fair.hands_match
    return Proof(
        round_.commitment,
        published,
        round_.client_seed,
        seed,
        seed_ok,
        deal_ok,
        len(round_.players),
        tuple((p, s) for p, s in seats if s),
        effective_client_seed(round_.client_seed, seats),
    )
