"""The audit of a deal (R8.3, R8.4, R12, R12.8, R13, R14.1.6, R14.2.3): the ruleset and its horse
card, the base stake, the players' seeds, no card dealt more often than the deck holds it, and the
hands recomputed from the seeds once they are revealed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from domain.audit.evidence import RoundEvidence
from domain.audit.report import Report
from domain.errors import RuleError
from domain.fairness.proof import Proof, prove
from domain.fairness.shuffle import check_player_seeds, in_seat_order
from domain.round import Round
from domain.rules.parameters import NO_HORSE
from domain.rules.ruleset import Ruleset
from domain.rules.stakes import round_base


class Proofs:
    """The fairness proof (``domain.fairness.proof``) of the deal for each revealed seed, once."""

    def __init__(self, dealt: Round.Dealt) -> None:
        self.dealt = dealt
        self._found: dict[str, Proof] = {}

    def of(self, server_seed: str) -> Proof:
        if server_seed not in self._found:
            dealt = self.dealt
            hands = [dealt.hands.get(p, []) for p in dealt.players]
            rules = Ruleset.from_dict(dealt.ruleset)  # R14.2.4: the deck of the table's ruleset
            self._found[server_seed] = prove(
                server_seed,
                dealt.commitment,
                dealt.client_seed,
                dealt.round_id,
                hands,
                in_seat_order(dealt.players, dealt.player_seeds),
                deck=rules.deck,
                max_players=rules.max_players,
            )
        return self._found[server_seed]


def verify_deal(
    dealt: Round.Dealt, evidence: RoundEvidence, proofs: Proofs, report: Report, where: str = ""
) -> None:
    report.check(
        "R13",
        dict(dealt.ruleset) == dict(evidence.table_ruleset),
        "the deal records the table's ruleset in full",
        "the ruleset recorded at the deal differs from the table's",
    )
    rules = Ruleset.from_dict(dealt.ruleset)
    _verify_horse(dealt, evidence, report, where)
    _verify_copies(dealt, rules, report, where)
    try:
        base = round_base(dealt.balances, rules)
        report.check(
            "R8.3",
            base == dealt.base_stake,
            f"the base stake {dealt.base_stake} follows from the balances at the deal",
            f"the base stake should be {base}, the record says {dealt.base_stake}",
        )
    except RuleError as error:
        report.check("R8.4", False, "", f"the deal should have been refused: {error.message}")
    if dealt.player_seeds:
        _verify_player_seeds(dealt, report)
    seed = _published_seed(evidence.events)
    if seed is None:
        return
    if dealt.player_seeds:  # R12.8: the deal mixed them into the client seed
        report.check(
            "R12.8",
            proofs.of(seed).hands_match,
            "the hands recomputed from the server seed, the client seed with the recorded "
            "player seeds mixed in and the round id equal the recorded hands",
            "the recorded hands differ from the deal recomputed from the server seed, the "
            "client seed with the recorded player seeds mixed in and the round id",
        )
        return
    report.check(
        "R12",
        proofs.of(seed).hands_match,
        "the hands recomputed from the server seed, the client seed and the round id "
        "equal the recorded hands",
        "the recorded hands differ from the deal recomputed from the seeds",
    )


def _verify_horse(dealt: Round.Dealt, evidence: RoundEvidence, report: Report, where: str) -> None:
    """R14.1.6: the horse card is public from the moment the table opens, so the deal plays the
    one the table published (a round's ruleset records it only when there is one, R14.1.1)."""
    horse = dealt.ruleset.get("horse_card", NO_HORSE)
    published = evidence.table_ruleset.get("horse_card", NO_HORSE)
    if horse == NO_HORSE and published == NO_HORSE:
        return
    report.check(
        "R14.1.6",
        horse == published,
        f"the deal plays the horse card {horse} the table published when it opened",
        f"the deal plays the horse card {horse}, the table published {published}",
        where,
    )


def _verify_copies(dealt: Round.Dealt, rules: Ruleset, report: Report, where: str) -> None:
    """R14.2.3 (R1.1 with one deck): the hands dealt hold each card at most as often as the
    ruleset's deck does, and only cards of that deck; checked from the record alone, so also
    while the seed is secret."""
    copies = {str(card): n for card, n in rules.copies.items()}
    held = Counter(card for player in dealt.players for card in dealt.hands.get(player, []))
    beyond = sorted(card for card, n in held.items() if n > copies.get(card, 0))
    deck = f"the deck of {len(rules.deck)} cards"
    report.check(
        "R14.2.3",
        not beyond,
        f"the hands hold no card more often than {deck} does",
        f"the hands hold {', '.join(f'{c} {held[c]} times' for c in beyond[:4])}, more often "
        f"than {deck} does",
        where,
    )


def _verify_player_seeds(dealt: Round.Dealt, report: Report) -> None:
    """R12.8: only players dealt in gave seeds, each a valid one (a seed recorded for anyone
    else would change nothing in the deal, so the recomputed hands cannot show it)."""
    try:
        check_player_seeds(dealt.player_seeds, dealt.players)
    except RuleError as error:
        report.check("R12.8", False, "", f"the deal records invalid player seeds: {error.message}")
        return
    report.check(
        "R12.8",
        True,
        f"the deal records the seeds of {', '.join(dealt.player_seeds)}, each a valid seed "
        "of a player dealt in",
        "",
    )


def _published_seed(events: Sequence[Any]) -> str | None:
    for event in events:
        if isinstance(event, Round.Revealed | Round.Abandoned):
            return str(event.server_seed)
    return None
