"""The audit of a round's events after its deal: each submission and escape (R4, R5, R10.2,
R11), the reveal (R10.3, R6, R9) and the result against the wallets and the views."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from domain.audit.evidence import RoundEvidence
from domain.audit.report import Report
from domain.errors import RuleError
from domain.recorded import Outcome, record
from domain.results import round_result
from domain.round import Round
from domain.rules.arrangement import Arrangement
from domain.rules.cards import Card, parse_cards
from domain.rules.play import declare
from domain.rules.specials import ANY, Split

Cards = tuple[Sequence[Card], list[tuple[Card, ...]]]
"""A player's dealt hand, and the piles their submission gives."""
Check = Callable[[str, bool, str, str], bool]
"""``Report.check`` for one event: rule, whether it passed, what to say if so, and if not."""


def verify_submission(round_: Round, event: Any, where: str, report: Report) -> None:
    if not isinstance(event, Round.Arranged | Round.SpecialDeclared | Round.PlayerEscaped):
        return
    player = event.player_id
    report.check(
        "R10.1",
        player in round_.active,
        f"{player} was an active player of the round",
        f"{player} was not an active player when this was recorded",
        where,
    )
    if isinstance(event, Round.PlayerEscaped):
        _verify_escape(round_, event, where, report)
        return
    report.check(
        "R10.2",
        event.at < round_.deadline,
        f"{player}'s submission came before the deadline",
        f"{player}'s submission at {event.at.isoformat()} came after the deadline "
        f"{round_.deadline.isoformat()}",
        where,
    )
    copies = round_.ruleset.copies  # R14.2.3: a card as often as the deck holds it
    try:
        hand = round_.hand(player) if player in round_.hands else ()
        piles = [parse_cards(p, copies=copies) for p in (event.front, event.middle, event.back)]
    except RuleError:  # a hand or pile no deal gives (R14.2.3 names the hand's)
        hand, piles = (), [(), (), ()]
    verify = _verify_arrangement if isinstance(event, Round.Arranged) else _verify_declaration
    verify(round_, event, (hand, piles), functools.partial(report.check, event=where))


def _verify_escape(round_: Round, event: Any, where: str, report: Report) -> None:
    player = event.player_id
    try:
        expected = round_.escape_coins(player)
    except (KeyError, ValueError):
        expected = {}
    report.check(
        "R11",
        dict(event.transfers) == expected,
        f"{player}'s escape penalty and its shares follow R11",
        f"{player}'s escape moved {dict(event.transfers)}, R11 gives {expected}",
        where,
    )
    report.check(
        "R7.2",
        sum(event.transfers.values()) == 0,
        "the escape penalty sums to zero",
        "the escape penalty does not sum to zero",
        where,
    )


def _verify_arrangement(round_: Round, event: Any, cards: Cards, check: Check) -> None:
    player, (hand, piles) = event.player_id, cards
    try:
        arrangement = Arrangement.of(*piles, dealt=hand)
        uses = sorted(arrangement.cards) == sorted(hand)
    except RuleError:
        uses = False
    check(
        "R4.1",
        uses,
        f"{player}'s arrangement uses exactly their 13 cards",
        f"{player}'s arrangement does not use exactly the cards dealt to them",
    )
    if uses:
        reason = arrangement.foul_reason(round_.ruleset.pile_order)
        check(
            "R4.2",
            reason == event.foul_reason,
            f"{player}'s arrangement is rightly recorded as {'a foul' if reason else 'not a foul'}",
            f"{player}'s foul is recorded as {event.foul_reason!r}, the rules say {reason!r}",
        )


def _verify_declaration(round_: Round, event: Any, cards: Cards, check: Check) -> None:
    player, (hand, piles) = event.player_id, cards
    split = Split(*piles) if piles[0] else None
    try:
        play = declare(hand, event.declared, round_.ruleset, split)
        ok = play.special is not None and play.special.id == event.special
        found = play.special.id if play.special else "nothing"
        if not ok and event.declared == ANY and round_.ruleset.special_order == "points":
            # R14.5.3: R14's first release took R5.2's first for ``any`` under points too;
            # the declarations it recorded stand (stored events are forever)
            first = declare(hand, ANY, replace(round_.ruleset, special_order="table"), split)
            ok = first.special is not None and first.special.id == event.special
    except RuleError as error:
        ok, found = False, error.message
    check(
        "R5",
        ok,
        f"{player}'s declared {event.special} qualifies",
        f"{player}'s declaration of {event.special} does not stand: {found}",
    )


def verify_reveal(round_: Round, event: Any, where: str, report: Report) -> Outcome:
    allowed = event.at >= round_.deadline or not round_.not_ready()
    report.check(
        "R10.3",
        allowed,
        "the reveal came after the deadline or once every active player was ready",
        "the round was revealed before its deadline while "
        f"{', '.join(round_.not_ready())} had no non-foul arrangement",
        where,
    )
    outcome = round_.outcome()  # the submissions and balances the reveal itself had
    points = {s.player_id: s.points for s in outcome.score.players}
    report.check(
        "R6",
        dict(event.points) == points,
        "the recorded points equal the showdown scored again",
        f"the recorded points {dict(event.points)} differ from the showdown scored again {points}",
        where,
    )
    if event.result is not None:  # class version 2 records the showdown itself
        report.check(
            "R6",
            event.result == record(outcome.score),
            "the recorded showdown (every pair's piles, their worth and words) equals the "
            "showdown scored again",
            "the recorded showdown differs from the showdown scored again",
            where,
        )
    report.check(
        "R9",
        dict(event.coins) == outcome.coins,
        "the recorded settlement equals the settlement computed again",
        f"the recorded settlement {dict(event.coins)} differs from {outcome.coins}",
        where,
    )
    report.check(
        "R7.2",
        sum(event.coins.values()) == 0,
        "the settlement sums to zero",
        "the settlement does not sum to zero",
        where,
    )
    return outcome


def verify_results(
    round_: Round, outcome: Outcome | None, evidence: RoundEvidence, report: Report
) -> None:
    """R9 against the wallets and the results view; also catches a round whose own record
    lost its end while the wallets or the table still show it."""
    expected: dict[str, list[tuple[str, int]]] = {p: [] for p in round_.players}
    for player, transfers in round_.escaped.items():
        for other, amount in transfers.items():
            kind = "escape_penalty" if other == player else "escape_share"
            expected[other].append((kind, amount))
    for player, coins in round_.coins.items():
        expected[player].append(("settlement", coins))
    if evidence.wallet_moves or round_.escaped or round_.coins:
        moved = {p: sorted(m) for p, m in evidence.wallet_moves.items() if m}
        wanted = {p: sorted(m) for p, m in expected.items() if m}
        report.check(
            "R9",
            moved == wanted,
            "the wallets moved exactly the recorded settlement and escape coins",
            f"the wallets moved {moved} for this round, its record accounts for {wanted}",
        )
    if evidence.table_ended is not None:
        report.check(
            "R10.3",
            evidence.table_ended == round_.ended,
            "the table and the round agree on whether the round is over",
            "the table records the end of this round but the round's record does not"
            if evidence.table_ended
            else "the round's record ends the round but the table never recorded its end",
        )
    if evidence.view is not None and round_.revealed:
        report.check(
            "R6",
            evidence.view == round_result(round_, outcome),
            "the results view equals the result recomputed from the events",
            "the results view differs from the result recomputed from the events",
        )
